import { describe, expect, it } from "vitest";
import { screen, within } from "@testing-library/react";
import { renderWithApp } from "../../test/render";
import { EquivalenceBadge, keyRows } from "./EquivalenceBadge";

const base = {
  method: "exact cube-splitting walk over the whole key space",
  checked_entries: 64,
  cubes: 807,
  elapsed_ms: 12.4,
  counterexample: null,
  detail: "64 TCAM entries classify all 2^86 keys exactly as the 64 IR rules",
};

describe("EquivalenceBadge", () => {
  it("says proven with the method, the entries and the time", () => {
    renderWithApp(<EquivalenceBadge equivalence={{ ...base, verdict: "proven" }} />);
    expect(screen.getByTestId("equivalence")).toHaveTextContent(
      "Equivalent to the IR: proven (exact walk, 64 entries, 12 ms)",
    );
  });

  it("shows the counterexample key readably and both verdicts when the plan differs", () => {
    const key = {
      src_ip: 0x0a2d0005,
      dst_ip: 0,
      dscp: 46,
      dst_port: 5008,
      has_vni: 0,
      vni: 7,
      has_teid: 1,
      teid: 4097,
    };
    renderWithApp(
      <EquivalenceBadge
        equivalence={{
          ...base,
          verdict: "differs",
          detail: "differs",
          counterexample: { key, ir: "miss: Algorithm 1", plane: "slice 1, lane 3, rr path 0" },
        }}
      />,
    );
    const box = screen.getByTestId("equivalence");
    expect(box).toHaveTextContent("Differs from the IR (exact walk, 64 entries, 12 ms)");
    const rows = within(screen.getByRole("table", { name: "Counterexample key" }))
      .getAllByRole("row")
      .map((r) => r.textContent);
    expect(rows).toEqual(["src_ip10.45.0.5", "dst_ip0.0.0.0", "dscp46", "dst_port5008", "vniabsent", "teid4097"]);
    expect(box).toHaveTextContent("IR: miss: Algorithm 1");
    expect(box).toHaveTextContent("Plan: slice 1, lane 3, rr path 0");
  });

  it("says unchecked with the reason, and when the preview carries no result", () => {
    const { unmount } = renderWithApp(
      <EquivalenceBadge
        equivalence={{
          ...base,
          verdict: "unchecked",
          method: "none",
          checked_entries: 0,
          detail: "the walk stopped at its budget (400001 cubes, 2000 ms)",
        }}
      />,
    );
    expect(screen.getByTestId("equivalence")).toHaveTextContent("unchecked");
    expect(screen.getByTestId("equivalence")).toHaveTextContent("the walk stopped at its budget");
    unmount();
    renderWithApp(<EquivalenceBadge equivalence={null} />);
    expect(screen.getByTestId("equivalence")).toHaveTextContent("not computed");
  });

  it("formats addresses as dotted quads, even above 2^31", () => {
    expect(keyRows({ dst_ip: 0xc0a80001 })).toEqual([["dst_ip", "192.168.0.1"]]);
  });
});
