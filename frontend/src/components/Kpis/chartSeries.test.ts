import { describe, expect, it } from "vitest";
import type { Schemas } from "../../api/client";
import {
  alignSeries,
  axisTime,
  gapSpans,
  buildSeries,
  formatValue,
  lastValue,
  sourcesOf,
  stillArriving,
  timeRange,
  typicalStep,
  withGaps,
  zoneName,
} from "./chartSeries";

type KpiSample = Schemas["KpiSamplePublic"];

function sample(over: Partial<KpiSample>): KpiSample {
  return {
    slice_id: 1,
    backend_id: 1,
    lane: 0,
    source: "counters",
    ts: "2026-11-27T10:00:00Z",
    interval_s: 1,
    tx_packets: 0,
    rx_packets: 0,
    tx_bytes: 0,
    rx_bytes: 0,
    throughput_bps: 1e6,
    loss_pct: 0,
    delay_mean_ms: null,
    delay_p50_ms: null,
    delay_p99_ms: null,
    jitter_ms: null,
    drops: {},
    ecn_marks: 0,
    ...over,
  };
}
const at = (s: number) => new Date(Date.UTC(2026, 10, 27, 10, 0, s)).toISOString();

describe("withGaps", () => {
  it("breaks the line inside a hole longer than 2.5 usual steps, not inside regular spacing", () => {
    const pts: [number, number | null][] = [
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
      [10, 2],
      [11, 2],
    ];
    const out = withGaps(pts);
    expect(out.filter((p) => p[1] === null)).toEqual([[6.5, null]]);
    expect(
      withGaps([
        [0, 1],
        [1, 1],
        [2, 1],
      ]).some((p) => p[1] === null),
    ).toBe(false);
  });
  it("sorts and leaves one point alone", () => {
    expect(withGaps([[5, 1]])).toEqual([[5, 1]]);
    expect(
      withGaps([
        [2, 1],
        [1, 1],
      ]).map((p) => p[0]),
    ).toEqual([1, 2]);
    expect(typicalStep([1])).toBeNull();
  });
});

describe("alignSeries", () => {
  it("joins over another series' times (undefined) and keeps real gaps (null)", () => {
    const { times, columns } = alignSeries([
      {
        points: [
          [0, 1],
          [2, 1],
          [4, null],
          [6, 1],
        ],
      },
      {
        points: [
          [1, 5],
          [3, 5],
        ],
      },
    ]);
    expect(times).toEqual([0, 1, 2, 3, 4, 6]);
    expect(columns[0]).toEqual([1, undefined, 1, undefined, null, 1]);
    expect(columns[1]).toEqual([undefined, 5, undefined, 5, undefined, undefined]);
  });
  it("is empty without points", () => {
    expect(alignSeries([{ points: [] }])).toEqual({ times: [], columns: [[]] });
  });
});

describe("buildSeries", () => {
  const label = (lane: number) => `lane ${lane}`;
  it("never mixes sources into one line and names the source when there are several", () => {
    const samples = [
      sample({ lane: 0, source: "counters", ts: at(0), loss_pct: 1 }),
      sample({ lane: 0, source: "probe", ts: at(0), loss_pct: 2 }),
      sample({ lane: 0, source: "counters", ts: at(1), loss_pct: 1 }),
      sample({ lane: 0, source: "probe", ts: at(1), loss_pct: 2 }),
    ];
    const { series } = buildSeries(samples, [0], label, (s) => s.loss_pct);
    expect(series.map((s) => s.label)).toEqual(["lane 0 (data-plane counters)", "lane 0 (STAMP probes)"]);
    expect(series[0]?.points.map((p) => p[1])).toEqual([1, 1]);
    expect(series[1]?.points.map((p) => p[1])).toEqual([2, 2]);
  });
  it("reports a metric a source does not measure instead of drawing it", () => {
    const samples = [sample({ source: "counters", delay_p99_ms: null }), sample({ source: "probe", delay_p99_ms: 3 })];
    const r = buildSeries(samples, [0], label, (s) => s.delay_p99_ms);
    expect(r.notMeasured).toEqual(["counters"]);
    expect(r.series.map((s) => s.source)).toEqual(["probe"]);
    const only = buildSeries([sample({ delay_p99_ms: null })], [0], label, (s) => s.delay_p99_ms);
    expect(only).toEqual({ series: [], notMeasured: ["counters"] });
  });
  it("adds the total as a lane < 0 per source, label without suffix for one source", () => {
    const samples = [sample({ lane: 0, throughput_bps: 1e6 }), sample({ lane: 1, throughput_bps: 2e6 })];
    const { series } = buildSeries(samples, [0, 1], label, (s) => s.throughput_bps / 1e6, {
      label: "all lanes",
      sum: (rows) => rows.reduce((a, s) => a + s.throughput_bps, 0) / 1e6,
    });
    const total = series.find((s) => s.lane < 0);
    expect(total?.label).toBe("all lanes");
    expect(total?.points.map((p) => p[1])).toEqual([3]);
  });
  it("orders sources counters, probe, testbed, then others", () => {
    expect(sourcesOf([{ source: "x" }, { source: "testbed" }, { source: "counters" }, { source: "probe" }])).toEqual([
      "counters",
      "probe",
      "testbed",
      "x",
    ]);
  });
});

