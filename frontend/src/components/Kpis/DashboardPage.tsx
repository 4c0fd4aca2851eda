// The tenant's SLA dashboard: every slice the user can see (a tenant sees only its own), live.
import { Anchor, Paper, Stack, Text, Title } from "@mantine/core";
import { Link } from "react-router";
import { useSession } from "../../auth/session";
import { PageTitle } from "../common/PageTitle";
import { QueryView } from "../common/QueryView";
import { useSlices } from "../Slices/queries";
import { BackendBadges, StateBadge } from "../Slices/StateBadge";
import { SliceKpis } from "./SliceKpis";
import { useKpiStream } from "./kpiStream";

export function DashboardPage() {
  const { me } = useSession();
  const slices = useSlices({ page: 1, q: "", sort: "name", limit: 20 });
  useKpiStream(slices.data?.data.map((s) => s.id) ?? []);
  return (
    <>
      <PageTitle>SLA dashboard</PageTitle>
      <Text c="dimmed" size="sm" mb="md">
        {me?.role === "tenant" ? "Your slices, " : "All slices, "}per backend and lane, live.
      </Text>
      <QueryView query={slices}>
        {(page) => (
          <Stack>
            {page.count === 0 && <Text>No slices yet.</Text>}
            {page.data.map((s) => (
              <Paper key={s.id} withBorder p="md" data-testid="dashboard-slice">
                <Title order={2} size="h4" mb="xs">
                  <Anchor component={Link} to={`/slices/${s.id}`}>
                    {s.name}
                  </Anchor>{" "}
                  <StateBadge state={s.state} />
                </Title>
                <BackendBadges status={s.status} />
                <SliceKpis slice={s} />
              </Paper>
            ))}
          </Stack>
        )}
      </QueryView>
    </>
  );
}
