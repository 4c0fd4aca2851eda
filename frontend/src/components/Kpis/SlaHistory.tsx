// A slice's SLA history over the last hour or day: the share of measured intervals within the
// SLA per backend, the window's violations grouped into episodes (slaEpisodes.ts), and for each
// an explanation of its worst violation — the samples
// that opened and closed it (hold-down), the rule set in force, the data plane's counters.
import { useState } from "react";
import { Badge, Button, Code, Group, SegmentedControl, SimpleGrid, Stack, Table, Text, Title } from "@mantine/core";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../../api/client";
import { Dialog } from "../common/Dialog";
import { DataTable } from "../common/DataTable";
import { ProblemAlert, QueryView } from "../common/QueryView";
import { formatTime, Time } from "../common/time";
import { sourceLabel } from "./chartSeries";
import { LaneChart, SLA_RED, GUARANTEE_TEAL } from "./LaneChart";
import { metricName, metricUnit } from "./metricLabels";
import { durationText, EPISODE_HOLD_S, mergeEpisodes } from "./slaEpisodes";

const NOWRAP = { whiteSpace: "nowrap" } as const;

type Violation = Schemas["SlaViolationPublic"];
type Evidence = Schemas["EvidenceSample"];
const WINDOWS = { "1h": { label: "last hour", seconds: 3600 }, "24h": { label: "last day", seconds: 86_400 } } as const;
type WindowKey = keyof typeof WINDOWS;
const HISTORY_PAGE = 20;
// Beyond this many violations in the window the oldest are not grouped (a day of a flapping KPI).
const MAX_VIOLATIONS = 5000;

function fmt(v: number | null | undefined, unit: string): string {
  return v == null ? "—" : `${Number(v.toFixed(3))} ${unit}`;
}

