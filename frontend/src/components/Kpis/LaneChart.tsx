// One KPI over time: a series per lane (named by the slice's services), plus horizontal limit
// lines (the SLA limit in red, the guaranteed rate in dark teal). Lane colours are blues,
// greens, violets and greys only: red always means a violated SLA, never a lane.
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import { Box, Center, Group, Paper, Text } from "@mantine/core";
import { useElementSize } from "@mantine/hooks";
import { formatTime } from "../common/time";
import {
  alignSeries,
  axisTime,
  formatValue,
  gapSpans,
  lastValue,
  sourceLabel,
  timeRange,
  zoneName,
  type LaneSeries,
} from "./chartSeries";

export type { LaneSeries } from "./chartSeries";

export const LANE_COLORS = ["#868e96", "#1c7ed6", "#0ca678", "#7048e8", "#1098ad", "#5c940d", "#364fc7", "#862e9c"];
export const SLA_RED = "#e03131";
export const GUARANTEE_TEAL = "#087f5b";
// All lanes together: a thin light dashed line, hidden until picked in the legend, so it never
// hides the lanes it sums.
const TOTAL_INK = "#adb5bd";
const HEIGHT = 220;
// "No data" shading: light grey with dark text (contrast 4.5:1 and more against it).
const GAP_FILL = "rgba(134, 142, 150, 0.18)";
const GAP_INK = "#495057";
const GAPS_LISTED = 3;
// A second (third) source of the same lane: same colour, its own dash, never one line with the first.
const SOURCE_DASH: (number[] | undefined)[] = [undefined, [2, 3], [8, 3]];

export interface Limit {
  kind: "sla" | "guarantee" | "rate_limit";
  label: string; // e.g. "SLA max 20 ms"
  value: number;
  color: string;
}

const SPOKEN: Record<Limit["kind"], string> = { sla: "SLA", guarantee: "guaranteed", rate_limit: "rate limit" };

