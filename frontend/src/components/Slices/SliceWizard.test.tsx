import { afterEach, describe, expect, it, vi } from "vitest";
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route, Routes } from "react-router";
import { setTokens } from "../../api/client";
import { SessionProvider } from "../../auth/session";
import { admissionCheck, userMe } from "../../test/fixtures";
import { fakeApi, jsonResponse, problemResponse, renderWithApp } from "../../test/render";
import { portError, servicesError } from "./ServicesEditor";
import { slaError } from "./SlaFields";
import { SliceWizard, stepOfField } from "./SliceWizard";

const TYPE = { id: 2, name: "Flexible Slice", lanes: [0, 2, 4, 6], use_cases: ["eMBB"], classes: 4, position: 1 };

const OP = userMe({ full_name: "Op" });

function api(create: (req: Request) => Response = () => jsonResponse({ id: 77 }, 201)) {
  return fakeApi({
    "GET /api/v1/users/me": () => jsonResponse(OP),
    "GET /api/v1/tenants": () => jsonResponse({ count: 1, data: [{ id: 3, name: "acme" }] }),
    "GET /api/v1/slice-types": () => jsonResponse({ count: 1, data: [TYPE] }),
    "GET /api/v1/backends": () => jsonResponse({ count: 0, data: [] }),
    "GET /api/v1/subscribers": () => jsonResponse({ count: 0, data: [] }),
    "POST /api/v1/slices": create,
  });
}

function renderWizard() {
  return renderWithApp(
    <SessionProvider>
      <Routes>
        <Route path="/slices/new" element={<SliceWizard />} />
        <Route path="/slices/:id" element={<p>created</p>} />
      </Routes>
    </SessionProvider>,
    { url: "/slices/new" },
  );
}

afterEach(() => setTokens(null));

/** Tenant and type chosen, on the SLA step with its heading focused. */
async function toSlaStep(user: ReturnType<typeof userEvent.setup>) {
  await user.click(await screen.findByRole("combobox", { name: "Tenant" }));
  await user.click(await screen.findByRole("option", { name: "acme", hidden: true }));
  await user.click(screen.getByRole("button", { name: "Next" }));
  await user.click(await screen.findByRole("radio", { name: /Flexible Slice/ }));
  await user.click(screen.getByRole("button", { name: "Next" }));
  await waitFor(() => expect(screen.getByRole("heading", { name: "Step 3 of 6: SLA" })).toHaveFocus());
}

/** From the SLA step: names the slice "green", steps through the rest and submits it. */
async function createGreen(user: ReturnType<typeof userEvent.setup>) {
  await toSlaStep(user);
  await user.type(screen.getByRole("textbox", { name: "Slice name" }), "green{Enter}");
  for (const step of ["Step 5 of 6: Subscribers", "Step 6 of 6: Backend"]) {
    await user.click(screen.getByRole("button", { name: /Next/ }));
    await waitFor(() => expect(screen.getByRole("heading", { name: step })).toHaveFocus());
  }
  await user.click(screen.getByRole("button", { name: "Create slice" }));
}

