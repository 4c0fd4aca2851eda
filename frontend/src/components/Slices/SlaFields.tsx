// The SLA inputs, shared by the wizard and the edit form.
import { NumberInput, SimpleGrid } from "@mantine/core";
import type { Schemas } from "../../api/client";

export type Sla = Schemas["Sla"];
type SlaKey = keyof Sla;

// The API's bounds (schemas/slices.py): rates and delays above 0, loss 0-100 %.
export const SLA_FIELDS: { key: SlaKey; label: string; unit: string; zeroOk?: boolean; max: number }[] = [
  { key: "guaranteed_mbps", label: "Guaranteed rate", unit: "Mbit/s", max: 1_000_000 },
  { key: "rate_limit_mbps", label: "Rate limit", unit: "Mbit/s", max: 1_000_000 },
  { key: "max_delay_ms", label: "Max delay", unit: "ms", max: 60_000 },
  { key: "ecn_delay_ms", label: "ECN target delay", unit: "ms", max: 60_000 },
  { key: "max_loss_pct", label: "Max loss", unit: "%", zeroOk: true, max: 100 },
  { key: "max_jitter_ms", label: "Max jitter", unit: "ms", max: 60_000 },
];

/** What is wrong with one SLA value as typed (never clamped), or undefined. */
export function slaFieldError(f: (typeof SLA_FIELDS)[number], v: number | null | undefined): string | undefined {
  if (v == null) return undefined;
  if (!Number.isFinite(v)) return `${f.label} must be a number.`;
  if (f.zeroOk ? v < 0 : v <= 0)
    return `${f.label} must be ${f.zeroOk ? "at least 0" : "above 0"} ${f.unit}; ${v} is not.`;
  if (v > f.max) return `${f.label} must be at most ${f.max} ${f.unit}; ${v} is too large.`;
  return undefined;
}

/** The first problem of an SLA (a value out of range, or limits that contradict each other), or undefined. */
export function slaError(sla: Sla): string | undefined {
  for (const f of SLA_FIELDS) {
    const e = slaFieldError(f, sla[f.key]);
    if (e) return e;
  }
  if (sla.guaranteed_mbps && sla.rate_limit_mbps && sla.guaranteed_mbps > sla.rate_limit_mbps) {
    return "The guaranteed rate cannot exceed the rate limit.";
  }
  if (sla.ecn_delay_ms && sla.max_delay_ms && sla.ecn_delay_ms > sla.max_delay_ms) {
    return "The ECN target delay cannot exceed the max delay.";
  }
  return undefined;
}

export function SlaFields({
  value,
  onChange,
  error,
}: {
  value: Sla;
  onChange: (next: Sla) => void;
  error: (field: string) => string | undefined;
}) {
  return (
    <SimpleGrid cols={{ base: 1, xs: 2, md: 3 }}>
      {SLA_FIELDS.map((f) => (
        <NumberInput
          key={f.key}
          label={`${f.label} (${f.unit})`}
          decimalScale={3}
          clampBehavior="none"
          allowNegative
          value={value[f.key] ?? ""}
          onChange={(v) => onChange({ ...value, [f.key]: v === "" ? null : Number(v) })}
          error={slaFieldError(f, value[f.key]) ?? error(f.key)}
        />
      ))}
    </SimpleGrid>
  );
}
