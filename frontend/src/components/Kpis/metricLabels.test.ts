import { describe, expect, it } from "vitest";
import { metricLabel, metricName, metricUnit } from "./metricLabels";

describe("metric labels", () => {
  it("speak the API's names with their units", () => {
    expect(metricLabel("delay_p99_ms", 2)).toBe("p99 delay, lane 2 (ms)");
    expect(metricLabel("loss_pct", null)).toBe("loss, all lanes (%)");
    expect(metricLabel("jitter_ms")).toBe("jitter (ms)");
    expect(metricUnit("throughput_mbps")).toBe("Mbit/s");
  });
  it("never show a raw identifier, even for a metric they do not know", () => {
    expect(metricName("queue_depth_pkts")).toBe("queue depth pkts");
    expect(metricLabel("queue_depth_pkts", 1)).toBe("queue depth pkts, lane 1");
  });
});
