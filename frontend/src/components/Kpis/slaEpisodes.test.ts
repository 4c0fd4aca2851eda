import { describe, expect, it } from "vitest";
import { durationText, EPISODE_HOLD_S, mergeEpisodes } from "./slaEpisodes";

let nextId = 1;
const T0 = Date.parse("2026-11-27T10:00:00Z");
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
function v(
  startS: number,
  endS: number | null,
  worst: number,
  over: Partial<{ lane: number | null; metric: string; backend_id: number; threshold: number; direction: string }> = {},
) {
  return {
    id: nextId++,
    slice_id: 7,
    backend_id: over.backend_id ?? 1,
    backend_name: "bmv2-lab",
    lane: over.lane === undefined ? 2 : over.lane,
    metric: over.metric ?? "loss_pct",
    threshold: over.threshold ?? 1,
    worst,
    started_at: at(startS),
    ended_at: endS === null ? null : at(endS),
    detail: { direction: over.direction ?? "above" },
  };
}

describe("SLA episodes", () => {
  it("merges a KPI flapping for four minutes into one episode with its span and worst value", () => {
    // a violation every 12 s for 4 minutes: open 6 s, closed 6 s
    const flaps = Array.from({ length: 20 }, (_, i) => v(i * 12, i * 12 + 6, 2 + (i === 13 ? 7.5 : i % 3)));
    const episodes = mergeEpisodes(flaps.reverse()); // the API answers newest first
    expect(episodes).toHaveLength(1);
    expect(episodes[0]).toMatchObject({ startedAt: at(0), endedAt: at(234), worst: 9.5, violations: 20 });
    expect(episodes[0]?.worstViolation.worst).toBe(9.5);
  });

  it("keeps checks apart: other lane, metric, backend or limit is another episode", () => {
    const episodes = mergeEpisodes([
      v(0, 5, 2),
      v(10, 15, 2, { lane: 3 }),
      v(10, 15, 30, { metric: "delay_p99_ms", threshold: 20 }),
      v(10, 15, 2, { backend_id: 2 }),
      v(20, 25, 2, { threshold: 0.5 }),
    ]);
    expect(episodes).toHaveLength(5);
  });

  it("starts a new episode after a quiet spell longer than the hold-down; newest first", () => {
    const episodes = mergeEpisodes([v(0, 10, 2), v(10 + EPISODE_HOLD_S, 80, 3), v(80 + EPISODE_HOLD_S + 1, 200, 4)]);
    expect(episodes.map((e) => [e.startedAt, e.violations])).toEqual([
      [at(141), 1],
      [at(0), 2],
    ]);
  });

  it("stays open while its newest violation is open, and the worst of a floor is the lowest", () => {
    const episodes = mergeEpisodes([
      v(0, 10, 40, { metric: "throughput_mbps", threshold: 50, lane: null, direction: "below" }),
      v(30, null, 35, { metric: "throughput_mbps", threshold: 50, lane: null, direction: "below" }),
      v(40, 45, 45, { metric: "throughput_mbps", threshold: 50, lane: null, direction: "below" }),
    ]);
    expect(episodes).toHaveLength(1);
    expect(episodes[0]).toMatchObject({ endedAt: null, worst: 35, below: true, violations: 3 });
  });

  it("says durations in words", () => {
    expect(durationText(at(0), at(35))).toBe("35 s");
    expect(durationText(at(0), at(250))).toBe("4 min 10 s");
    expect(durationText(at(0), at(3720))).toBe("1 h 2 min");
    expect(durationText(at(0), null, T0 + 120_000)).toBe("2 min");
  });
});