describe("legend values", () => {
  it("the last number of a column, skipping gaps and holes", () => {
    expect(lastValue([1, 2, null, undefined])).toBe(2);
    expect(lastValue([null])).toBeNull();
  });
  it("formats with the unit and a dash for no value, never 0", () => {
    expect(formatValue(12.345, "ms")).toBe("12.3 ms");
    expect(formatValue(0.01234, "%")).toBe("0.012 %");
    expect(formatValue(null, "ms")).toBe("—");
  });
});

describe("axis time", () => {
  const t = Date.UTC(2026, 10, 27, 15, 4, 5) / 1000;
  it("uses a 24-hour clock in the zone given", () => {
    expect(axisTime(t, 3600, "UTC")).toBe("15:04");
    expect(axisTime(t, 300, "UTC")).toBe("15:04:05");
    expect(axisTime(t, 86_400, "Europe/Berlin")).toMatch(/^27 Nov,? 16:04$/);
    expect(axisTime(t, 3600, "UTC")).not.toMatch(/[AP]M/i);
  });
  it("names the zone", () => {
    expect(zoneName("UTC")).toBe("UTC");
    expect(zoneName("Europe/Berlin", new Date(t * 1000))).toMatch(/CET|GMT\+1/);
  });
});

describe("gapSpans", () => {
  it("finds where no series has a value, not a hole of one series covered by another", () => {
    const lane1: [number, number | null][] = [
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
      [20, 1],
      [21, 1],
    ];
    const lane2: [number, number | null][] = [
      [0, 2],
      [1, 2],
      [2, 2],
      [3, 2],
      [4, 2],
      [5, 2],
      [20, 2],
    ];
    expect(gapSpans([{ points: lane1 }, { points: lane2 }])).toEqual([[5, 20]]);
    expect(gapSpans([{ points: lane1 }])).toEqual([[3, 20]]);
    expect(
      gapSpans([
        {
          points: [
            [0, 1],
            [1, 1],
            [2, 1],
          ],
        },
      ]),
    ).toEqual([]);
  });
  it("shades samples without the metric (null), not as zero, and nothing without values", () => {
    const pts: [number, number | null][] = [
      [0, 1],
      [1, 1],
      [2, null],
      [3, null],
      [4, null],
      [5, 1],
      [6, null],
      [7, null],
      [8, null],
      [9, null],
      [10, null],
    ];
    expect(gapSpans([{ points: pts }])).toEqual([
      [1, 5],
      [5, 10],
    ]);
    expect(
      gapSpans([
        {
          points: [
            [0, null],
            [1, null],
          ],
        },
      ]),
    ).toEqual([]);
    expect(gapSpans([])).toEqual([]);
  });
});

describe("the newest intervals, not collected yet (#29)", () => {
  // one sample a second for 42 s; the interval ending at 43 not yet posted when 44 arrives
  const upTo = (n: number) => Array.from({ length: n + 1 }, (_, t) => [t, 1] as [number, number | null]);
  it("are not shaded or broken as a gap", () => {
    const live: [number, number | null][] = [...upTo(42), [44, 1]];
    expect(gapSpans([{ points: live }])).toEqual([]);
    expect(withGaps(live).some((p) => p[1] === null)).toBe(false);
    // its timestamp a little late too (0.9 s): still arriving, not a gap
    expect(gapSpans([{ points: [...upTo(42), [44.9, 1]] }])).toEqual([]);
    // the newest samples without the metric yet (a probe's reply still due)
    expect(gapSpans([{ points: [...upTo(42), [43, null], [44, null]] }])).toEqual([]);
  });
  it("become a gap once older, and a long outage ending now is one at once", () => {
    const older: [number, number | null][] = [
      ...upTo(40).filter(([t]) => t !== 37 && t !== 38),
      [41, 1],
      [42, 1],
      [43, 1],
    ];
    expect(gapSpans([{ points: older }])).toEqual([[36, 39]]);
    expect(withGaps(older).filter((p) => p[1] === null)).toEqual([[37.5, null]]);
    const outage: [number, number | null][] = [...upTo(20), [60, 1]];
    expect(gapSpans([{ points: outage }])).toEqual([[20, 60]]);
    expect(withGaps(outage).filter((p) => p[1] === null)).toEqual([[40, null]]);
    expect(stillArriving(20, 60, 60, 1)).toBe(false);
    expect(stillArriving(42, 44, 44, 1)).toBe(true);
  });
});

describe("lanes read a few ms apart (#29)", () => {
  it("are no gap between every two intervals", () => {
    const lane = (offset: number) => ({
      points: Array.from({ length: 30 }, (_, t) => [t + offset, 1] as [number, number | null]),
    });
    expect(gapSpans([lane(0), lane(0.002), lane(0.004), lane(0.006)])).toEqual([]);
    const holed = [lane(0), lane(0.002)].map((l) => ({ points: l.points.filter(([t]) => t < 10 || t > 15) }));
    expect(gapSpans(holed)).toEqual([[9.002, 15.002]]);
  });
});

describe("timeRange", () => {
  it("shows the ten seconds up to the newest sample when the samples span less", () => {
    expect(timeRange(1000, 1000)).toEqual([990, 1001]);
    expect(timeRange(1000, 1001.2)).toEqual([991.2, 1002.2]); // two samples a second apart: whole-second ticks
  });
  it("keeps the samples' own range from ten seconds up", () => {
    expect(timeRange(1000, 1010)).toEqual([1000, 1010]);
  });
});
