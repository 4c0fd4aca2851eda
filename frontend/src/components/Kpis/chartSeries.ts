// Pure helpers of the KPI charts: building one series per (lane, source) from samples, aligning
// them on one time axis with real gaps (null: "no data here", drawn as a break) apart from
// alignment holes (undefined: another series has a point here, this one does not; joined over),
// the last value for the live legend, and 24-hour time labels with the zone named.
import type { Schemas } from "../../api/client";

type KpiSample = Schemas["KpiSamplePublic"];

/** Who measured a sample (docs/kpis.md). Unknown sources keep their own name. */
export const SOURCE_LABELS: Record<string, string> = {
  counters: "data-plane counters",
  probe: "STAMP probes",
  testbed: "testbed meter",
};
const SOURCE_ORDER = ["counters", "probe", "testbed"];
export const sourceLabel = (s: string) => SOURCE_LABELS[s] ?? s;

export interface LaneSeries {
  lane: number; // < 0: all lanes together
  source?: string;
  label: string; // e.g. "lane 4 · video"
  points: [number, number | null][]; // [unix seconds, value]
}

/** The sources present in ``samples``, in a fixed order (counters, probe, testbed, then others). */
export function sourcesOf(samples: { source: string }[]): string[] {
  const found = [...new Set(samples.map((s) => s.source))];
  const rank = (s: string) => (SOURCE_ORDER.includes(s) ? SOURCE_ORDER.indexOf(s) : SOURCE_ORDER.length);
  return found.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/**
 * Series of one metric, one per (lane, source): sources are never mixed into one line. A source
 * whose samples all lack the metric (null: that data plane does not measure it) gives no series;
 * ``notMeasured`` lists those sources so the chart can say so instead of drawing 0.
 */
export function buildSeries(
  samples: KpiSample[],
  lanes: number[],
  laneLabel: (lane: number) => string,
  pick: (s: KpiSample) => number | null,
  total?: { label: string; sum: (rows: KpiSample[]) => number | null },
): { series: LaneSeries[]; notMeasured: string[] } {
  const sources = sourcesOf(samples);
  const several = sources.length > 1;
  const series: LaneSeries[] = [];
  const notMeasured: string[] = [];
  for (const source of sources) {
    const mine = samples.filter((s) => s.source === source);
    if (mine.every((s) => pick(s) === null)) {
      notMeasured.push(source);
      continue;
    }
    const suffix = several ? ` (${sourceLabel(source)})` : "";
    for (const lane of lanes) {
      const points = mine
        .filter((s) => s.lane === lane)
        .map((s) => [Date.parse(s.ts) / 1000, pick(s)] as [number, number | null]);
      series.push({ lane, source, label: laneLabel(lane) + suffix, points });
    }
    if (total) {
      const byTs = new Map<string, KpiSample[]>();
      for (const s of mine) byTs.set(s.ts, [...(byTs.get(s.ts) ?? []), s]);
      series.push({
        lane: -1,
        source,
        label: total.label + suffix,
        points: [...byTs.entries()].map(
          ([ts, rows]) => [Date.parse(ts) / 1000, total.sum(rows)] as [number, number | null],
        ),
      });
    }
  }
  return { series, notMeasured };
}

/** The usual spacing of a series' points (median step), or null with fewer than two points. */
export function typicalStep(times: number[]): number | null {
  if (times.length < 2) return null;
  const steps = times
    .slice(1)
    .map((t, i) => t - (times[i] ?? t))
    .filter((d) => d > 0)
    .sort((a, b) => a - b);
  return steps[Math.floor(steps.length / 2)] ?? null;
}

/**
 * Intervals at the newest edge of a live chart may not be collected yet: the collector, a probe or
 * the testbed meter posts an interval after it ends, and the live stream and the poll deliver
 * out of order. A hole of at most ``SETTLE_STEPS`` usual steps that ends within as many steps of
 * the newest time is such an interval still arriving, not a gap; once older, it is one.
 */
export const SETTLE_STEPS = 3;
export function stillArriving(from: number, to: number, newest: number, step: number): boolean {
  const settle = SETTLE_STEPS * step;
  return to - from <= settle && newest - to <= settle;
}

/**
 * The points sorted, with a null point inserted inside every hole longer than ``factor`` times the
 * series' usual step, so the line breaks there instead of bridging minutes without data.
 */
export function withGaps(points: [number, number | null][], factor = 2.5): [number, number | null][] {
  const sorted = [...points].sort((a, b) => a[0] - b[0]);
  const step = typicalStep(sorted.map((p) => p[0]));
  if (step === null) return sorted;
  const newest = (sorted.at(-1) as [number, number | null])[0];
  const out: [number, number | null][] = [];
  let prev: number | null = null;
  for (const p of sorted) {
    if (prev !== null && p[0] - prev > factor * step && !stillArriving(prev, p[0], newest, step)) {
      out.push([(p[0] + prev) / 2, null]);
    }
    out.push(p);
    prev = p[0];
  }
  return out;
}

/**
 * The stretches of time where no series has a value (no sample, or only samples without this
 * metric): holes longer than ``factor`` times the usual step of all series together. The chart
 * shades them as "no data" — a gap is never bridged by a line or filled with zeros.
 */
export function gapSpans(series: { points: [number, number | null][] }[], factor = 2.5): [number, number][] {
  const all = series.flatMap((s) => s.points);
  const times = [...new Set(all.map((p) => p[0]))].sort((a, b) => a - b);
  const valued = [...new Set(all.filter((p) => p[1] !== null).map((p) => p[0]))].sort((a, b) => a - b);
  // each series' own spacing: lanes read a few ms apart must not make the step of the union a
  // few ms (every interval between two reads would then be a "gap")
  const steps = series
    .map((s) => typicalStep([...new Set(s.points.map((p) => p[0]))].sort((a, b) => a - b)))
    .filter((x): x is number => x !== null)
    .sort((a, b) => a - b);
  const step = steps[Math.floor(steps.length / 2)] ?? typicalStep(times);
  if (step === null || valued.length === 0) return [];
  const spans: [number, number][] = [];
  // before the first value and after the last, inside the drawn axis (samples without the metric)
  const first = valued[0] as number;
  const last = valued.at(-1) as number;
  const newest = times.at(-1) as number;
  // the newest interval or two, not collected yet, are no gap (stillArriving)
  const hole = (a: number, b: number) => b - a > factor * step && !stillArriving(a, b, newest, step);
  if (hole(times[0] as number, first)) spans.push([times[0] as number, first]);
  for (let i = 1; i < valued.length; i++) {
    const a = valued[i - 1] as number;
    const b = valued[i] as number;
    if (hole(a, b)) spans.push([a, b]);
  }
  if (hole(last, newest)) spans.push([last, newest]);
  return spans;
}

/**
 * All series on one sorted time axis (uPlot's columns). A series' value at a time it has no
 * point for is undefined (joined over), a gap or an unmeasured sample is null (a break).
 */
export function alignSeries(series: { points: [number, number | null][] }[]): {
  times: number[];
  columns: (number | null | undefined)[][];
} {
  const gapped = series.map((s) => withGaps(s.points));
  const times = [...new Set(gapped.flatMap((pts) => pts.map((p) => p[0])))].sort((a, b) => a - b);
  const columns = gapped.map((pts) => {
    const m = new Map(pts);
    return times.map((t) => (m.has(t) ? (m.get(t) as number | null) : undefined));
  });
  return { times, columns };
}

/** The newest value of a column that is a number (the live legend when not hovering). */
export function lastValue(column: readonly (number | null | undefined)[]): number | null {
  for (let i = column.length - 1; i >= 0; i--) {
    const v = column[i];
    if (typeof v === "number") return v;
  }
  return null;
}

/** "12.3" style: three significant digits at most, no exponent for KPI-sized values. */
export function formatValue(v: number | null | undefined, unit: string): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "—";
  const abs = Math.abs(v);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return `${v.toFixed(digits)} ${unit}`.trim();
}

