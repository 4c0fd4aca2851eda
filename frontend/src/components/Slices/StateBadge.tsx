// Derived slice states (GET /slices/{id}/status): the colours say how urgent, never a lane's colour.
import { Badge, Group, Tooltip } from "@mantine/core";
import type { Schemas } from "../../api/client";
import { StatusBadge, statusWord, WHOLE_BADGE } from "../common/statusWords";

export type SliceState = Schemas["SlicePublic"]["state"];
type BackendSummary = Schemas["SliceBackendSummary"];

// Most urgent first: the order the overview's cards and the state filter use.
export const SLICE_STATES: SliceState[] = [
  "failed",
  "out_of_sync",
  "pending",
  "not_deployed",
  "degraded",
  "deployed",
  "draft",
];

export const stateLabel = (state: string) => statusWord("slice", state).label;

export { WHOLE_BADGE };

export function StateBadge({ state }: { state: string }) {
  return <StatusBadge kind="slice" value={state} data-state={state} />;
}

// One badge per backend: deployment state and SLA state, e.g. "bmv2: deployed · met".
export function BackendBadges({ status }: { status: BackendSummary[] }) {
  if (status.length === 0)
    return (
      <Badge color="gray" variant="outline">
        no backend
      </Badge>
    );
  return (
    <Group gap={4}>
      {status.map((b) => {
        const sla = b.state === "deployed" ? b.sla : null;
        const color = sla === "degraded" ? statusWord("sla", sla).color : statusWord("slice", b.state).color;
        return (
          <Tooltip
            key={b.backend_id}
            label={`rule set ${b.rule_set_number ?? "—"} · SLA ${statusWord("sla", b.sla).label}`}>
            <Badge
              color={color}
              variant="light"
              data-testid={`backend-state-${b.backend_id}`}
              styles={WHOLE_BADGE}
              data-state={b.state}
              data-sla={b.sla}>
              {b.backend_name}: {stateLabel(b.state)}
              {sla ? ` · ${statusWord("sla", sla).label}` : ""}
            </Badge>
          </Tooltip>
        );
      })}
    </Group>
  );
}
