// One mapping from every derived status the API reports to the word and colour the portal shows,
// so the slice list, a slice's page, the backends, the overview and the tenant dashboard say the
// same thing for the same state. Colours say how urgent: red failed / violated, orange drifting,
// yellow waiting, green fine, grey nothing to judge. A value the mapping does not know is shown
// as its own words, in grey — never hidden.
import { Badge, type BadgeProps } from "@mantine/core";

export type StatusKind = "slice" | "sla" | "health";

interface Word {
  label: string;
  color: string;
}

const WORDS: Record<StatusKind, Record<string, Word>> = {
  // deployment state of a slice (overall or on one backend)
  slice: {
    draft: { label: "draft", color: "gray" },
    pending: { label: "pending", color: "yellow" },
    deployed: { label: "deployed", color: "green" },
    degraded: { label: "degraded", color: "red" },
    out_of_sync: { label: "out of sync", color: "orange" },
    failed: { label: "failed", color: "red" },
    not_deployed: { label: "not deployed", color: "gray" },
  },
  // SLA state of a slice on a backend
  sla: {
    met: { label: "met", color: "green" },
    degraded: { label: "degraded", color: "red" },
    no_data: { label: "no data", color: "gray" },
  },
  // a backend's health as its probes last found it
  health: {
    ok: { label: "ok", color: "green" },
    healthy: { label: "ok", color: "green" },
    degraded: { label: "degraded", color: "orange" },
    down: { label: "down", color: "red" },
    unreachable: { label: "down", color: "red" },
    unknown: { label: "not probed yet", color: "gray" },
  },
};

/** The word and colour of ``value`` as a ``kind`` of status. */
export function statusWord(kind: StatusKind, value: string | null | undefined): Word {
  if (value == null || value === "") return { label: "unknown", color: "gray" };
  return WORDS[kind][value] ?? { label: value.replace(/_/g, " "), color: "gray" };
}

/**
 * Badges keep their whole word: a badge in a narrow flex row neither shrinks to "DEGR…" nor
 * clips; a long one ("bmv2-lab: out of sync · degraded") wraps inside itself instead.
 */
export const WHOLE_BADGE = {
  root: { flexShrink: 0, maxWidth: "100%", height: "auto", minHeight: "var(--badge-height)" },
  label: { overflow: "visible", textOverflow: "clip", whiteSpace: "normal" },
} as const;

export function StatusBadge({
  kind,
  value,
  ...rest
}: { kind: StatusKind; value: string | null | undefined } & Omit<BadgeProps, "color" | "children">) {
  const w = statusWord(kind, value);
  return (
    <Badge color={w.color} variant="light" styles={WHOLE_BADGE} data-status={`${kind}:${value ?? ""}`} {...rest}>
      {w.label}
    </Badge>
  );
}