describe("SliceWizard", () => {
  it("maps API field paths to the step that shows them", () => {
    expect(stepOfField("tenant_id")).toBe(0);
    expect(stepOfField("sla.max_delay_ms")).toBe(2);
    expect(stepOfField("services.1.dst_ports")).toBe(3);
    expect(stepOfField("backend_ids")).toBe(5);
    expect(stepOfField("body")).toBeUndefined();
  });

  it("explains ports and SLA values as typed instead of clamping them", () => {
    expect(portError({ portLo: 70000, portHi: "" })).toBe(
      "First port must be between 0 and 65535; 70000 is out of range.",
    );
    expect(portError({ portLo: 5010, portHi: 5000 })).toBe("The last port 5000 is below the first port 5010.");
    expect(portError({ portLo: "", portHi: "" })).toBeUndefined();
    expect(
      servicesError([
        { name: "a", lane: 0, portLo: 1, portHi: 2, dscp: "", protocol: "any" },
        { name: " ", lane: 2, portLo: "", portHi: "", dscp: "", protocol: "any" },
      ]),
    ).toBe("Service 2 needs a name.");
    const sla = {
      guaranteed_mbps: null,
      rate_limit_mbps: 0,
      max_delay_ms: 20,
      ecn_delay_ms: 5,
      max_loss_pct: 1,
      max_jitter_ms: 1,
    };
    expect(slaError(sla)).toBe("Rate limit must be above 0 Mbit/s; 0 is not.");
    expect(slaError({ ...sla, rate_limit_mbps: 10, guaranteed_mbps: 20 })).toBe(
      "The guaranteed rate cannot exceed the rate limit.",
    );
  });

  it("is operable by keyboard: step headings take the focus, Enter goes on, Escape goes back", async () => {
    vi.stubGlobal("fetch", api().fetch);
    renderWizard();
    const user = userEvent.setup();
    expect(await screen.findByRole("heading", { name: "Step 1 of 6: Tenant" })).toBeInTheDocument();
    // Next without a tenant says why, and stays
    await user.click(screen.getByRole("button", { name: "Next" }));
    expect(screen.getByRole("alert")).toHaveTextContent("Choose a tenant to continue.");
    await toSlaStep(user);
    await user.click(screen.getByRole("textbox", { name: "Slice name" }));
    await user.keyboard("{Escape}");
    await waitFor(() => expect(screen.getByRole("heading", { name: "Step 2 of 6: Slice type" })).toHaveFocus());
    await user.keyboard("{Enter}"); // on the focused heading: the form's submit is not triggered by a heading
    await user.click(screen.getByRole("button", { name: "Next" }));
    await user.type(await screen.findByRole("textbox", { name: "Slice name" }), "green{Enter}");
    await waitFor(() => expect(screen.getByRole("heading", { name: "Step 4 of 6: Services" })).toHaveFocus());
  });

  it("opens the step of the first field the API refuses and focuses that field", async () => {
    const fake = api(() =>
      problemResponse(
        422,
        "Service port ranges overlap",
        "service class-2 overlaps service class-0 on ports 5000-5007",
        [{ field: "services.1.dst_ports", message: "service class-2 overlaps service class-0 on ports 5000-5007" }],
      ),
    );
    vi.stubGlobal("fetch", fake.fetch);
    renderWizard();
    const user = userEvent.setup();
    await createGreen(user);
    const field = await screen.findByRole("textbox", { name: "Service 2 first port" });
    await waitFor(() => expect(field).toHaveFocus());
    expect(field).toHaveAccessibleDescription(/overlaps service class-0 on ports 5000-5007/);
    expect(screen.getByRole("heading", { name: "Step 4 of 6: Services" })).toBeInTheDocument();
  });

  it("lets an operator create a slice admission control refused, with a reason sent as Admission-Override", async () => {
    const refusal = {
      type: "about:blank",
      title: "Admission refused",
      status: 409,
      instance: "/api/v1/slices",
      detail:
        "guaranteed rates on backend bmv2 (100 Mbit/s): 60 (a) + 50 (green) = 110 Mbit/s exceed the link's 100 Mbit/s",
      errors: [
        { field: "sla.guaranteed_mbps", message: "guaranteed rates on backend bmv2 (100 Mbit/s): … = 110 Mbit/s" },
      ],
      admission: [
        admissionCheck({
          backend_id: 1,
          backend_name: "bmv2",
          guaranteed: {
            terms: [
              { slice_name: "a", guaranteed_bps: 60e6 },
              { slice_name: "green", guaranteed_bps: 50e6 },
            ],
            sum_bps: 110e6,
            limit_bps: 100e6,
            ok: false,
          },
        }),
      ],
    };
    const fake = api((req) =>
      req.headers.get("Admission-Override") === null
        ? jsonResponse(refusal, 409, "application/problem+json")
        : jsonResponse({ id: 77 }, 201),
    );
    vi.stubGlobal("fetch", fake.fetch);
    setTokens({ access_token: "a", refresh_token: "r" });
    renderWizard();
    const user = userEvent.setup();
    await createGreen(user);
    // the numbers next to the field that causes it, and the computation
    expect(await screen.findByRole("textbox", { name: "Guaranteed rate (Mbit/s)" })).toHaveAccessibleDescription(
      /110 Mbit\/s/,
    );
    expect(screen.getByTestId("admission-details")).toHaveTextContent(
      "60 Mbit/s (a) + 50 Mbit/s (green) = 110 Mbit/s of 100 Mbit/s",
    );
    await user.click(screen.getByRole("button", { name: "Override with reason" }));
    expect(await screen.findByText(/Say why this is admitted anyway/)).toBeInTheDocument();
    expect(fake.calls.filter((c) => c.method === "POST")).toHaveLength(1); // no reason: nothing sent
    await user.type(screen.getByRole("textbox", { name: "Reason for admitting it anyway" }), "  trial, ticket 42 ");
    await user.click(screen.getByRole("button", { name: "Override with reason" }));
    expect(await screen.findByText("created")).toBeInTheDocument();
    const posts = fake.calls.filter((c) => c.method === "POST" && c.url.pathname === "/api/v1/slices");
    expect(posts).toHaveLength(2);
    expect(JSON.parse(posts[1]?.body ?? "{}")).toMatchObject({ name: "green" });
  });
});
