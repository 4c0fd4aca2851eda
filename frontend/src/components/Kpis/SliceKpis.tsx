// A slice's KPIs on one of its backends (picker), per lane, against its SLA: throughput with the
// rate limit and guaranteed rate drawn, loss / delay / jitter with their SLA limits; a time range
// of 5 min (live) / 1 h / 24 h from the stored samples; the SLA status of that backend.
import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Badge, Button, Group, SegmentedControl, SimpleGrid, Stack, Text } from "@mantine/core";
import { api, unwrap, type Schemas } from "../../api/client";
import { useSession } from "../../auth/session";
import { useConfirm } from "../common/Confirm";
import { notify } from "../common/notify";
import { ProblemAlert } from "../common/QueryView";
import { formatTime } from "../common/time";
import { useSliceStatus } from "../Slices/queries";
import { statusWord } from "../common/statusWords";
import { buildSeries, sourcesOf } from "./chartSeries";
import { GUARANTEE_TEAL, LaneChart, SLA_RED, type Limit } from "./LaneChart";
import { RANGES, useKpis, type RangeKey } from "./kpiSource";
import { ViolationsTable } from "./ViolationsTable";

type Slice = Schemas["SlicePublic"];
const RATE_GREY = "#495057";
const TOTAL = -1; // the series of all lanes together

function laneLabel(slice: Slice, lane: number): string {
  if (lane === TOTAL) return "all lanes";
  const names = slice.services.filter((s) => s.lane === lane).map((s) => s.name);
  return `lane ${lane}${names.length ? ` · ${names.join(", ")}` : ""}`;
}

function limit(kind: Limit["kind"], value: number | null | undefined, label: string, color: string): Limit[] {
  return value != null ? [{ kind, value, label, color }] : [];
}

const CONGESTION = { duration_s: 30, factor: 4 } as const;

// The scenario running on a backend, from the testbed's report (the button offers to end it early)
function useCongestionUntil(backendId: number, enabled: boolean): string | null {
  const state = useQuery({
    queryKey: ["testbed"],
    queryFn: () => unwrap(api.GET("/api/v1/testbed")),
    enabled,
    refetchInterval: 2000,
    retry: false, // 409: no testbed runs; the button then stays as it is
  });
  return state.data?.backends.find((b) => b.backend_id === backendId)?.congestion_until ?? null;
}

function CongestionButton({ backendId, backendName }: { backendId: number; backendName: string }) {
  const { me } = useSession();
  const confirm = useConfirm();
  const client = useQueryClient();
  const allowed = me?.role === "operator";
  const until = useCongestionUntil(backendId, allowed);
  // ending restores capacity: nothing to confirm
  const end = useMutation({
    mutationFn: () =>
      unwrap(api.DELETE("/api/v1/testbed/congestion/{backend_id}", { params: { path: { backend_id: backendId } } })),
    onSuccess: async () => {
      notify("Congestion ended", `${backendName}'s egress capacity is back`, "teal");
      await client.invalidateQueries({ queryKey: ["testbed"] });
    },
    onError: (e) => notify("Congestion not ended", e.message, "red"),
  });
  if (!allowed) return null;
  // traffic-affecting: it runs only from the dialog, which says what it does and for how long
  const ask = () =>
    confirm.ask({
      title: `Congest backend ${backendName} for ${CONGESTION.duration_s} s?`,
      message:
        `The testbed divides ${backendName}'s egress capacity by ${CONGESTION.factor} for ${CONGESTION.duration_s} seconds. `
        + "Every slice on this backend is affected: lanes degrade lowest priority first and SLA violations may open; "
        + "the capacity comes back by itself when the time is up (or when you end it).",
      confirmLabel: `Congest for ${CONGESTION.duration_s} s`,
      color: "orange",
      action: async () => {
        const r = await unwrap(
          api.POST("/api/v1/testbed/congestion", { body: { backend_id: backendId, ...CONGESTION } }),
        );
        notify(
          "Congestion started",
          `egress capacity ÷${r.factor} (${(r.egress_capacity_bps / 1e6).toFixed(2)} Mbit/s) `
            + `on ${backendName} until ${formatTime(r.until)}`,
          "orange",
        );
        await client.invalidateQueries({ queryKey: ["testbed"] });
      },
    });
  return (
    <>
      {until ? (
        <Button
          size="xs"
          variant="light"
          color="teal"
          onClick={() => end.mutate()}
          loading={end.isPending}
          title={`The congestion scenario on ${backendName} runs until ${formatTime(until)}: end it now`}>
          End congestion (until {formatTime(until)})
        </Button>
      ) : (
        <Button
          size="xs"
          variant="light"
          color="orange"
          onClick={ask}
          title={`Overload this backend for ${CONGESTION.duration_s} s (its egress capacity ÷${CONGESTION.factor}): lanes degrade lowest priority first, then recover`}>
          Congestion ({CONGESTION.duration_s} s)…
        </Button>
      )}
      {confirm.dialog}
    </>
  );
}