function EvidenceTable({ label, rows, unit }: { label: string; rows: Evidence[]; unit: string }) {
  return (
    <Table aria-label={label} withTableBorder>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Interval ending</Table.Th>
          <Table.Th>Lane</Table.Th>
          <Table.Th>Value</Table.Th>
          <Table.Th>Offered</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {rows.length === 0 && (
          <Table.Tr>
            <Table.Td colSpan={4}>
              <Text size="sm" c="dimmed">
                still open
              </Text>
            </Table.Td>
          </Table.Tr>
        )}
        {rows.map((e) => (
          <Table.Tr key={`${e.ts}-${e.lane}`}>
            <Table.Td>
              <Time value={e.ts} />
            </Table.Td>
            <Table.Td>{e.lane ?? "all"}</Table.Td>
            <Table.Td>{fmt(e.value, unit)}</Table.Td>
            <Table.Td>{fmt(e.offered_mbps, "Mbit/s")}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

export function ExplainDialog({ violation, onClose }: { violation: Violation | null; onClose: () => void }) {
  const explain = useQuery({
    queryKey: ["violations", { explain: violation?.id }],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/violations/{violation_id}/explain", {
          params: { path: { violation_id: violation?.id ?? 0 } },
        }),
      ),
    enabled: violation != null,
  });
  const unit = metricUnit(violation?.metric ?? "");
  return (
    <Dialog opened={violation != null} onClose={onClose} size="xl" title={`Why violation ${violation?.id ?? ""}`}>
      <QueryView query={explain} what="violation">
        {(x) => {
          const pick = (s: Schemas["KpiSamplePublic"]): number | null =>
            x.metric === "throughput_mbps"
              ? s.throughput_bps / 1e6
              : (s[x.metric as "loss_pct" | "delay_p99_ms" | "jitter_ms"] ?? null);
          const below = x.detail?.direction === "below";
          return (
            <Stack data-testid="explain">
              <Text>
                <b>{metricName(x.metric)}</b> {below ? "below" : "above"} {fmt(x.threshold, unit)} on lane{" "}
                {x.lane ?? "all"} from <Time value={x.started_at} /> to{" "}
                {x.ended_at ? <Time value={x.ended_at} /> : "now (open)"}; worst {fmt(x.worst, unit)}.
                {x.source ? <> Judged from: {sourceLabel(x.source)}.</> : null}
              </Text>
              <Text size="sm">
                Hold-down: opened after {x.hold_down.open_after} consecutive intervals out of bounds, closes after{" "}
                {x.hold_down.close_after} good ones. Rule set in force:{" "}
                {x.rule_set ? (
                  <b>
                    #{String(x.rule_set.number)} ({String(x.rule_set.digest)})
                  </b>
                ) : (
                  "none recorded"
                )}
                .
              </Text>
              <LaneChart
                title={`${metricName(x.metric)} around the violation`}
                unit={unit}
                limits={[
                  {
                    kind: below ? "guarantee" : "sla",
                    value: x.threshold,
                    label: `${below ? "guaranteed" : "SLA max"} ${x.threshold} ${unit}`,
                    color: below ? GUARANTEE_TEAL : SLA_RED,
                  },
                ]}
                series={[
                  {
                    lane: x.lane ?? 0,
                    label: x.lane != null ? `lane ${x.lane}` : "all lanes",
                    points: x.samples.map((s) => [Date.parse(s.ts) / 1000, pick(s)] as [number, number | null]),
                  },
                ]}
              />
              <SimpleGrid cols={{ base: 1, sm: 2 }}>
                <div>
                  <Title order={3} size="h5">
                    Opened by
                  </Title>
                  <EvidenceTable label="Samples that opened it" rows={x.opened_by} unit={unit} />
                </div>
                <div>
                  <Title order={3} size="h5">
                    Closed by
                  </Title>
                  <EvidenceTable label="Samples that closed it" rows={x.closed_by} unit={unit} />
                </div>
              </SimpleGrid>
              <div>
                <Title order={3} size="h5">
                  Data-plane counters over the opening intervals
                </Title>
                <Code block>{JSON.stringify(x.counters, null, 1)}</Code>
              </div>
            </Stack>
          );
        }}
      </QueryView>
    </Dialog>
  );
}

export function SlaHistory({ sliceId, backendNames }: { sliceId: number; backendNames: Map<number, string> }) {
  const [win, setWin] = useState<WindowKey>("1h");
  const [explained, setExplained] = useState<Violation | null>(null);
  const since = () => new Date(Date.now() - WINDOWS[win].seconds * 1000).toISOString();
  const summary = useQuery({
    queryKey: ["sla", { sliceId, win }],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/slices/{slice_id}/sla", {
          params: { path: { slice_id: sliceId }, query: { since: since() } },
        }),
      ),
    refetchInterval: 5000,
  });
  // The window's violations (oldest first, 500 a request, at most MAX_VIOLATIONS), merged into
  // episodes here; the episodes are paged 20 at a time.
  const [page, setPage] = useState(1);
  const paging = { page, q: "", sort: "-started_at", limit: HISTORY_PAGE };
  const history = useQuery({
    queryKey: ["violations", { sliceId, win, all: true }],
    queryFn: async () => {
      const from = since();
      const rows: Violation[] = [];
      let count = 0;
      do {
        const got = await unwrap(
          api.GET("/api/v1/violations", {
            params: {
              query: {
                slice_id: sliceId,
                since: from,
                limit: 500,
                offset: rows.length,
                sort: "-started_at",
              },
            },
          }),
        );
        rows.push(...got.data);
        count = got.count;
        if (got.data.length === 0) break;
      } while (rows.length < count && rows.length < MAX_VIOLATIONS);
      return { episodes: mergeEpisodes(rows), violations: count, truncated: rows.length < count };
    },
    select: (all) => ({
      ...all,
      count: all.episodes.length,
      data: all.episodes.slice((page - 1) * HISTORY_PAGE, page * HISTORY_PAGE),
    }),
    refetchInterval: 5000,
    placeholderData: keepPreviousData,
  });
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2} size="h4">
          SLA history
        </Title>
        <SegmentedControl
          size="xs"
          aria-label="History window"
          value={win}
          onChange={(v) => {
            setWin(v as WindowKey);
            setPage(1);
          }}
          data={Object.entries(WINDOWS).map(([value, w]) => ({ value, label: w.label }))}
        />
      </Group>
      {summary.isError && <ProblemAlert error={summary.error} />}
      <Group>
        {(summary.data?.backends ?? []).map((b) => (
          <Badge
            key={b.backend_id}
            size="lg"
            variant="light"
            data-testid={`within-sla-${b.backend_id}`}
            color={
              b.within_sla_pct == null
                ? "gray"
                : b.within_sla_pct >= 99.9
                  ? "green"
                  : b.open_violations
                    ? "red"
                    : "yellow"
            }>
            {backendNames.get(b.backend_id) ?? `backend ${b.backend_id}`}:{" "}
            {b.within_sla_pct == null ? "no data" : `${b.within_sla_pct} % within SLA`} · {b.violations} violation
            {b.violations === 1 ? "" : "s"}
          </Badge>
        ))}
      </Group>
      {history.data && history.data.violations > 0 && (
        <Text size="sm" c="dimmed" data-testid="episode-summary">
          {history.data.violations} violation{history.data.violations === 1 ? "" : "s"} in {history.data.count} episode
          {history.data.count === 1 ? "" : "s"}: violations of one check less than {EPISODE_HOLD_S} s apart are one
          episode.
          {history.data.truncated && ` Only the newest ${MAX_VIOLATIONS} violations are grouped.`}
        </Text>
      )}
      <DataTable
        alignTop
        label="SLA history"
        query={history}
        params={paging}
        onPage={setPage}
        rowKey={(e) => e.key}
        pagerWhenOnePage={false}
        minWidth={760}
        empty={`No violations in the ${WINDOWS[win].label}.`}
        columns={[
          { key: "backend", header: "Backend", cell: (e) => e.backendName },
          { key: "lane", header: "Lane", cell: (e) => e.lane ?? "all" },
          {
            key: "metric",
            header: "Metric",
            cell: (e) => (
              <Badge color="red" variant="light">
                {metricName(e.metric)}
              </Badge>
            ),
          },
          // a value and its unit stay on one line (a phone squeezed "≤ 250 ms" one word a line)
          {
            key: "worst",
            header: "Worst",
            cell: (e) => <span style={NOWRAP}>{fmt(e.worst, metricUnit(e.metric))}</span>,
          },
          {
            key: "limit",
            header: "Limit",
            cell: (e) => (
              <span style={NOWRAP}>{`${e.below ? "≥" : "≤"} ${fmt(e.threshold, metricUnit(e.metric))}`}</span>
            ),
          },
          { key: "from", header: "From", cell: (e) => <Time value={e.startedAt} /> },
          {
            key: "to",
            header: "To",
            cell: (e) => (e.endedAt ? <Time value={e.endedAt} /> : <Badge color="red">open</Badge>),
          },
          {
            key: "duration",
            header: "Duration",
            cell: (e) => (
              <span style={NOWRAP} title={`${e.violations} violation${e.violations === 1 ? "" : "s"} merged`}>
                {durationText(e.startedAt, e.endedAt)}
                {e.violations > 1 ? ` (${e.violations}×)` : ""}
              </span>
            ),
          },
          {
            key: "explain",
            header: "Explain",
            hiddenHeader: true,
            narrow: true,
            cell: (e) => (
              <Button
                size="xs"
                variant="subtle"
                onClick={() => setExplained(e.worstViolation)}
                aria-label={`Explain the worst violation (${metricName(e.metric)} from ${formatTime(e.startedAt)})`}>
                Explain
              </Button>
            ),
          },
        ]}
      />
      <ExplainDialog violation={explained} onClose={() => setExplained(null)} />
    </Stack>
  );
}
