// One mapping from every derived status the API reports to the word and colour the portal shows,
// so the slice list, a slice's page, the backends, the overview and the tenant dashboard say the
// same thing for the same state. Colours say how urgent: red failed / violated, orange drifting,
// yellow waiting, green fine, grey nothing to judge. A value the mapping does not know is shown
// as its own words, in grey — never hidden.
import { Badge, type BadgeProps } from "@mantine/core";
import { spoken } from "./spoken";

export type StatusKind = "slice" | "sla" | "health";

type Colour = "red" | "orange" | "yellow" | "green" | "gray";

interface Word {
  label: string;
  color: Colour;
}

// Each state's colour. Its word is its own name spoken (out_of_sync: "out of sync"), unless LABELS
// gives another.
const COLOURS: Record<StatusKind, Record<string, Colour>> = {
  // deployment state of a slice (overall or on one backend)
  slice: {
    draft: "gray",
    pending: "yellow",
    deployed: "green",
    degraded: "red",
    out_of_sync: "orange",
    failed: "red",
    not_deployed: "gray",
  },
  // SLA state of a slice on a backend
  sla: { met: "green", degraded: "red", no_data: "gray" },
  // a backend's health as its probes last found it
  health: { ok: "green", healthy: "green", degraded: "orange", down: "red", unreachable: "red", unknown: "gray" },
};

// Words other than the state's name: a probe's synonyms read as one word for one state.
const LABELS: Partial<Record<StatusKind, Record<string, string>>> = {
  health: { healthy: "ok", unreachable: "down", unknown: "not probed yet" },
};

/** The word and colour of ``value`` as a ``kind`` of status. */
export function statusWord(kind: StatusKind, value: string | null | undefined): Word {
  if (value == null || value === "") return { label: "unknown", color: "gray" };
  return { label: LABELS[kind]?.[value] ?? spoken(value), color: COLOURS[kind][value] ?? "gray" };
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