export function SliceKpis({ slice }: { slice: Slice }) {
  const [range, setRange] = useState<RangeKey>("5m");
  const [picked, setPicked] = useState<number | null>(null);
  const backendId = picked ?? slice.backend_ids[0] ?? null;
  const kpis = useKpis(slice.id, range, backendId);
  const status = useSliceStatus(slice.id);
  const samples = (kpis.data ?? []).filter((s) => s.backend_id === backendId && s.lane !== null);
  const lanes = [...new Set([...slice.lanes, ...samples.flatMap((s) => (s.lane === null ? [] : [s.lane]))])].sort(
    (a, b) => a - b,
  );
  const here = status.data?.backends.find((b) => b.backend_id === backendId);
  // the slice's own summary names its backends from the first render ("backend 3" never flashes)
  const names = new Map([...slice.status, ...(status.data?.backends ?? [])].map((b) => [b.backend_id, b.backend_name]));
  // "delivered now" from one source (the data plane's counters when it has them), never a sum over sources
  const rateSource = sourcesOf(samples)[0];
  const rated = samples.filter((s) => s.source === rateSource);
  const newest = rated.at(-1)?.ts ?? null;
  const deliveredNow = newest
    ? rated.filter((s) => s.ts === newest).reduce((a, s) => a + s.throughput_bps, 0) / 1e6
    : null;
  const { sla } = slice;
  const label = (lane: number) => laneLabel(slice, lane);
  const throughput = buildSeries(samples, lanes, label, (s) => s.throughput_bps / 1e6, {
    label: laneLabel(slice, TOTAL),
    sum: (rows) => rows.reduce((a, s) => a + s.throughput_bps, 0) / 1e6,
  });
  const loss = buildSeries(samples, lanes, label, (s) => s.loss_pct);
  const delay = buildSeries(samples, lanes, label, (s) => s.delay_p99_ms);
  const jitter = buildSeries(samples, lanes, label, (s) => s.jitter_ms);

  return (
    <Stack>
      {kpis.isError && <ProblemAlert error={kpis.error} />}
      {slice.backend_ids.length === 0 ? (
        <Text c="dimmed">Not assigned to a backend: no data plane carries this slice, so there are no KPIs.</Text>
      ) : (
        <>
          <Group justify="space-between" gap="xs">
            <Group gap="xs">
              {slice.backend_ids.length > 1 && (
                <SegmentedControl
                  size="xs"
                  aria-label="Backend"
                  value={String(backendId)}
                  onChange={(v) => setPicked(Number(v))}
                  data={slice.backend_ids.map((id) => ({ value: String(id), label: names.get(id) ?? `backend ${id}` }))}
                />
              )}
              <SegmentedControl
                size="xs"
                aria-label="Time range"
                value={range}
                onChange={(v) => setRange(v as RangeKey)}
                data={Object.entries(RANGES).map(([value, r]) => ({ value, label: r.label }))}
              />
            </Group>
            {backendId != null && (
              <CongestionButton backendId={backendId} backendName={names.get(backendId) ?? `backend ${backendId}`} />
            )}
          </Group>
          <Group gap="md">
            {here && (
              <Badge color={statusWord("sla", here.sla).color} data-testid="sla-status" data-sla={here.sla}>
                {here.backend_name}: SLA {statusWord("sla", here.sla).label}
              </Badge>
            )}
            {here && (
              <Text size="sm" data-testid="deploy-state" data-state={here.state}>
                {statusWord("slice", here.state).label}
                {here.rule_set_number != null ? ` · rule set ${here.rule_set_number}` : ""}
              </Text>
            )}
            <Text size="sm" c="dimmed" data-testid="kpi-samples">
              {samples.length} samples in the last {RANGES[range].label}
            </Text>
            <Text size="sm" data-testid="effective-rate">
              Delivered now <b>{deliveredNow != null ? `${deliveredNow.toFixed(2)} Mbit/s` : "—"}</b>
              {" · "}configured: rate limit {sla.rate_limit_mbps != null ? `${sla.rate_limit_mbps} Mbit/s` : "none"},
              guaranteed {sla.guaranteed_mbps != null ? `${sla.guaranteed_mbps} Mbit/s` : "none"}
            </Text>
          </Group>
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            <LaneChart
              title="Throughput"
              unit="Mbit/s"
              limits={[
                ...limit("rate_limit", sla.rate_limit_mbps, `rate limit ${sla.rate_limit_mbps} Mbit/s`, RATE_GREY),
                ...limit("guarantee", sla.guaranteed_mbps, `guaranteed ${sla.guaranteed_mbps} Mbit/s`, GUARANTEE_TEAL),
              ]}
              series={throughput.series}
              notMeasured={throughput.notMeasured}
            />
            <LaneChart
              title="Loss"
              unit="%"
              limits={limit("sla", sla.max_loss_pct, `SLA max ${sla.max_loss_pct} %`, SLA_RED)}
              series={loss.series}
              notMeasured={loss.notMeasured}
            />
            <LaneChart
              title="Delay (p99)"
              unit="ms"
              limits={limit("sla", sla.max_delay_ms, `SLA max ${sla.max_delay_ms} ms`, SLA_RED)}
              series={delay.series}
              notMeasured={delay.notMeasured}
            />
            <LaneChart
              title="Jitter"
              unit="ms"
              limits={limit("sla", sla.max_jitter_ms, `SLA max ${sla.max_jitter_ms} ms`, SLA_RED)}
              series={jitter.series}
              notMeasured={jitter.notMeasured}
            />
          </SimpleGrid>
        </>
      )}
      <ViolationsTable sliceId={slice.id} />
    </Stack>
  );
}
