// Create / edit one tenant. Values are checked as typed (never clamped) and the API's field
// errors appear next to the field that caused them, in words rather than database text.
import { useState, type FormEvent } from "react";
import { Button, Group, NumberInput, Stack, TextInput, Textarea } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, ApiProblem, unwrap, type Schemas } from "../../api/client";
import { mapProblem } from "../common/fieldErrors";
import { NO_CLAMP, rangeError } from "../common/numberRange";
import { ProblemAlert } from "../common/QueryView";

type Tenant = Schemas["TenantPublic"];

const FIELDS = ["name", "vni", "vlan", "ue_pool", "contact", "description"] as const;
export const VNI_MAX = 16777215; // 24-bit VXLAN network identifier
export const VLAN_MAX = 4094; // 12-bit VLAN id; 0 and 4095 are reserved

export function TenantForm({ tenant, onDone }: { tenant?: Tenant; onDone: () => void }) {
  const qc = useQueryClient();
  const [name, setName] = useState(tenant?.name ?? "");
  const [vni, setVni] = useState<number | string>(tenant?.vni ?? "");
  const [vlan, setVlan] = useState<number | string>(tenant?.vlan ?? "");
  const [uePool, setUePool] = useState(tenant?.ue_pool ?? "");
  const [contact, setContact] = useState(tenant?.contact ?? "");
  const [description, setDescription] = useState(tenant?.description ?? "");
  const [submitted, setSubmitted] = useState(false);

  // Checks the browser can make before asking the API (the API re-checks everything). A value
  // out of range is reported while typing; a missing one only once the user tries to save.
  const local: Partial<Record<(typeof FIELDS)[number], string>> = {
    name: name.trim() === "" ? "Name cannot be blank." : undefined,
    vni: rangeError("VXLAN VNI", vni, 1, VNI_MAX, { required: submitted }),
    vlan: rangeError("VLAN ID", vlan, 1, VLAN_MAX),
  };
  const blocking = { ...local, vni: rangeError("VXLAN VNI", vni, 1, VNI_MAX, { required: true }) };
  const invalid = Object.values(blocking).some(Boolean);

  const save = useMutation({
    mutationFn: () => {
      const body = {
        name: name.trim(),
        vni: Number(vni),
        vlan: vlan === "" ? null : Number(vlan),
        ue_pool: uePool.trim() || null,
        contact: contact.trim() || null,
        description,
      };
      return tenant
        ? unwrap(
            api.PATCH("/api/v1/tenants/{tenant_id}", {
              params: { path: { tenant_id: tenant.id } },
              body: { ...body, version: tenant.version },
            }),
          )
        : unwrap(api.POST("/api/v1/tenants", { body }));
    },
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ["tenants"] });
      onDone();
    },
  });
  const problem = save.error instanceof ApiProblem ? save.error : null;
  const remote = mapProblem(problem, FIELDS).byField;
  const err = (f: (typeof FIELDS)[number]) => (f === "name" && !submitted ? undefined : local[f]) ?? remote[f];

  function submit(e: FormEvent) {
    e.preventDefault();
    setSubmitted(true);
    if (!invalid) save.mutate();
  }

  return (
    <form onSubmit={submit} aria-label={tenant ? "Edit tenant" : "New tenant"} noValidate>
      <Stack>
        {save.isError && <ProblemAlert error={save.error} shownOnFields={FIELDS} />}
        <TextInput
          label="Name"
          required
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
          error={err("name")}
        />
        <Group grow align="start">
          <NumberInput
            label="VXLAN VNI"
            required
            description={`1 – ${VNI_MAX}`}
            {...NO_CLAMP}
            value={vni}
            onChange={setVni}
            error={err("vni")}
          />
          <NumberInput
            label="VLAN ID"
            description={`1 – ${VLAN_MAX}, optional`}
            {...NO_CLAMP}
            value={vlan}
            onChange={setVlan}
            error={err("vlan")}
          />
        </Group>
        <TextInput
          label="UE address pool"
          placeholder="10.47.0.0/16"
          value={uePool}
          onChange={(e) => setUePool(e.currentTarget.value)}
          error={err("ue_pool")}
        />
        <TextInput
          label="Contact"
          value={contact}
          onChange={(e) => setContact(e.currentTarget.value)}
          error={err("contact")}
        />
        <Textarea
          label="Description"
          value={description}
          onChange={(e) => setDescription(e.currentTarget.value)}
          error={err("description")}
        />
        <Group justify="flex-end">
          <Button variant="default" onClick={onDone}>
            Cancel
          </Button>
          <Button type="submit" loading={save.isPending}>
            {tenant ? "Save" : "Create tenant"}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
