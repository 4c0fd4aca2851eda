// Add or edit one subscriber. TEIDs are typed as a list and checked as typed; the API's field
// errors (duplicate IMSI, address outside the tenant's pool …) appear on their fields.
import { useState, type FormEvent } from "react";
import { Button, Group, MultiSelect, Select, Stack, TextInput } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, ApiProblem, unwrap, type Schemas } from "../../api/client";
import { mapProblem } from "../common/fieldErrors";
import { ProblemAlert } from "../common/QueryView";
import { useNames } from "./lookups";

type Subscriber = Schemas["SubscriberPublic"];
const FIELDS = ["tenant_id", "imsi", "ue_ip", "teids", "slice_ids"] as const;
export const TEID_MAX = 4294967295; // 32-bit GTP-U TEID; 0 is reserved

/** "1, 2;3" → [1, 2, 3] or the reason it is not a TEID list. */
export function parseTeids(text: string): number[] | string {
  const parts = text.split(/[\s,;]+/).filter(Boolean);
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d+$/.test(p)) return `“${p}” is not a whole number.`;
    const n = Number(p);
    if (n < 1 || n > TEID_MAX) return `TEID ${p} must be between 1 and ${TEID_MAX}.`;
    if (out.includes(n)) return `TEID ${p} is listed twice.`;
    out.push(n);
  }
  return out.length > 16 ? "At most 16 TEIDs." : out;
}

export function SubscriberForm({ subscriber, onDone }: { subscriber?: Subscriber; onDone: () => void }) {
  const qc = useQueryClient();
  const { tenants, slices } = useNames();
  const [tenantId, setTenantId] = useState<string | null>(subscriber ? String(subscriber.tenant_id) : null);
  const [imsi, setImsi] = useState(subscriber?.imsi ?? "");
  const [ueIp, setUeIp] = useState(subscriber?.ue_ip ?? "");
  const [teids, setTeids] = useState(subscriber?.teids.join(", ") ?? "");
  const [sliceIds, setSliceIds] = useState<string[]>(subscriber?.slice_ids.map(String) ?? []);
  const [submitted, setSubmitted] = useState(false);

  const parsedTeids = parseTeids(teids);
  const local: Partial<Record<(typeof FIELDS)[number], string>> = {
    tenant_id: tenantId ? undefined : "Choose the tenant.",
    imsi: /^\d{14,15}$/.test(imsi) ? undefined : "An IMSI has 14 or 15 digits.",
    ue_ip: /^(\d{1,3}\.){3}\d{1,3}$/.test(ueIp) && ueIp.split(".").every((o) => Number(o) <= 255)
      ? undefined : "Enter an IPv4 address such as 10.47.0.1.",
    teids: typeof parsedTeids === "string" ? parsedTeids : undefined,
  };

  const save = useMutation({
    mutationFn: () => {
      const common = { imsi, ue_ip: ueIp, teids: parsedTeids as number[], slice_ids: sliceIds.map(Number) };
      return subscriber
        ? unwrap(api.PATCH("/api/v1/subscribers/{subscriber_id}", {
            params: { path: { subscriber_id: subscriber.id } }, body: { ...common, version: subscriber.version },
          }))
        : unwrap(api.POST("/api/v1/subscribers", { body: { ...common, tenant_id: Number(tenantId) } }));
    },
    onSuccess: async () => { await qc.invalidateQueries({ queryKey: ["subscribers"] }); onDone(); },
  });
  const remote = mapProblem(save.error instanceof ApiProblem ? save.error : null, FIELDS).byField;
  // Format errors show once the user tried to save (or, for TEIDs, as soon as the list is wrong).
  const err = (f: (typeof FIELDS)[number]) => (submitted || f === "teids" ? local[f] : undefined) ?? remote[f];

  function submit(e: FormEvent) {
    e.preventDefault();
    setSubmitted(true);
    if (!Object.values(local).some(Boolean)) save.mutate();
  }
  const tenantSlices = slices.filter((s) => String(s.tenant_id) === tenantId);

  return (
    <form onSubmit={submit} aria-label={subscriber ? "Edit subscriber" : "New subscriber"} noValidate>
      <Stack>
        {save.isError && <ProblemAlert error={save.error} shownOnFields={FIELDS} />}
        <Select label="Tenant" required data={tenants.map((t) => ({ value: String(t.id), label: t.name }))}
          value={tenantId} onChange={(v) => { setTenantId(v); setSliceIds([]); }} disabled={subscriber !== undefined}
          description={subscriber ? "A subscriber stays with its tenant." : undefined} error={err("tenant_id")} searchable />
        <TextInput label="IMSI" required inputMode="numeric" value={imsi} onChange={(e) => setImsi(e.currentTarget.value.trim())}
          error={err("imsi")} />
        <TextInput label="UE address" required placeholder="10.47.0.1" value={ueIp}
          onChange={(e) => setUeIp(e.currentTarget.value.trim())} error={err("ue_ip")} />
        <TextInput label="TEIDs" description="GTP-U tunnel ids, separated by commas" value={teids}
          onChange={(e) => setTeids(e.currentTarget.value)} error={err("teids")} />
        <MultiSelect label="Slices" data={tenantSlices.map((s) => ({ value: String(s.id), label: s.name }))}
          value={sliceIds} onChange={setSliceIds} disabled={!tenantId} error={err("slice_ids")}
          placeholder={tenantId ? "Choose slices" : "Choose the tenant first"} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onDone}>Cancel</Button>
          <Button type="submit" loading={save.isPending}>{subscriber ? "Save" : "Add subscriber"}</Button>
        </Group>
      </Stack>
    </form>
  );
}
