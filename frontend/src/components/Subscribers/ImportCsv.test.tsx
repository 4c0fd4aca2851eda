import { afterEach, describe, expect, it, vi } from "vitest";
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { setTokens } from "../../api/client";
import { admissionCheck, userMe } from "../../test/fixtures";
import { fakeApi, jsonResponse, renderSignedIn } from "../../test/render";
import { ImportCsv } from "./ImportCsv";

/** The browser's XMLHttpRequest as ImportCsv uses it, answering each upload with the next canned
 * status and body (the last one repeats). */
function fakeXhr(...answers: [number, unknown][]) {
  const sent: { url: string; auth: string | null; override: string | null; form: FormData | null }[] = [];
  class FakeXhr {
    status = 0;
    responseText = "";
    upload: { onprogress: ((e: { lengthComputable: boolean; loaded: number; total: number }) => void) | null } = {
      onprogress: null,
    };
    onload: (() => void) | null = null;
    onerror: (() => void) | null = null;
    private url = "";
    private auth: string | null = null;
    private override: string | null = null;
    open(_method: string, url: string) {
      this.url = url;
    }
    setRequestHeader(name: string, value: string) {
      if (name === "Authorization") this.auth = value;
      if (name === "Admission-Override") this.override = value;
    }
    send(form: FormData) {
      sent.push({ url: this.url, auth: this.auth, override: this.override, form });
      const [status, body] = answers[Math.min(sent.length, answers.length) - 1] ?? [500, null];
      this.upload.onprogress?.({ lengthComputable: true, loaded: 50, total: 100 });
      setTimeout(() => {
        this.status = status;
        this.responseText = JSON.stringify(body);
        this.onload?.();
      }, 0);
    }
  }
  vi.stubGlobal("XMLHttpRequest", FakeXhr);
  return sent;
}

/** Mantine's FileInput is a button over a hidden <input type=file>; upload goes to the input. */
function fileInput(): HTMLInputElement {
  const input = document.querySelector<HTMLInputElement>('input[type="file"]');
  if (!input) throw new Error("no file input");
  return input;
}

/** ImportCsv as the Subscribers page mounts it, signed in with ``role``. */
function renderImport(role: "operator" | "integrator" = "operator") {
  const me = fakeApi({
    "GET /api/v1/users/me": () => jsonResponse(userMe({ username: role, role })),
  });
  vi.stubGlobal("fetch", me.fetch);
  renderSignedIn(<ImportCsv />);
}

const CSV = new File(["imsi,ue_ip,teids,tenant,slices\n001010000000001,10.9.0.1,1,acme,video\n"], "subs.csv", {
  type: "text/csv",
});

describe("ImportCsv", () => {
  it("lists every bad row with its file line, a human column name and no database text", async () => {
    const sent = fakeXhr([
      422,
      {
        title: "Import refused",
        status: 422,
        detail: "2 rows have errors",
        errors: [
          { field: "ue_ip", message: "10.9.0.1 is outside tenant acme's UE pool 10.47.0.0/16", line: 2 },
          { field: "imsi", message: "Key (tenant_id, imsi)=(1, 001010000000001) already exists.", line: 3 },
        ],
      },
    ]);
    renderImport();
    const user = userEvent.setup();
    await user.upload(fileInput(), CSV);
    await user.click(screen.getByRole("button", { name: "Import" }));
    const table = await screen.findByRole("table", { name: "Import errors" });
    const rows = within(table)
      .getAllByRole("row")
      .slice(1)
      .map((r) => r.textContent);
    expect(rows).toEqual([
      "2UE address10.9.0.1 is outside tenant acme's UE pool 10.47.0.0/16",
      "3IMSIIMSI 001010000000001 is already in use in this tenant; choose another.",
    ]);
    expect(screen.getByRole("alert")).toHaveTextContent("2 errors in the file; nothing was imported.");
    expect(sent[0]?.url).toBe("/api/v1/subscribers/import");
    expect(sent[0]?.form?.get("file")).toBeInstanceOf(File);
  });

  it("reports the imported count on success", async () => {
    fakeXhr([200, { rows: 1200, imported: 1200, duration_s: 0.25 }]);
    renderImport();
    const user = userEvent.setup();
    await user.upload(fileInput(), CSV);
    await user.click(screen.getByRole("button", { name: "Import" }));
    await waitFor(() => expect(screen.getByRole("status")).toHaveTextContent("1,200 of 1,200 rows in 0.25 s"));
  });

  it("shows admission control's numbers, and an operator imports the same file anyway with a reason", async () => {
    const message =
      "slice video: the guarantees of its 3 subscribers add up to 12 Mbit/s, more than its rate limit of 10 Mbit/s";
    const sent = fakeXhr(
      [
        409,
        {
          title: "Admission refused",
          status: 409,
          detail: message,
          errors: [{ field: "guaranteed_bps", message }],
          admission: [
            admissionCheck({
              guaranteed: { terms: [], sum_bps: 12e6, limit_bps: 100e6, ok: true },
              subscribers: [
                {
                  slice_id: 21,
                  slice_name: "video",
                  count: 3,
                  sum_bps: 12e6,
                  rate_limit_bps: 10e6,
                  ok: false,
                  waived: false,
                },
              ],
            }),
          ],
        },
      ],
      [201, { rows: 1, imported: 1, duration_s: 0.01 }],
    );
    renderImport("operator");
    const user = userEvent.setup();
    await user.upload(fileInput(), CSV);
    await user.click(screen.getByRole("button", { name: "Import" }));
    expect(await screen.findByTestId("admission-subscribers-video")).toHaveTextContent(
      "its 3 subscribers' guarantees = 12 Mbit/s",
    );
    expect(screen.getByText(`Nothing was imported: ${message}`)).toBeInTheDocument();
    await user.click(await screen.findByRole("button", { name: "Override with reason" }));
    expect(sent).toHaveLength(1); // no reason, no request
    await user.type(screen.getByTestId("override-reason"), "premium trial, ticket 9");
    await user.click(screen.getByRole("button", { name: "Override with reason" }));
    await waitFor(() => expect(screen.getByRole("status")).toHaveTextContent("1 of 1 rows"));
    expect(sent.map((s) => s.override)).toEqual([null, "premium trial, ticket 9"]);
    expect(sent[1]?.form?.get("file")).toBeInstanceOf(File);
  });

  it("offers no override to someone who is not an operator", async () => {
    fakeXhr([
      409,
      {
        title: "Admission refused",
        status: 409,
        detail: "refused",
        errors: [],
        admission: [
          {
            backend_id: 4,
            backend_name: "edge-1",
            capacity_bps: 1e6,
            ok: false,
            delay: [],
            unpoliced: [],
            guaranteed: { terms: [], sum_bps: 2e6, limit_bps: 1e6, ok: false },
          },
        ],
      },
    ]);
    renderImport("integrator");
    const user = userEvent.setup();
    await user.upload(fileInput(), CSV);
    await user.click(screen.getByRole("button", { name: "Import" }));
    expect(await screen.findByTestId("admission-details")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Override with reason" })).toBeNull();
  });
});

afterEach(() => setTokens(null));
