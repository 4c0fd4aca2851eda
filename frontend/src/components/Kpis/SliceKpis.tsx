// Live per-lane throughput / loss / delay / jitter of one slice, against its SLA.
import { Alert, Badge, Group, SimpleGrid, Stack, Table, Text } from "@mantine/core";
import { useElementSize } from "@mantine/hooks";
import type { Schemas } from "../../api/client";
import { ProblemAlert } from "../common/QueryView";
import { LaneChart, type LaneSeries } from "./LaneChart";
import { useKpis, type KpiSample } from "./kpiSource";

type Slice = Schemas["SlicePublic"];

function seriesOf(samples: KpiSample[], lanes: number[], pick: (s: KpiSample) => number | null): LaneSeries[] {
  return lanes.map((lane) => ({
    lane,
    points: samples.filter((s) => s.lane === lane).map((s) => [Date.parse(s.ts) / 1000, pick(s)] as [number, number | null]),
  }));
}

export function violations(samples: KpiSample[], slice: Slice) {
  const out: { lane: number; metric: string; value: number; threshold: number; ts: string }[] = [];
  const latest = new Map<number, KpiSample>();
  for (const s of samples) if ((latest.get(s.lane)?.ts ?? "") < s.ts) latest.set(s.lane, s);
  for (const s of latest.values()) {
    const check = (metric: string, value: number | null, threshold: number | null | undefined) => {
      if (value != null && threshold != null && value > threshold) out.push({ lane: s.lane, metric, value, threshold, ts: s.ts });
    };
    check("loss %", s.loss_pct, slice.sla.max_loss_pct);
    check("delay ms", s.delay_mean_ms, slice.sla.max_delay_ms);
    check("jitter ms", s.jitter_ms, slice.sla.max_jitter_ms);
  }
  return out;
}

export function SliceKpis({ slice }: { slice: Slice }) {
  const kpis = useKpis(slice.id);
  const { ref, width } = useElementSize();
  const samples = kpis.data ?? [];
  const lanes = [...new Set([...slice.lanes, ...samples.map((s) => s.lane)])].sort((a, b) => a - b);
  const chartWidth = Math.max(260, (width >= 900 ? width / 2 : width) - 24);
  const now = violations(samples, slice);
  const rateLimit = slice.sla.rate_limit_mbps;

  return (
    <Stack ref={ref}>
      {kpis.available === false && (
        <Alert color="gray" title="Live KPIs not available yet">
          This backend does not serve KPI samples yet; the charts fill in once it does.
        </Alert>
      )}
      {kpis.isError && <ProblemAlert error={kpis.error} />}
      <Group gap="xs">
        <Text size="sm" c="dimmed" data-testid="kpi-samples">{samples.length} samples in the last 2 minutes</Text>
        {now.length === 0 ? <Badge color="green">SLA met</Badge> : <Badge color="red">{now.length} SLA violations now</Badge>}
      </Group>
      {width > 0 && (
        <SimpleGrid cols={{ base: 1, md: 2 }}>
          <LaneChart title="Throughput" unit="Mbit/s" width={chartWidth} threshold={rateLimit}
            series={seriesOf(samples, lanes, (s) => s.throughput_bps / 1e6)} />
          <LaneChart title="Loss" unit="%" width={chartWidth} threshold={slice.sla.max_loss_pct}
            series={seriesOf(samples, lanes, (s) => s.loss_pct)} />
          <LaneChart title="Delay" unit="ms" width={chartWidth} threshold={slice.sla.max_delay_ms}
            series={seriesOf(samples, lanes, (s) => s.delay_mean_ms)} />
          <LaneChart title="Jitter" unit="ms" width={chartWidth} threshold={slice.sla.max_jitter_ms}
            series={seriesOf(samples, lanes, (s) => s.jitter_ms)} />
        </SimpleGrid>
      )}
      {now.length > 0 && (
        <Table aria-label="SLA violations">
          <Table.Thead><Table.Tr><Table.Th>Lane</Table.Th><Table.Th>Metric</Table.Th><Table.Th>Value</Table.Th><Table.Th>SLA</Table.Th></Table.Tr></Table.Thead>
          <Table.Tbody>
            {now.map((v) => (
              <Table.Tr key={`${v.lane}-${v.metric}`}>
                <Table.Td>{v.lane}</Table.Td><Table.Td>{v.metric}</Table.Td>
                <Table.Td>{v.value.toFixed(2)}</Table.Td><Table.Td>{v.threshold}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  );
}
