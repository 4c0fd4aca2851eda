// SLA violations (open ones by default) from the KPI service's SLA evaluation; tenant-scoped by the API.
import { Anchor, Badge, Table, Text } from "@mantine/core";
import { Link } from "react-router";
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../../api/client";
import { ProblemAlert } from "../common/QueryView";
import { Time } from "../common/time";
import { formatValue } from "./chartSeries";
import { metricName, metricUnit } from "./metricLabels";

export function useOpenViolations(sliceId?: number) {
  const query = { open_only: true, limit: 100, ...(sliceId ? { slice_id: sliceId } : {}) };
  return useQuery({
    queryKey: ["violations", query],
    queryFn: () => unwrap(api.GET("/api/v1/violations", { params: { query } })),
    refetchInterval: 2000,
  });
}

function useSliceNames(enabled: boolean) {
  const query = { limit: 500, sort: "name" };
  const slices = useQuery({
    queryKey: ["slices", query],
    queryFn: () => unwrap(api.GET("/api/v1/slices", { params: { query } })),
    enabled,
  });
  return new Map((slices.data?.data ?? []).map((s) => [s.id, s.name]));
}

export function ViolationsTable({ sliceId }: { sliceId?: number }) {
  const violations = useOpenViolations(sliceId);
  const names = useSliceNames(!sliceId && (violations.data?.count ?? 0) > 0);
  if (violations.isError) return <ProblemAlert error={violations.error} />;
  const rows = violations.data?.data ?? [];
  if (rows.length === 0)
    return (
      <Text size="sm" c="dimmed" data-testid="no-violations">
        No SLA violations now.
      </Text>
    );
  return (
    // at 390 px the table scrolls inside its box: never squeezed to a cut badge or a word a line
    <Table.ScrollContainer minWidth={sliceId ? 560 : 640}>
      <Table aria-label="SLA violations" striped>
        <Table.Thead>
          <Table.Tr>
            {!sliceId && <Table.Th>Slice</Table.Th>}
            <Table.Th>Backend</Table.Th>
            <Table.Th>Lane</Table.Th>
            <Table.Th>Metric</Table.Th>
            <Table.Th>Worst</Table.Th>
            <Table.Th>SLA</Table.Th>
            <Table.Th>Since</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((v) => (
            <Table.Tr key={v.id}>
              {!sliceId && (
                <Table.Td>
                  <Anchor component={Link} to={`/slices/${v.slice_id}`}>
                    {names.get(v.slice_id) ?? `#${v.slice_id}`}
                  </Anchor>
                </Table.Td>
              )}
              <Table.Td>{v.backend_name}</Table.Td>
              <Table.Td>{v.lane ?? "all"}</Table.Td>
              <Table.Td>
                <Badge color="red" variant="light" tt="none">
                  {metricName(v.metric)}
                </Badge>
              </Table.Td>
              <Table.Td>{formatValue(v.worst, metricUnit(v.metric))}</Table.Td>
              <Table.Td>{formatValue(v.threshold, metricUnit(v.metric))}</Table.Td>
              <Table.Td>
                <Time value={v.started_at} />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
