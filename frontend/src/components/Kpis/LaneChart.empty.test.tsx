import { describe, expect, it } from "vitest";
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
    expect(screen.getByTestId("chart-empty")).toHaveTextContent("Not measured by this data plane (data-plane counters).");
    expect(screen.queryByText("No data yet")).toBeNull();
  });
});
