import { Badge } from "@mantine/core";

const COLORS: Record<string, string> = {
  draft: "gray", compiled: "blue", deployed: "green", degraded: "orange", failed: "red",
};

export function StateBadge({ state }: { state: string }) {
  return <Badge color={COLORS[state] ?? "gray"} variant="light">{state}</Badge>;
}
