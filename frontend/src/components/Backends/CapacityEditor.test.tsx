import { describe, expect, it, vi } from "vitest";
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { backendRow } from "../../test/fixtures";
import { fakeApi, jsonResponse, problemResponse, renderWithApp } from "../../test/render";
import { capacityError, CapacityEditor, portDraftError } from "./CapacityEditor";

const BACKEND = backendRow({
  options: { access_ports: { "3": 100 } },
  version: 5,
  link_bps: 1e9,
  port_bps: { "3": 50e6 },
});

const REFUSAL = {
  type: "about:blank",
  title: "Admission refused",
  status: 409,
  instance: "/api/v1/backends/4",
  detail: "guaranteed rates on port 3 of backend edge-1: 40 (a1) = 40 Mbit/s exceed the port's 30 Mbit/s",
  errors: [
    {
      field: "port_bps.3",
      message: "guaranteed rates on port 3 of backend edge-1: 40 (a1) = 40 Mbit/s exceed the port's 30 Mbit/s",
    },
  ],
  admission: [
    {
      backend_id: 4,
      backend_name: "edge-1",
      capacity_bps: 1e9,
      ok: false,
      delay: [],
      unpoliced: [],
      subscribers: [],
      guaranteed: { terms: [{ slice_name: "a1", guaranteed_bps: 40e6 }], sum_bps: 40e6, limit_bps: 1e9, ok: true },
      ports: [
        {
          port: "3",
          capacity_bps: 30e6,
          sum_bps: 40e6,
          ok: false,
          waived: false,
          slices: [{ slice_name: "a1" }],
          terms: [{ slice_name: "a1", guaranteed_bps: 40e6 }],
        },
      ],
    },
  ],
};

describe("CapacityEditor", () => {
  it("explains capacities it cannot send", () => {
    expect(capacityError("Link capacity", "")).toBe("Link capacity is required.");
    expect(capacityError("Link capacity", 0)).toBe("Link capacity must be above 0 Mbit/s; 0 is not.");
    expect(capacityError("Link capacity", 2e7)).toBe(
      "Link capacity must be at most 10000000 Mbit/s; 20000000 is too large.",
    );
    expect(capacityError("Link capacity", 0.5)).toBeUndefined();
    const ports = [
      { port: "3", mbps: 10 },
      { port: " 3", mbps: 10 },
      { port: "", mbps: -1 },
    ];
    expect(portDraftError(ports, 0)).toEqual({});
    expect(portDraftError(ports, 1).port).toBe("Port 3 is listed twice.");
    expect(portDraftError(ports, 2)).toEqual({
      port: "Name the port (as the data plane numbers it, e.g. 3).",
      mbps: "Port 3 capacity must be above 0 Mbit/s; -1 is not.",
    });
  });

  it("shows the link and each port in Mbit/s, says what a port carries, and saves in bit/s", async () => {
    const fake = fakeApi({ "PATCH /api/v1/backends/4": () => jsonResponse({ ...BACKEND, version: 6 }) });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<CapacityEditor backend={BACKEND} canOverride={false} onOverridden={vi.fn()} />);
    const user = userEvent.setup();
    expect(screen.getByRole("textbox", { name: "Egress link capacity (Mbit/s)" })).toHaveValue("1000");
    expect(screen.getByRole("textbox", { name: "Port 3 capacity (Mbit/s)" })).toHaveValue("50");
    expect(screen.getByText("tenant VLAN 100 only (access port)")).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Add port" }));
    await user.type(screen.getByRole("textbox", { name: "Port 2 name" }), "1");
    const trunk = screen.getByRole("textbox", { name: "Port 1 capacity (Mbit/s)" });
    expect(screen.getByRole("textbox", { name: "Port 1 capacity (Mbit/s)" })).toHaveAccessibleDescription(
      "Port 1 capacity is required.",
    );
    expect(screen.getByRole("button", { name: "Save capacities" })).toBeDisabled();
    expect(screen.getByText("every slice (shared)")).toBeInTheDocument();
    await user.type(trunk, "100");
    await user.click(screen.getByRole("button", { name: "Save capacities" }));
    await waitFor(() => expect(fake.calls.some((c) => c.method === "PATCH")).toBe(true));
    const patch = fake.calls.find((c) => c.method === "PATCH");
    expect(JSON.parse(patch?.body ?? "{}")).toEqual({ link_bps: 1e9, version: 5, port_bps: { "3": 50e6, "1": 100e6 } });
  });

  it("puts admission's refusal next to the port and lets an operator save anyway with a reason", async () => {
    const fake = fakeApi({
      "PATCH /api/v1/backends/4": (req) =>
        req.headers.get("Admission-Override") === null
          ? jsonResponse(REFUSAL, 409, "application/problem+json")
          : jsonResponse({ ...BACKEND, version: 6 }),
    });
    vi.stubGlobal("fetch", fake.fetch);
    const onOverridden = vi.fn();
    renderWithApp(<CapacityEditor backend={BACKEND} canOverride onOverridden={onOverridden} />);
    const user = userEvent.setup();
    const port = screen.getByRole("textbox", { name: "Port 3 capacity (Mbit/s)" });
    await user.clear(port);
    await user.type(port, "30");
    await user.click(screen.getByRole("button", { name: "Save capacities" }));
    await waitFor(() =>
      expect(port).toHaveAccessibleDescription(/40 \(a1\) = 40 Mbit\/s exceed the port's 30 Mbit\/s/),
    );
    expect(screen.getByTestId("admission-port-3")).toHaveTextContent("Port 3: 40 Mbit/s (a1) = 40 Mbit/s of 30 Mbit/s");
    await user.type(
      screen.getByRole("textbox", { name: "Reason for admitting it anyway" }),
      "a1 moves to port 4 tonight",
    );
    await user.click(screen.getByRole("button", { name: "Override with reason" }));
    await waitFor(() => expect(onOverridden).toHaveBeenCalled());
    const sent = fake.calls.filter((c) => c.method === "PATCH");
    expect(sent).toHaveLength(2);
    expect(JSON.parse(sent[1]?.body ?? "{}").port_bps).toEqual({ "3": 30e6 });
  });

  it("shows a 422 on a port's value next to it", async () => {
    vi.stubGlobal(
      "fetch",
      fakeApi({
        "PATCH /api/v1/backends/4": () =>
          problemResponse(422, "Validation failed", "…", [
            { field: "port_bps.3", message: "Input should be less than or equal to 10000000000000" },
          ]),
      }).fetch,
    );
    renderWithApp(<CapacityEditor backend={BACKEND} canOverride={false} onOverridden={vi.fn()} />);
    const user = userEvent.setup();
    await user.click(screen.getByRole("button", { name: "Save capacities" }));
    expect(await screen.findByText("Input should be less than or equal to 10000000000000")).toBeInTheDocument();
    expect(screen.getByRole("textbox", { name: "Port 3 capacity (Mbit/s)" })).toHaveAccessibleDescription(
      /less than or equal/,
    );
  });
});
