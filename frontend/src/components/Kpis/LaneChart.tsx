// One KPI (e.g. delay) for every lane of a slice over time, with the SLA threshold as a dashed line.
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import { Box, Paper, Text } from "@mantine/core";
import { useElementSize } from "@mantine/hooks";

const LANE_COLORS = ["#868e96", "#4263eb", "#1098ad", "#37b24d", "#f59f00", "#f76707", "#d6336c", "#7048e8"];

export interface LaneSeries {
  lane: number;
  points: [number, number | null][]; // [unix seconds, value]
}

export function LaneChart({ title, unit, series, threshold }: {
  title: string;
  unit: string;
  series: LaneSeries[];
  threshold: number | null | undefined;
}) {
  const el = useRef<HTMLDivElement>(null);
  // The chart follows its container's width (laptop: two columns, tablet: one).
  const { ref: box, width: boxWidth } = useElementSize();
  const width = Math.max(240, Math.floor(boxWidth));
  const plot = useRef<uPlot | null>(null);
  const lanesKey = series.map((s) => s.lane).join(",") + `|${threshold ?? ""}`;

  // Align every lane on one time axis (uPlot wants columns).
  const times = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  const columns: (number | null)[][] = series.map((s) => {
    const m = new Map(s.points);
    return times.map((t) => m.get(t) ?? null);
  });
  const data: uPlot.AlignedData = [times, ...columns, ...(threshold != null ? [times.map(() => threshold)] : [])];

  useEffect(() => {
    if (!el.current) return;
    const opts: uPlot.Options = {
      width,
      height: 200,
      // KPIs are never negative: start the y axis at 0 so a flat line reads as its value.
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.15 : 1] } },
      axes: [{}, { label: unit, size: 60 }],
      series: [
        {},
        ...series.map((s) => ({ label: `lane ${s.lane}`, stroke: LANE_COLORS[s.lane % 8], width: 2, spanGaps: true })),
        ...(threshold != null ? [{ label: "SLA", stroke: "#e03131", dash: [6, 4], width: 1.5 }] : []),
      ],
    };
    plot.current = new uPlot(opts, data, el.current);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
    // Rebuilt only when the lanes or the threshold change; data and size updates go through
    // setData / setSize below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [lanesKey, unit]);

  useEffect(() => {
    plot.current?.setSize({ width, height: 200 });
  }, [width]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  return (
    <Paper withBorder p="xs" role="figure" aria-label={`${title} per lane${threshold != null ? `, SLA ${threshold} ${unit}` : ""}`}>
      <Text fw={600} size="sm">{title}{threshold != null && <Text span c="red" size="xs"> — SLA {threshold} {unit}</Text>}</Text>
      <Box ref={box}>
        <div ref={el} data-testid={`chart-${title}`} data-points={times.length} />
      </Box>
    </Paper>
  );
}
