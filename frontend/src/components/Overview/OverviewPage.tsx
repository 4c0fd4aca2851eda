// Operator overview: backends and their health, slices by state.
import { Anchor, Card, Group, SimpleGrid, Stack, Text, Title } from "@mantine/core";
import { Link } from "react-router";
import { PageTitle } from "../common/PageTitle";
import { QueryView } from "../common/QueryView";
import { StatusBadge } from "../common/statusWords";
import { useBackends, useSliceStateCounts } from "../Slices/queries";
import { SLICE_STATES, StateBadge } from "../Slices/StateBadge";
import { ViolationsTable } from "../Kpis/ViolationsTable";

export function OverviewPage() {
  const backends = useBackends();
  const counts = useSliceStateCounts();
  const countOf = (state: string) => counts.data?.find((c) => c.state === state)?.count;
  return (
    <>
      <PageTitle>Overview</PageTitle>
      <Title order={2} size="h4" mb="sm">
        Slices by state
      </Title>
      <SimpleGrid cols={{ base: 2, sm: 4, lg: 7 }} mb="lg">
        {SLICE_STATES.map((state) => (
          <Card key={state} withBorder component={Link} to={`/slices?state=${state}`}>
            <StateBadge state={state} />
            <Text fz={28} fw={700} data-testid={`slices-${state}`}>
              {countOf(state) ?? "…"}
            </Text>
          </Card>
        ))}
      </SimpleGrid>
      <Title order={2} size="h4" mb="sm">
        SLA violations now
      </Title>
      <ViolationsTable />
      <Title order={2} size="h4" mb="sm" mt="lg">
        Backends
      </Title>
      <QueryView query={backends}>
        {(page) => (
          <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
            {page.count === 0 && <Text c="dimmed">No backends registered.</Text>}
            {page.data.map((b) => (
              <Card key={b.id} withBorder>
                <Stack gap={4}>
                  <Group justify="space-between">
                    <Anchor component={Link} to={`/backends/${b.id}`} fw={600}>
                      {b.name}
                    </Anchor>
                    <StatusBadge kind="health" value={b.health} data-testid={`health-${b.id}`} />
                  </Group>
                  <Text size="sm">
                    {b.driver} · {b.paths} paths × {b.lanes} lanes
                  </Text>
                  {b.health_detail && (
                    <Text size="xs" c="dimmed">
                      {b.health_detail}
                    </Text>
                  )}
                </Stack>
              </Card>
            ))}
          </SimpleGrid>
        )}
      </QueryView>
    </>
  );
}
