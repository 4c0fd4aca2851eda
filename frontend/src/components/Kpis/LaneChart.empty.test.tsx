import { describe, expect, it, vi } from "vitest";
import { screen } from "@testing-library/react";
import { renderWithApp } from "../../test/render";
import { LaneChart } from "./LaneChart";

describe("an empty chart", () => {
  it("says 'No data yet' at full height instead of drawing an axis", () => {
    renderWithApp(<LaneChart title="Loss" unit="%" series={[{ lane: 0, label: "lane 0", points: [] }]} limits={[]} />);
    const empty = screen.getByTestId("chart-empty");
    expect(empty).toHaveTextContent("No data yet");
    expect(screen.getByTestId("chart-Loss")).toHaveAttribute("data-points", "0");
    expect(screen.getByTestId("chart-Loss").querySelector("canvas")).toBeNull();
  });
  it("says a metric is not measured instead of showing 0", () => {
    renderWithApp(<LaneChart title="Delay (p99)" unit="ms" series={[]} limits={[]} notMeasured={["counters"]} />);
    expect(screen.getByTestId("chart-empty")).toHaveTextContent(
      "Not measured by this data plane (data-plane counters).",
    );
    expect(screen.queryByText("No data yet")).toBeNull();
  });
});

// jsdom has no canvas: a 2D context that accepts every call, so uPlot can build the chart
function stubCanvas() {
  const noop = () => ({ width: 0 });
  const ctx = new Proxy({} as Record<string | symbol, unknown>, {
    get: (target, key) => (key in target ? target[key] : noop),
    set: (target, key, value) => {
      target[key] = value;
      return true;
    },
  });
  vi.spyOn(HTMLCanvasElement.prototype, "getContext").mockImplementation(
    () => ctx as unknown as CanvasRenderingContext2D,
  );
  vi.stubGlobal("Path2D", function Path2D() {
    return new Proxy({}, { get: () => noop });
  });
}

describe("a chart with a hole in its data", () => {
  it("lists the stretch without samples as no data, with 24-hour times", () => {
    stubCanvas();
    // the chart draws in a microtask: the stubs stay for this file (vitest isolates test files)
    const t0 = Date.UTC(2026, 10, 27, 10, 0, 0) / 1000;
    const points: [number, number | null][] = [0, 1, 2, 3, 4, 60, 61, 62].map((s) => [t0 + s, 0.5]);
    renderWithApp(<LaneChart title="Loss" unit="%" series={[{ lane: 1, label: "lane 1", points }]} limits={[]} />);
    expect(screen.getByTestId("chart-Loss")).toHaveAttribute("data-gaps", "1");
    const gaps = screen.getByTestId("chart-gaps");
    expect(gaps).toHaveTextContent(/^No data \d\d:\d\d:04–\d\d:\d\d:00 \(shaded\)\.$/);
  });
});
