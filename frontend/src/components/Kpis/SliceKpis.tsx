// Live per-lane throughput / loss / delay / jitter of one slice, against its SLA.
import { Alert, Badge, Group, SimpleGrid, Stack, Text } from "@mantine/core";
import type { Schemas } from "../../api/client";
import { ProblemAlert } from "../common/QueryView";
import { LaneChart, type LaneSeries } from "./LaneChart";
import { useKpis, type KpiSample } from "./kpiSource";
import { useOpenViolations, ViolationsTable } from "./ViolationsTable";

type Slice = Schemas["SlicePublic"];

function seriesOf(samples: KpiSample[], lanes: number[], pick: (s: KpiSample) => number | null): LaneSeries[] {
  return lanes.map((lane) => ({
    lane,
    points: samples.filter((s) => s.lane === lane).map((s) => [Date.parse(s.ts) / 1000, pick(s)] as [number, number | null]),
  }));
}

export function SliceKpis({ slice }: { slice: Slice }) {
  const kpis = useKpis(slice.id);
  const samples = kpis.data ?? [];
  const lanes = [...new Set([...slice.lanes, ...samples.flatMap((s) => (s.lane === null ? [] : [s.lane]))])]
    .sort((a, b) => a - b);
  const open = useOpenViolations(slice.id);
  const openCount = open.data?.count ?? 0;
  const rateLimit = slice.sla.rate_limit_mbps;

  return (
    <Stack>
      {kpis.available === false && (
        <Alert color="gray" title="Live KPIs not available yet">
          This backend does not serve KPI samples; the charts fill in once it does.
        </Alert>
      )}
      {kpis.isError && <ProblemAlert error={kpis.error} />}
      <Group gap="xs">
        <Text size="sm" c="dimmed" data-testid="kpi-samples">{samples.length} samples in the last 2 minutes</Text>
        {openCount === 0 ? <Badge color="green">SLA met</Badge> : <Badge color="red">{openCount} SLA violations now</Badge>}
      </Group>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
          <LaneChart title="Throughput" unit="Mbit/s" threshold={rateLimit}
            series={seriesOf(samples, lanes, (s) => s.throughput_bps / 1e6)} />
          <LaneChart title="Loss" unit="%" threshold={slice.sla.max_loss_pct}
            series={seriesOf(samples, lanes, (s) => s.loss_pct)} />
          <LaneChart title="Delay (p99)" unit="ms" threshold={slice.sla.max_delay_ms}
            series={seriesOf(samples, lanes, (s) => s.delay_p99_ms)} />
          <LaneChart title="Jitter" unit="ms" threshold={slice.sla.max_jitter_ms}
            series={seriesOf(samples, lanes, (s) => s.jitter_ms)} />
      </SimpleGrid>
      <ViolationsTable sliceId={slice.id} />
    </Stack>
  );
}
