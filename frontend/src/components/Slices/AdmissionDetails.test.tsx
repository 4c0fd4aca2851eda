import { describe, expect, it } from "vitest";
import { screen } from "@testing-library/react";
import { problemFrom } from "../../api/problem";
import { renderWithApp } from "../../test/render";
import { AdmissionDetails, admissionOf } from "./AdmissionDetails";

// The 409 of backend/tests/deployments/test_admission_api.py: seed 004 case C at 320 Mbit/s.
const BODY = {
  type: "about:blank",
  title: "Admission refused",
  status: 409,
  detail: "slice Peering at lane 4 …",
  instance: "/api/v1/slices",
  errors: [{ field: "sla.max_delay_ms", message: "slice Peering at lane 4 …" }],
  admission: [
    {
      backend_id: 1,
      backend_name: "bmv2",
      capacity_bps: 320e6,
      ok: false,
      guaranteed: { terms: [], sum_bps: 0, limit_bps: 320e6, ok: true },
      delay: [
        {
          slice_id: 3,
          slice_name: "Peering",
          lane: 4,
          worst_delay_ms: 31.0673,
          delay_bound_ms: 30,
          ok: false,
          terms: [
            { slice_name: "DC", lane: 6, burst_bits: 960000, residual_bps: 320e6, ms: 3 },
            { slice_name: "Enterprise", lane: 6, burst_bits: 120000, residual_bps: 320e6, ms: 0.375 },
            { slice_name: "Peering", lane: 4, burst_bits: 7.2e6, residual_bps: 260e6, ms: 27.6923 },
          ],
        },
      ],
      unpoliced: [{ slice_name: "bulk", why: "no rate limit" }],
    },
  ],
};

describe("AdmissionDetails", () => {
  it("keeps the problem's extension members", () => {
    const p = problemFrom(409, BODY);
    expect(admissionOf(p)?.[0]?.capacity_bps).toBe(320e6);
    expect(p.fieldMessage("max_delay_ms")).toContain("Peering");
    expect(admissionOf(problemFrom(422, { title: "x", errors: [] }))).toBeUndefined();
  });

  it("shows every term, the sum and the bound", () => {
    renderWithApp(<AdmissionDetails problem={problemFrom(409, BODY)} />);
    expect(screen.getByText("Backend bmv2: link 320 Mbit/s")).toBeInTheDocument();
    const row = screen.getByTestId("admission-Peering-4");
    expect(row).toHaveTextContent(
      "0.96 Mbit / 320 Mbit/s (DC) + 0.12 Mbit / 320 Mbit/s (Enterprise) + 7.2 Mbit / 260 Mbit/s (Peering)",
    );
    expect(row).toHaveTextContent("31.067 ms (bound 30 ms)");
    expect(screen.getByText("bulk: no rate limit")).toBeInTheDocument();
  });

  it("renders nothing for other problems", () => {
    renderWithApp(<AdmissionDetails problem={problemFrom(422, { title: "Validation failed" })} />);
    expect(screen.queryByTestId("admission-details")).toBeNull();
  });
});

describe("AdmissionDetails per port and per subscriber", () => {
  const body = {
    ...BODY,
    admission: [
      {
        ...BODY.admission[0],
        delay: [],
        unpoliced: [],
        guaranteed: {
          terms: [
            {
              slice_name: "per-ue",
              guaranteed_bps: 60e6,
              slice_guaranteed_bps: 10e6,
              subscribers: 2,
              subscribers_bps: 60e6,
            },
            { slice_name: "fixed", guaranteed_bps: 50e6 },
          ],
          sum_bps: 110e6,
          limit_bps: 100e6,
          ok: false,
        },
        ports: [
          {
            port: "3",
            capacity_bps: 50e6,
            sum_bps: 60e6,
            ok: false,
            waived: false,
            slices: [{ slice_name: "a1" }, { slice_name: "a2" }],
            terms: [
              { slice_name: "a1", guaranteed_bps: 40e6 },
              { slice_name: "a2", guaranteed_bps: 20e6 },
            ],
          },
        ],
        subscribers: [
          {
            slice_id: 2,
            slice_name: "per-ue",
            count: 2,
            sum_bps: 90e6,
            rate_limit_bps: 80e6,
            ok: false,
            waived: false,
          },
        ],
      },
    ],
  };

  it("names the port, each term and the limit, and the subscribers' sum against the rate limit", () => {
    renderWithApp(<AdmissionDetails problem={problemFrom(409, body)} />);
    expect(screen.getByTestId("admission-port-3")).toHaveTextContent(
      "Port 3: 40 Mbit/s (a1) + 20 Mbit/s (a2) = 60 Mbit/s of 50 Mbit/s",
    );
    expect(screen.getByTestId("admission-details")).toHaveTextContent(
      "60 Mbit/s (per-ue, 2 subscribers) + 50 Mbit/s (fixed) = 110 Mbit/s of 100 Mbit/s",
    );
    expect(screen.getByTestId("admission-subscribers-per-ue")).toHaveTextContent(
      "Slice per-ue: its 2 subscribers' guarantees = 90 Mbit/s, above its rate limit of 80 Mbit/s",
    );
  });
});
