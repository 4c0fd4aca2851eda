// The slice on each of its backends, from GET /slices/{id}/status: deployment state with why
// (pending: what a push would change; out of sync: what reconcile read back), and SLA state.
import { Code, Group, List, Stack, Table, Text } from "@mantine/core";
import { QueryView } from "../common/QueryView";
import { Time } from "../common/time";
import { metricLabel } from "../Kpis/metricLabels";
import { useSliceStatus } from "./queries";
import { StatusBadge } from "../common/statusWords";
import { StateBadge } from "./StateBadge";

export function SliceStatusPanel({ sliceId }: { sliceId: number }) {
  const status = useSliceStatus(sliceId);
  return (
    <QueryView query={status} what="slice status">
      {(st) => (
        <Stack>
          {st.backends.length === 0 && <Text c="dimmed">Not assigned to any backend: nothing to deploy.</Text>}
          {st.backends.length > 0 && (
            // below ~600 px the table scrolls sideways instead of wrapping one word per line
            <Table.ScrollContainer minWidth={600}>
              <Table aria-label="Status per backend">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Backend</Table.Th>
                    <Table.Th>Deployment</Table.Th>
                    <Table.Th>SLA</Table.Th>
                    <Table.Th>Why</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {st.backends.map((b) => (
                    <Table.Tr
                      key={b.backend_id}
                      data-testid={`status-${b.backend_name}`}
                      data-state={b.state}
                      data-sla={b.sla}>
                      <Table.Td>{b.backend_name}</Table.Td>
                      <Table.Td>
                        <Group gap={4}>
                          <StateBadge state={b.state} />
                          {b.rule_set_number != null && <Text size="xs">rule set {b.rule_set_number}</Text>}
                        </Group>
                        {b.since && (
                          <Text size="xs" c="dimmed">
                            since <Time value={b.since} />
                          </Text>
                        )}
                      </Table.Td>
                      <Table.Td>
                        <StatusBadge kind="sla" value={b.sla} />
                        {b.open_violations.length > 0 && (
                          <Text size="xs" c="red">
                            {b.open_violations.map((v) => metricLabel(v.metric, v.lane)).join("; ")}
                          </Text>
                        )}
                        {b.last_sample_at && (
                          <Text size="xs" c="dimmed">
                            last sample <Time value={b.last_sample_at} />
                          </Text>
                        )}
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{b.detail}</Text>
                        {b.changes.length > 0 && (
                          <List size="xs" aria-label={`What a push would change on ${b.backend_name}`}>
                            {b.changes.map((c) => (
                              <List.Item key={c}>{c}</List.Item>
                            ))}
                          </List>
                        )}
                        {b.state === "out_of_sync" && (
                          <Code block mah={160} style={{ overflow: "auto" }}>
                            {JSON.stringify(b.sync_detail, null, 1)}
                          </Code>
                        )}
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          )}
        </Stack>
      )}
    </QueryView>
  );
}
