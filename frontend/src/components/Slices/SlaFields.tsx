// The SLA inputs, shared by the wizard and the edit form.
import { NumberInput, SimpleGrid } from "@mantine/core";
import type { Schemas } from "../../api/client";

export type Sla = Schemas["Sla"];
type SlaKey = keyof Sla;

export const SLA_FIELDS: { key: SlaKey; label: string; unit: string }[] = [
  { key: "guaranteed_mbps", label: "Guaranteed rate", unit: "Mbit/s" },
  { key: "rate_limit_mbps", label: "Rate limit", unit: "Mbit/s" },
  { key: "max_delay_ms", label: "Max delay", unit: "ms" },
  { key: "ecn_delay_ms", label: "ECN target delay", unit: "ms" },
  { key: "max_loss_pct", label: "Max loss", unit: "%" },
  { key: "max_jitter_ms", label: "Max jitter", unit: "ms" },
];

export function SlaFields({ value, onChange, error }: {
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
          min={0}
          decimalScale={3}
          value={value[f.key] ?? ""}
          onChange={(v) => onChange({ ...value, [f.key]: v === "" ? null : Number(v) })}
          error={error(f.key)}
        />
      ))}
    </SimpleGrid>
  );
}