const clockFormats = new Map<string, Intl.DateTimeFormat>();
function clock(kind: "hm" | "hms" | "dhm" | "zone", timeZone?: string): Intl.DateTimeFormat {
  const key = `${kind}|${timeZone ?? ""}`;
  let f = clockFormats.get(key);
  if (!f) {
    const base = { hourCycle: "h23", timeZone } as const;
    f = new Intl.DateTimeFormat(
      "en-GB",
      kind === "hm"
        ? { ...base, hour: "2-digit", minute: "2-digit" }
        : kind === "hms"
          ? { ...base, hour: "2-digit", minute: "2-digit", second: "2-digit" }
          : kind === "dhm"
            ? { ...base, day: "2-digit", month: "short", hour: "2-digit", minute: "2-digit" }
            : { ...base, hour: "2-digit", timeZoneName: "short" },
    );
    clockFormats.set(key, f);
  }
  return f;
}

/** The short name of the zone times are shown in ("CET", "UTC", "GMT+5:30"). */
export function zoneName(timeZone?: string, at: Date = new Date()): string {
  return (
    clock("zone", timeZone)
      .formatToParts(at)
      .find((p) => p.type === "timeZoneName")?.value ?? ""
  );
}

/** The time axis shows at least this much: a few samples seconds apart would otherwise be
 * spread over ticks a fraction of a second apart, each labelled with the same second. */
export const MIN_AXIS_SPAN_S = 10;

/** The x range for samples from ``min`` to ``max`` (unix seconds): theirs, or the ten seconds up to
 * the newest when they span less (one sample alone would stretch the axis over years). */
export function timeRange(min: number, max: number): [number, number] {
  return max - min < MIN_AXIS_SPAN_S ? [max - MIN_AXIS_SPAN_S, max + 1] : [min, max];
}

/**
 * An axis tick at ``seconds`` (unix) on an axis spanning ``spanS`` seconds, on a 24-hour clock:
 * seconds for spans up to 15 min, the day for spans over 20 h.
 */
export function axisTime(seconds: number, spanS: number, timeZone?: string): string {
  const kind = spanS > 20 * 3600 ? "dhm" : spanS <= 900 ? "hms" : "hm";
  return clock(kind, timeZone).format(new Date(seconds * 1000));
}
