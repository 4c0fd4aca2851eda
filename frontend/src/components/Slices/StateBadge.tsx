// Derived slice states (GET /slices/{id}/status): the colours say how urgent, never a lane's colour.
import { Badge, Group, Tooltip } from "@mantine/core";
import type { Schemas } from "../../api/client";

export type SliceState = Schemas["SlicePublic"]["state"];
type BackendSummary = Schemas["SliceBackendSummary"];

// Most urgent first: the order the overview's cards and the state filter use.
export const SLICE_STATES: SliceState[] = ["failed", "out_of_sync", "pending", "not_deployed", "degraded", "deployed", "draft"];

const COLORS: Record<string, string> = {
  draft: "gray", pending: "yellow", deployed: "green", degraded: "red", out_of_sync: "orange",
  failed: "red", not_deployed: "gray", met: "green", no_data: "gray",
};

export const stateLabel = (state: string) => state.replace(/_/g, " ");

/**
 * Badges keep their whole word: a badge in a narrow flex row neither shrinks to "DEGR…" nor
 * clips; a long one ("bmv2-lab: out of sync · degraded") wraps inside itself instead.
 */
export const WHOLE_BADGE = {
  root: { flexShrink: 0, maxWidth: "100%", height: "auto", minHeight: "var(--badge-height)" },
  label: { overflow: "visible", textOverflow: "clip", whiteSpace: "normal" },
} as const;

export function StateBadge({ state }: { state: string }) {
  return <Badge color={COLORS[state] ?? "gray"} variant="light" data-state={state} styles={WHOLE_BADGE}>{stateLabel(state)}</Badge>;
}

// One badge per backend: deployment state and SLA state, e.g. "bmv2: deployed · met".
export function BackendBadges({ status }: { status: BackendSummary[] }) {
  if (status.length === 0) return <Badge color="gray" variant="outline">no backend</Badge>;
  return (
    <Group gap={4}>
      {status.map((b) => {
        const sla = b.state === "deployed" ? b.sla : null;
        const color = sla === "degraded" ? "red" : COLORS[b.state] ?? "gray";
        return (
          <Tooltip key={b.backend_id} label={`rule set ${b.rule_set_number ?? "—"} · SLA ${stateLabel(b.sla)}`}>
            <Badge color={color} variant="light" data-testid={`backend-state-${b.backend_id}`} styles={WHOLE_BADGE}
              data-state={b.state} data-sla={b.sla}>
              {b.backend_name}: {stateLabel(b.state)}{sla ? ` · ${stateLabel(sla)}` : ""}
            </Badge>
          </Tooltip>
        );
      })}
    </Group>
  );
}
