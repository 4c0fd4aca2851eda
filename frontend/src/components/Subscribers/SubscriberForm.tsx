// Add or edit one subscriber. TEIDs are typed as a list and checked as typed; the API's field
// errors (duplicate IMSI, address outside the tenant's pool …) appear on their fields. The
// subscriber's own guaranteed rate is typed in Mbit/s (as a slice's SLA) and sent in bit/s;
// admission control's refusal shows its numbers under the form, and an operator may save
// anyway with a reason (the same override as the slice forms), whose audit entry then shows.
import { useState, type FormEvent } from "react";
import { Button, Group, MultiSelect, NumberInput, Select, Stack, TextInput } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, ApiProblem, unwrap, type Schemas } from "../../api/client";
import { useSession } from "../../auth/session";
import { capacityError } from "../Backends/CapacityEditor";
import { mapProblem } from "../common/fieldErrors";
import { ProblemAlert } from "../common/QueryView";
import { AdmissionDetails } from "../Slices/AdmissionDetails";
import { AdmissionOverride, OverrideAudit, overrideHeader } from "../Slices/AdmissionOverride";
import { useNames } from "./lookups";

type Subscriber = Schemas["SubscriberPublic"];
const FIELDS = ["tenant_id", "imsi", "ue_ip", "teids", "slice_ids", "guaranteed_bps"] as const;
export const GUARANTEE_LABEL = "Guaranteed rate";

/** A guarantee as typed in Mbit/s ("" = none) → bit/s for the API, or null for none. */
export function guaranteeBps(mbps: number | string): number | null {
  return mbps === "" ? null : Math.round(Number(mbps) * 1e6);
}

/** What is wrong with a guarantee as typed (the API's bounds: 1 bit/s .. 10^13 bit/s), or undefined. */
export function guaranteeError(mbps: number | string): string | undefined {
  return mbps === "" ? undefined : capacityError(GUARANTEE_LABEL, mbps);
}

