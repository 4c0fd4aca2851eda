// One KPI over time: a series per lane (named by the slice's services), plus horizontal limit
// lines (the SLA limit in red, the guaranteed rate in dark teal). Lane colours are blues,
// greens, violets and greys only: red always means a violated SLA, never a lane.
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import { Box, Group, Paper, Text } from "@mantine/core";
import { useElementSize } from "@mantine/hooks";

export const LANE_COLORS = ["#868e96", "#1c7ed6", "#0ca678", "#7048e8", "#1098ad", "#5c940d", "#364fc7", "#862e9c"];
export const SLA_RED = "#e03131";
export const GUARANTEE_TEAL = "#087f5b";
const TOTAL_INK = "#212529"; // a series with lane < 0: all lanes together

export interface LaneSeries {
  lane: number;
  label: string; // e.g. "lane 4 · video"
  points: [number, number | null][]; // [unix seconds, value]
}

export interface Limit {
  kind: "sla" | "guarantee" | "rate_limit";
  label: string; // e.g. "SLA max 20 ms"
  value: number;
  color: string;
}

const SPOKEN: Record<Limit["kind"], string> = { sla: "SLA", guarantee: "guaranteed", rate_limit: "rate limit" };

export function LaneChart({ title, unit, series, limits }: {
  title: string;
  unit: string;
  series: LaneSeries[];
  limits: Limit[];
}) {
  const el = useRef<HTMLDivElement>(null);
  // The chart follows its container's width (laptop: two columns, tablet: one).
  const { ref: box, width: boxWidth } = useElementSize();
  const width = Math.max(240, Math.floor(boxWidth));
  const plot = useRef<uPlot | null>(null);
  const shapeKey = series.map((s) => s.label).join(",") + "|" + limits.map((l) => `${l.label}=${l.value}`).join(",");

  // Align every lane on one time axis (uPlot wants columns).
  const times = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  const columns: (number | null)[][] = series.map((s) => {
    const m = new Map(s.points);
    return times.map((t) => m.get(t) ?? null);
  });
  const data: uPlot.AlignedData = [times, ...columns, ...limits.map((l) => times.map(() => l.value))];

  useEffect(() => {
    if (!el.current) return;
    const opts: uPlot.Options = {
      width,
      height: 220,
      // KPIs are never negative: the y axis starts at 0 so a flat line reads as its value,
      // and always shows the limits, so "far below the SLA" is visible as such.
      scales: {
        // one sample alone would stretch the axis over years: show the minute before it
        x: { time: true, range: (_u, min, max) => (min === max ? [min - 60, max + 1] : [min, max]) },
        y: { range: (_u, _min, max) => {
          const top = Math.max(max, ...limits.map((l) => l.value));
          return [0, top > 0 ? top * 1.15 : 1];
        } },
      },
      axes: [{ label: "time (your zone)", labelSize: 20 }, { label: unit, size: 64, labelSize: 20 }],
      series: [
        {},
        ...series.map((s) => ({ label: s.label, stroke: s.lane < 0 ? TOTAL_INK : LANE_COLORS[s.lane % 8], width: 2,
          spanGaps: false })),
        ...limits.map((l) => ({ label: l.label, stroke: l.color, dash: [6, 4], width: 1.5, points: { show: false } })),
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
    plot.current?.setSize({ width, height: 220 });
  }, [width]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  const described = limits.map((l) => `, ${SPOKEN[l.kind]} ${l.value} ${unit}`).join("");
  return (
    <Paper withBorder p="xs" role="figure" aria-label={`${title} per lane${described}`}>
      <Group gap="xs" justify="space-between">
        <Text fw={600} size="sm">{title} <Text span c="dimmed" size="xs">({unit})</Text></Text>
        <Group gap={6}>
          {limits.map((l) => <Text key={l.label} size="xs" style={{ color: l.color }}>{l.label}</Text>)}
        </Group>
      </Group>
      <Box ref={box}>
        {/* data-last: the newest sample's time, which moves even when the full window keeps its size */}
        <div ref={el} data-testid={`chart-${title}`} data-points={times.length} data-last={times.at(-1) ?? ""} />
      </Box>
    </Paper>
  );
}
