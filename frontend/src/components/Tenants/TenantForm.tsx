// Create / edit one tenant; field errors from the API appear next to their fields.
import { useState, type FormEvent } from "react";
import { Button, Group, NumberInput, Stack, TextInput, Textarea } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, ApiProblem, unwrap, type Schemas } from "../../api/client";
import { ProblemAlert } from "../common/QueryView";

type Tenant = Schemas["TenantPublic"];

export function TenantForm({ tenant, onDone }: { tenant?: Tenant; onDone: () => void }) {
  const qc = useQueryClient();
  const [name, setName] = useState(tenant?.name ?? "");
  const [vni, setVni] = useState<number | string>(tenant?.vni ?? "");
  const [vlan, setVlan] = useState<number | string>(tenant?.vlan ?? "");
  const [uePool, setUePool] = useState(tenant?.ue_pool ?? "");
  const [contact, setContact] = useState(tenant?.contact ?? "");
  const [description, setDescription] = useState(tenant?.description ?? "");

  const save = useMutation({
    mutationFn: () => {
      const body = {
        name,
        vni: Number(vni),
        vlan: vlan === "" ? null : Number(vlan),
        ue_pool: uePool || null,
        contact: contact || null,
        description,
      };
      return tenant
        ? unwrap(api.PATCH("/api/v1/tenants/{tenant_id}", {
            params: { path: { tenant_id: tenant.id } },
            body: { ...body, version: tenant.version },
          }))
        : unwrap(api.POST("/api/v1/tenants", { body }));
    },
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ["tenants"] });
      onDone();
    },
  });
  const problem = save.error instanceof ApiProblem ? save.error : null;
  const err = (f: string) => problem?.fieldMessage(f);

  function submit(e: FormEvent) {
    e.preventDefault();
    save.mutate();
  }

  return (
    <form onSubmit={submit} aria-label={tenant ? "Edit tenant" : "New tenant"}>
      <Stack>
        {save.isError && <ProblemAlert error={save.error} />}
        <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={err("name")} />
        <Group grow>
          <NumberInput label="VXLAN VNI" required min={1} max={16777215} value={vni} onChange={setVni} error={err("vni")} />
          <NumberInput label="VLAN ID" min={1} max={4094} value={vlan} onChange={setVlan} error={err("vlan")} />
        </Group>
        <TextInput label="UE address pool" placeholder="10.47.0.0/16" value={uePool}
          onChange={(e) => setUePool(e.currentTarget.value)} error={err("ue_pool")} />
        <TextInput label="Contact" value={contact} onChange={(e) => setContact(e.currentTarget.value)} error={err("contact")} />
        <Textarea label="Description" value={description} onChange={(e) => setDescription(e.currentTarget.value)}
          error={err("description")} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onDone}>Cancel</Button>
          <Button type="submit" loading={save.isPending}>{tenant ? "Save" : "Create tenant"}</Button>
        </Group>
      </Stack>
    </form>
  );
}
