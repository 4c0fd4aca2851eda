// A slice type's lanes drawn against the 8 priority lanes (0 = lowest … 7 = highest).
import { Box, Group, Tooltip } from "@mantine/core";

export const PRIORITY_LANES = [0, 1, 2, 3, 4, 5, 6, 7] as const;

export function LaneStrip({ lanes, label }: { lanes: number[]; label: string }) {
  return (
    <Group gap={3} wrap="nowrap" role="img" aria-label={`${label}: lanes ${lanes.join(", ")} of 0 to 7`}>
      {PRIORITY_LANES.map((lane) => {
        const used = lanes.includes(lane);
        return (
          <Tooltip key={lane} label={`lane ${lane}${used ? " (used)" : ""}`}>
            <Box
              w={26}
              h={26}
              data-lane={lane}
              data-used={used}
              style={{
                borderRadius: 4,
                display: "grid",
                placeItems: "center",
                fontSize: 12,
                fontWeight: 600,
                color: used ? "white" : "var(--mantine-color-dimmed)",
                background: used
                  ? `var(--mantine-color-indigo-${Math.min(9, 3 + lane)})`
                  : "var(--mantine-color-gray-1)",
                border: "1px solid var(--mantine-color-gray-4)",
              }}>
              {lane}
            </Box>
          </Tooltip>
        );
      })}
    </Group>
  );
}