export function LaneChart({
  title,
  unit,
  series,
  limits,
  notMeasured = [],
}: {
  title: string;
  unit: string;
  series: LaneSeries[];
  limits: Limit[];
  /** sources whose samples lack this metric: said in words, never drawn as 0 */
  notMeasured?: string[];
}) {
  const el = useRef<HTMLDivElement>(null);
  // The chart follows its container's width (laptop: two columns, tablet: one).
  const { ref: box, width: boxWidth } = useElementSize();
  const width = Math.max(240, Math.floor(boxWidth));
  const plot = useRef<uPlot | null>(null);
  const { times, columns } = alignSeries(series);
  const gaps = gapSpans(series);
  // read by the draw hook, which uPlot keeps from the chart's creation; updated before it draws
  const gapsRef = useRef(gaps);
  useEffect(() => {
    gapsRef.current = gaps;
  });
  const empty = times.length === 0;
  const shapeKey =
    series.map((s) => s.label).join(",") + "|" + limits.map((l) => `${l.label}=${l.value}`).join(",") + `|${empty}`;
  // uPlot's types say (number | null)[]; undefined (an alignment hole, joined over) is what it
  // documents for "no point of this series here", null for a gap.
  const data = [times, ...columns, ...limits.map((l) => times.map(() => l.value))] as uPlot.AlignedData;
  const sources = [...new Set(series.map((s) => s.source ?? ""))];
  const zone = zoneName();

  useEffect(() => {
    if (!el.current || empty) return;
    const opts: uPlot.Options = {
      width,
      height: HEIGHT,
      // KPIs are never negative: the y axis starts at 0 so a flat line reads as its value,
      // and always shows the limits, so "far below the SLA" is visible as such.
      scales: {
        // from the samples' own times: for a single sample uPlot widens the span to 86 400 of its
        // time units (1 000 days in seconds) before asking, which read "01 Jan, 00:00" on every tick
        x: {
          time: true,
          range: (u, min, max) => {
            const xs = u.data[0];
            const first = xs[0],
              last = xs[xs.length - 1];
            return first != null && last != null ? timeRange(first, last) : [min, max];
          },
        },
        y: {
          range: (_u, _min, max) => {
            const top = Math.max(max, ...limits.map((l) => l.value));
            return [0, top > 0 ? top * 1.15 : 1];
          },
        },
      },
      axes: [
        // 24-hour clock in the browser's zone, like every other time on the page
        {
          label: `time (${zone})`,
          labelSize: 20,
          space: 80, // room for "17:12:15" between ticks
          values: (u, splits) => {
            const span = (u.scales.x?.max ?? 0) - (u.scales.x?.min ?? 0);
            return splits.map((t) => axisTime(t, span));
          },
        },
        { label: unit, size: 64, labelSize: 20 },
      ],
      hooks: {
        // under the axes and lines: where no sample exists, a shaded band saying so
        drawClear: [
          (u: uPlot) => {
            const ctx = u.ctx;
            const px = uPlot.pxRatio;
            ctx.save();
            for (const [a, b] of gapsRef.current) {
              const x0 = u.valToPos(a, "x", true);
              const x1 = u.valToPos(b, "x", true);
              ctx.fillStyle = GAP_FILL;
              ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
              if (x1 - x0 > 56 * px) {
                ctx.fillStyle = GAP_INK;
                ctx.font = `${12 * px}px sans-serif`;
                ctx.textAlign = "center";
                ctx.fillText("no data", (x0 + x1) / 2, u.bbox.top + 16 * px);
              }
            }
            ctx.restore();
          },
        ],
      },
      series: [
        { label: "time", value: (_u, v) => (v == null ? "latest" : formatTime(new Date(v * 1000))) },
        ...series.map((s, i) => {
          const dash = SOURCE_DASH[Math.max(0, sources.indexOf(s.source ?? "")) % SOURCE_DASH.length];
          const total = s.lane < 0;
          return {
            label: s.label,
            stroke: total ? TOTAL_INK : LANE_COLORS[s.lane % 8],
            width: total ? 1.5 : 2,
            dash: total ? [4, 4] : dash,
            show: !total,
            spanGaps: false,
            // not hovering: the newest value, so the legend reads live
            value: (_u: uPlot, v: number | null, _si: number, idx: number | null) =>
              formatValue(idx == null ? lastValue(columns[i] ?? []) : v, unit),
          };
        }),
        ...limits.map((l) => ({
          label: l.label,
          stroke: l.color,
          dash: [6, 4],
          width: 1.5,
          points: { show: false },
          value: () => formatValue(l.value, unit),
        })),
      ],
    };
    plot.current = new uPlot(opts, data, el.current);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
    // Rebuilt only when the series or the limits change; data and size updates go through
    // setData / setSize below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shapeKey, unit]);

  useEffect(() => {
    plot.current?.setSize({ width, height: HEIGHT });
  }, [width]);

  useEffect(() => {
    if (!plot.current) return;
    plot.current.setData(data);
    // not hovering: refresh the legend's live (newest) values
    if ((plot.current.cursor.left ?? -1) < 0) plot.current.setLegend({ idx: null as unknown as number });
  });

  const described = limits.map((l) => `, ${SPOKEN[l.kind]} ${l.value} ${unit}`).join("");
  const unmeasured = notMeasured.length > 0 && (
    <Text size="xs" c="dimmed" data-testid="not-measured">
      Not measured by this data plane ({notMeasured.map(sourceLabel).join(", ")}).
    </Text>
  );
  return (
    <Paper withBorder p="xs" role="figure" aria-label={`${title} per lane${described}`}>
      <Group gap="xs" justify="space-between">
        <Text fw={600} size="sm">
          {title}{" "}
          <Text span c="dimmed" size="xs">
            ({unit})
          </Text>
        </Text>
        <Group gap={6}>
          {limits.map((l) => (
            <Text key={l.label} size="xs" style={{ color: l.color }}>
              {l.label}
            </Text>
          ))}
        </Group>
      </Group>
      {!empty && unmeasured}
      {!empty && gaps.length > 0 && (
        <Text size="xs" c="dimmed" data-testid="chart-gaps">
          No data{" "}
          {gaps
            .slice(0, GAPS_LISTED)
            .map(([a, b]) => `${axisTime(a, 0)}–${axisTime(b, 0)}`)
            .join(", ")}
          {gaps.length > GAPS_LISTED ? ` and ${gaps.length - GAPS_LISTED} more` : ""} (shaded).
        </Text>
      )}
      <Box ref={box}>
        {/* data-last: the newest sample's time, which moves even when the full window keeps its size */}
        <div
          ref={el}
          data-testid={`chart-${title}`}
          data-points={times.length}
          data-last={times.at(-1) ?? ""}
          data-gaps={gaps.length}
          data-last-gap-end={gaps.at(-1)?.[1] ?? ""}>
          {empty && (
            <Center h={HEIGHT + 40} data-testid="chart-empty">
              {notMeasured.length > 0 && series.length === 0 ? (
                unmeasured
              ) : (
                <Text c="dimmed" size="sm">
                  No data yet
                </Text>
              )}
            </Center>
          )}
        </div>
      </Box>
    </Paper>
  );
}
