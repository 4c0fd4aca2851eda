import { describe, expect, it, vi } from "vitest";
import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import spec from "../../../openapi.json?raw";
import { problemFrom } from "../../api/problem";
import { fakeApi, jsonResponse, renderWithApp } from "../../test/render";
import {
  AdmissionOverride,
  OVERRIDE_MAX,
  OverrideAudit,
  overrideHeader,
  overrideReasonError,
} from "./AdmissionOverride";

const REFUSAL = problemFrom(409, {
  title: "Admission refused",
  status: 409,
  detail: "…",
  errors: [{ field: "sla.guaranteed_mbps", message: "…" }],
  admission: [
    {
      backend_id: 1,
      backend_name: "bmv2",
      capacity_bps: 100e6,
      ok: false,
      delay: [],
      unpoliced: [],
      guaranteed: { terms: [], sum_bps: 110e6, limit_bps: 100e6, ok: false },
    },
  ],
});

describe("AdmissionOverride", () => {
  it("keeps the reason's limit in step with the API's header", () => {
    const doc = JSON.parse(spec) as {
      paths: Record<string, Record<string, { parameters?: { name: string; schema: unknown }[] }>>;
    };
    const header = doc.paths["/api/v1/slices"]?.post?.parameters?.find((p) => p.name === "admission-override");
    expect(JSON.stringify(header?.schema)).toContain(`"maxLength":${OVERRIDE_MAX}`);
  });

  it("explains a reason it cannot send", () => {
    expect(overrideReasonError("  ")).toMatch(/Say why/);
    expect(overrideReasonError("x".repeat(OVERRIDE_MAX + 1))).toBe(
      `The reason must be at most ${OVERRIDE_MAX} characters; it has ${OVERRIDE_MAX + 1}.`,
    );
    expect(overrideReasonError("a\nb")).toBe("The reason must be one line of text.");
    expect(overrideReasonError("peak hour trial")).toBeUndefined();
    expect(overrideHeader(undefined)).toEqual({});
    expect(overrideHeader("why")).toEqual({ "admission-override": "why" });
  });

  it("is offered to operators on an admission refusal only", () => {
    const { rerender } = renderWithApp(
      <AdmissionOverride problem={REFUSAL} canOverride={false} pending={false} onOverride={vi.fn()} />,
    );
    expect(screen.queryByRole("button", { name: "Override with reason" })).toBeNull();
    rerender(
      <AdmissionOverride
        problem={problemFrom(409, { title: "Conflict" })}
        canOverride
        pending={false}
        onOverride={vi.fn()}
      />,
    );
    expect(screen.queryByRole("button", { name: "Override with reason" })).toBeNull();
    rerender(<AdmissionOverride problem={REFUSAL} canOverride pending={false} onOverride={vi.fn()} />);
    expect(screen.getByRole("button", { name: "Override with reason" })).toBeInTheDocument();
  });

  it("sends the trimmed reason, and nothing without one", async () => {
    const onOverride = vi.fn();
    renderWithApp(<AdmissionOverride problem={REFUSAL} canOverride pending={false} onOverride={onOverride} />);
    const user = userEvent.setup();
    await user.click(screen.getByRole("button", { name: "Override with reason" }));
    expect(screen.getByRole("textbox", { name: "Reason for admitting it anyway" })).toHaveAccessibleDescription(
      /Say why/,
    );
    expect(onOverride).not.toHaveBeenCalled();
    await user.type(screen.getByRole("textbox", { name: "Reason for admitting it anyway" }), " link upgrade tonight ");
    await user.click(screen.getByRole("button", { name: "Override with reason" }));
    expect(onOverride).toHaveBeenCalledWith("link upgrade tonight");
  });

  it("goes away when the answer is not admission's 409 (a 403 for a non-operator's reason)", () => {
    const p = problemFrom(403, {
      title: "Forbidden",
      errors: [{ field: "admission_override", message: "only operators may override" }],
      admission: REFUSAL.extensions.admission,
    });
    renderWithApp(<AdmissionOverride problem={p} canOverride pending={false} onOverride={vi.fn()} />);
    expect(screen.queryByRole("button", { name: "Override with reason" })).toBeNull();
  });
});

describe("OverrideAudit", () => {
  it("shows the audit entry the override made: who, why, and what it overrode", async () => {
    const fake = fakeApi({
      "GET /api/v1/audit": () =>
        jsonResponse({
          count: 1,
          data: [
            {
              id: 812,
              ts: "2026-11-23T19:00:00Z",
              actor: "op",
              via: "session",
              action: "admission_override",
              object_type: "slice",
              object_id: 9,
              tenant_id: null,
              before: null,
              after: {
                reason: "trial, ticket 42",
                action: "update",
                refusals: ["guaranteed rates … = 110 Mbit/s exceed the link's 100 Mbit/s"],
              },
            },
          ],
        }),
    });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<OverrideAudit objectType="slice" objectId={9} />);
    const box = await screen.findByTestId("override-audit");
    expect(box).toHaveTextContent("Audit entry #812: admission_override (update) of slice 9 by op");
    expect(box).toHaveTextContent("Reason: trial, ticket 42");
    expect(box).toHaveTextContent("110 Mbit/s exceed the link's 100 Mbit/s");
    const q = fake.calls[0]?.url.searchParams;
    expect([q?.get("object_type"), q?.get("object_id"), q?.get("q")]).toEqual(["slice", "9", "admission_override"]);
  });
});
