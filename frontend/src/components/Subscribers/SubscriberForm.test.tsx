import { afterEach, describe, expect, it, vi } from "vitest";
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { setTokens } from "../../api/client";
import { admissionCheck, subscriberRow, userMe } from "../../test/fixtures";
import { fakeApi, jsonResponse, renderSignedIn, type Route } from "../../test/render";
import { guaranteeBps, guaranteeError, mbitText, SubscriberForm } from "./SubscriberForm";

const SUB = subscriberRow({ guaranteed_bps: 2_500_000, version: 4 });
const MESSAGE =
  "slice video: the guarantees of its 3 subscribers add up to 12 Mbit/s, more than its rate limit of 10 Mbit/s";
// admission control's 409 as services/admission.py sends it for a subscriber (fields "subscriber")
const REFUSAL = {
  type: "about:blank",
  title: "Admission refused",
  status: 409,
  instance: "/api/v1/subscribers/11",
  detail: MESSAGE,
  errors: [{ field: "guaranteed_bps", message: MESSAGE }],
  admission: [
    admissionCheck({
      guaranteed: { terms: [{ slice_name: "video", guaranteed_bps: 12e6 }], sum_bps: 12e6, limit_bps: 100e6, ok: true },
      subscribers: [
        { slice_id: 21, slice_name: "video", count: 3, sum_bps: 12e6, rate_limit_bps: 10e6, ok: false, waived: false },
      ],
    }),
  ],
};

function api(role: "operator" | "integrator", patch: Route) {
  return fakeApi({
    "GET /api/v1/users/me": () => jsonResponse(userMe({ role })),
    "GET /api/v1/tenants": () => jsonResponse({ count: 1, data: [{ id: 3, name: "acme" }] }),
    "GET /api/v1/slices": () => jsonResponse({ count: 1, data: [{ id: 21, name: "video", tenant_id: 3 }] }),
    "GET /api/v1/audit": () =>
      jsonResponse({
        count: 1,
        data: [
          {
            id: 77,
            ts: "2026-11-26T15:00:00Z",
            actor: "op",
            via: "session",
            action: "admission_override",
            object_type: "subscriber",
            object_id: 11,
            tenant_id: 3,
            before: null,
            after: { reason: "premium trial, ticket 9", action: "update", refusals: [MESSAGE] },
          },
        ],
      }),
    "PATCH /api/v1/subscribers/11": patch,
  });
}

function renderForm(fake: ReturnType<typeof fakeApi>, onDone = vi.fn()) {
  vi.stubGlobal("fetch", fake.fetch);
  renderSignedIn(<SubscriberForm subscriber={SUB} onDone={onDone} />);
  return onDone;
}

const patches = (fake: ReturnType<typeof fakeApi>) => fake.calls.filter((c) => c.method === "PATCH");

afterEach(() => setTokens(null));

describe("SubscriberForm's guaranteed rate", () => {
  it("is typed in Mbit/s and sent in bit/s; empty is none; out of the API's bounds is explained", () => {
    expect(guaranteeBps("")).toBeNull();
    expect(guaranteeBps(2.5)).toBe(2_500_000);
    expect(guaranteeBps("0.000001")).toBe(1);
    expect(guaranteeError("")).toBeUndefined();
    expect(guaranteeError(0)).toBe("Guaranteed rate must be above 0 Mbit/s; 0 is not.");
    expect(guaranteeError(2e7)).toBe("Guaranteed rate must be at most 10000000 Mbit/s; 20000000 is too large.");
    expect(guaranteeError(0.0000001)).toBe("Guaranteed rate must be at least 1 bit/s.");
    expect(mbitText(2_500_000)).toBe("2.5 Mbit/s");
  });

  it("shows the subscriber's guarantee, saves a new one in bit/s, and clears it with null", async () => {
    const fake = api("integrator", () => jsonResponse({ ...SUB, version: 5 }));
    const onDone = renderForm(fake);
    const user = userEvent.setup();
    const field = await screen.findByRole("textbox", { name: "Guaranteed rate (Mbit/s)" });
    expect(field).toHaveValue("2.5");
    await user.clear(field);
    await user.type(field, "4.25");
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(onDone).toHaveBeenCalled());
    expect(JSON.parse(patches(fake)[0]?.body ?? "{}")).toMatchObject({ guaranteed_bps: 4_250_000, version: 4 });
    await user.clear(field);
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(patches(fake)).toHaveLength(2));
    expect(JSON.parse(patches(fake)[1]?.body ?? "{}")).toMatchObject({ guaranteed_bps: null });
  });

  it("explains a guarantee it cannot send next to the field, and sends nothing", async () => {
    const fake = api("integrator", () => jsonResponse(SUB));
    renderForm(fake);
    const user = userEvent.setup();
    const field = await screen.findByRole("textbox", { name: "Guaranteed rate (Mbit/s)" });
    await user.clear(field);
    await user.type(field, "0");
    expect(field).toHaveAccessibleDescription(/Guaranteed rate must be above 0 Mbit\/s; 0 is not\./);
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(patches(fake)).toHaveLength(0);
  });

  it("puts admission's refusal on the field with the numbers; only an operator may override, with a reason", async () => {
    const refuse: Route = (req) =>
      req.headers.get("Admission-Override") === null
        ? jsonResponse(REFUSAL, 409, "application/problem+json")
        : jsonResponse({ ...SUB, guaranteed_bps: 4e6, version: 5 });
    const fake = api("operator", refuse);
    const onDone = renderForm(fake);
    const user = userEvent.setup();
    const field = await screen.findByRole("textbox", { name: "Guaranteed rate (Mbit/s)" });
    await user.clear(field);
    await user.type(field, "4");
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(field).toHaveAccessibleDescription(new RegExp(MESSAGE)));
    expect(screen.getByTestId("admission-subscribers-video")).toHaveTextContent(
      "Slice video: its 3 subscribers' guarantees = 12 Mbit/s, above its rate limit of 10 Mbit/s",
    );
    const reason = screen.getByRole("textbox", { name: "Reason for admitting it anyway" });
    await user.type(reason, "premium trial, ticket 9");
    await user.click(screen.getByRole("button", { name: "Override with reason" }));
    expect(await screen.findByTestId("override-audit")).toHaveTextContent("Reason: premium trial, ticket 9");
    expect(screen.getByTestId("override-audit")).toHaveTextContent(
      "admission_override (update) of subscriber 11 by op",
    );
    const audit = fake.calls.find((c) => c.url.pathname === "/api/v1/audit")?.url.searchParams;
    expect([audit?.get("object_type"), audit?.get("object_id")]).toEqual(["subscriber", "11"]);
    const sent = patches(fake);
    expect(sent).toHaveLength(2);
    expect(JSON.parse(sent[1]?.body ?? "{}")).toMatchObject({ guaranteed_bps: 4_000_000 });
    expect(onDone).not.toHaveBeenCalled(); // the audit entry stays until the operator closes it
    await user.click(screen.getByRole("button", { name: "Close" }));
    expect(onDone).toHaveBeenCalled();
  });

  it("offers no override to a non-operator: the refusal stands", async () => {
    const fake = api("integrator", () => jsonResponse(REFUSAL, 409, "application/problem+json"));
    renderForm(fake);
    const user = userEvent.setup();
    const field = await screen.findByRole("textbox", { name: "Guaranteed rate (Mbit/s)" });
    await user.type(field, "0");
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(await screen.findByTestId("admission-details")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Override with reason" })).toBeNull();
  });
});
