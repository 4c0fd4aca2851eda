import { useState } from "react";
import { describe, expect, it } from "vitest";
import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { renderWithApp } from "../../test/render";
import { SlaFields, type Sla } from "./SlaFields";

const START: Sla = {
  guaranteed_mbps: null,
  rate_limit_mbps: null,
  max_delay_ms: null,
  ecn_delay_ms: null,
  max_loss_pct: null,
  max_jitter_ms: null,
};

function Harness({ seen }: { seen: Sla[] }) {
  const [sla, setSla] = useState<Sla>(START);
  return (
    <SlaFields
      value={sla}
      onChange={(next) => {
        seen.push(next);
        setSla(next);
      }}
      error={() => undefined}
    />
  );
}

describe("SLA fields", () => {
  it.each([
    ["Max delay (ms)", "max_delay_ms", "-1"],
    ["Max loss (%)", "max_loss_pct", "-3"],
  ] as const)("keep %s typed as %s negative and explain it", async (label, key, typed) => {
    const seen: Sla[] = [];
    renderWithApp(<Harness seen={seen} />);
    const input = screen.getByLabelText(label);
    await userEvent.type(input, typed);
    expect(input).toHaveValue(typed);
    expect(seen.at(-1)?.[key]).toBe(Number(typed));
    expect(input).toHaveAccessibleDescription(/must be (above|at least) 0/);
  });
});