/** bit/s → "12.5 Mbit/s" (the list and the form speak Mbit/s, as the SLA fields do). */
export const mbitText = (bps: number) => `${+(bps / 1e6).toFixed(6)} Mbit/s`;
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
  const { me } = useSession();
  const { tenants, slices } = useNames();
  const [tenantId, setTenantId] = useState<string | null>(subscriber ? String(subscriber.tenant_id) : null);
  const [imsi, setImsi] = useState(subscriber?.imsi ?? "");
  const [ueIp, setUeIp] = useState(subscriber?.ue_ip ?? "");
  const [teids, setTeids] = useState(subscriber?.teids.join(", ") ?? "");
  const [sliceIds, setSliceIds] = useState<string[]>(subscriber?.slice_ids.map(String) ?? []);
  const [guarantee, setGuarantee] = useState<number | string>(
    subscriber?.guaranteed_bps != null ? subscriber.guaranteed_bps / 1e6 : "",
  );
  const [submitted, setSubmitted] = useState(false);
  // the subscriber saved over admission control's refusal: its audit entry is shown before closing
  const [overridden, setOverridden] = useState<number | null>(null);

  const parsedTeids = parseTeids(teids);
  const local: Partial<Record<(typeof FIELDS)[number], string>> = {
    tenant_id: tenantId ? undefined : "Choose the tenant.",
    imsi: /^\d{14,15}$/.test(imsi) ? undefined : "An IMSI has 14 or 15 digits.",
    ue_ip:
      /^(\d{1,3}\.){3}\d{1,3}$/.test(ueIp) && ueIp.split(".").every((o) => Number(o) <= 255)
        ? undefined
        : "Enter an IPv4 address such as 10.47.0.1.",
    teids: typeof parsedTeids === "string" ? parsedTeids : undefined,
    guaranteed_bps: guaranteeError(guarantee),
  };

  const save = useMutation({
    // reason: after a refusal by admission control, an operator re-sends with Admission-Override
    mutationFn: (reason?: string) => {
      const common = { imsi, ue_ip: ueIp, teids: parsedTeids as number[], slice_ids: sliceIds.map(Number) };
      const header = overrideHeader(reason);
      const bps = guaranteeBps(guarantee);
      return subscriber
        ? unwrap(
            api.PATCH("/api/v1/subscribers/{subscriber_id}", {
              // null clears a guarantee the subscriber had
              params: { path: { subscriber_id: subscriber.id }, header },
              body: { ...common, guaranteed_bps: bps, version: subscriber.version },
            }),
          )
        : unwrap(
            api.POST("/api/v1/subscribers", {
              params: { header },
              body: { ...common, tenant_id: Number(tenantId), ...(bps === null ? {} : { guaranteed_bps: bps }) },
            }),
          );
    },
    onSuccess: async (saved, reason) => {
      await qc.invalidateQueries({ queryKey: ["subscribers"] });
      if (reason === undefined) onDone();
      else setOverridden(saved.id);
    },
  });
  const remote = mapProblem(save.error instanceof ApiProblem ? save.error : null, FIELDS).byField;
  // Format errors show once the user tried to save (or, for TEIDs, as soon as the list is wrong).
  const err = (f: (typeof FIELDS)[number]) => (submitted || f === "teids" ? local[f] : undefined) ?? remote[f];

  function submit(e: FormEvent) {
    e.preventDefault();
    setSubmitted(true);
    if (!Object.values(local).some(Boolean)) save.mutate(undefined);
  }
  const tenantSlices = slices.filter((s) => String(s.tenant_id) === tenantId);

  if (overridden !== null) {
    return (
      <Stack>
        <OverrideAudit objectType="subscriber" objectId={overridden} />
        <Group justify="flex-end">
          <Button onClick={onDone}>Close</Button>
        </Group>
      </Stack>
    );
  }
  return (
    <Stack>
      <form onSubmit={submit} aria-label={subscriber ? "Edit subscriber" : "New subscriber"} noValidate>
        <Stack>
          {save.isError && <ProblemAlert error={save.error} shownOnFields={FIELDS} />}
          <Select
            label="Tenant"
            required
            data={tenants.map((t) => ({ value: String(t.id), label: t.name }))}
            value={tenantId}
            onChange={(v) => {
              setTenantId(v);
              setSliceIds([]);
            }}
            disabled={subscriber !== undefined}
            description={subscriber ? "A subscriber stays with its tenant." : undefined}
            error={err("tenant_id")}
            searchable
          />
          <TextInput
            label="IMSI"
            required
            inputMode="numeric"
            value={imsi}
            onChange={(e) => setImsi(e.currentTarget.value.trim())}
            error={err("imsi")}
          />
          <TextInput
            label="UE address"
            required
            placeholder="10.47.0.1"
            value={ueIp}
            onChange={(e) => setUeIp(e.currentTarget.value.trim())}
            error={err("ue_ip")}
          />
          <TextInput
            label="TEIDs"
            description="GTP-U tunnel ids, separated by commas"
            value={teids}
            onChange={(e) => setTeids(e.currentTarget.value)}
            error={err("teids")}
          />
          <MultiSelect
            label="Slices"
            data={tenantSlices.map((s) => ({ value: String(s.id), label: s.name }))}
            value={sliceIds}
            onChange={setSliceIds}
            disabled={!tenantId}
            error={err("slice_ids")}
            placeholder={tenantId ? "Choose slices" : "Choose the tenant first"}
          />
          <NumberInput
            label={`${GUARANTEE_LABEL} (Mbit/s)`}
            decimalScale={6}
            clampBehavior="none"
            allowNegative
            description="This subscriber's own guarantee inside its slices; empty: none. Admission control checks it."
            value={guarantee}
            onChange={setGuarantee}
            error={local.guaranteed_bps ?? remote.guaranteed_bps}
          />
          <AdmissionDetails problem={save.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onDone}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {subscriber ? "Save" : "Add subscriber"}
            </Button>
          </Group>
        </Stack>
      </form>
      {/* its own form: it cannot sit inside the subscriber's */}
      <AdmissionOverride
        problem={save.error}
        canOverride={me?.role === "operator"}
        pending={save.isPending}
        onOverride={(reason) => save.mutate(reason)}
      />
    </Stack>
  );
}
