import { describe, expect, it, vi } from "vitest";
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { renderWithApp } from "../../test/render";
import { ImportCsv } from "./ImportCsv";

/** The browser's XMLHttpRequest as ImportCsv uses it, answering with a canned status and body. */
function fakeXhr(status: number, body: unknown) {
  const sent: { url: string; auth: string | null; form: FormData | null }[] = [];
  class FakeXhr {
    status = 0;
    responseText = "";
    upload: { onprogress: ((e: { lengthComputable: boolean; loaded: number; total: number }) => void) | null } = { onprogress: null };
    onload: (() => void) | null = null;
    onerror: (() => void) | null = null;
    private url = "";
    private auth: string | null = null;
    open(_method: string, url: string) { this.url = url; }
    setRequestHeader(name: string, value: string) { if (name === "Authorization") this.auth = value; }
    send(form: FormData) {
      sent.push({ url: this.url, auth: this.auth, form });
      this.upload.onprogress?.({ lengthComputable: true, loaded: 50, total: 100 });
      setTimeout(() => { this.status = status; this.responseText = JSON.stringify(body); this.onload?.(); }, 0);
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

const CSV = new File(["imsi,ue_ip,teids,tenant,slices\n001010000000001,10.9.0.1,1,acme,video\n"], "subs.csv", { type: "text/csv" });

describe("ImportCsv", () => {
  it("lists every bad row with its file line, a human column name and no database text", async () => {
    const sent = fakeXhr(422, {
      title: "Import refused", status: 422, detail: "2 rows have errors",
      errors: [
        { field: "ue_ip", message: "10.9.0.1 is outside tenant acme's UE pool 10.47.0.0/16", line: 2 },
        { field: "imsi", message: "Key (tenant_id, imsi)=(1, 001010000000001) already exists.", line: 3 },
      ],
    });
    renderWithApp(<ImportCsv />);
    const user = userEvent.setup();
    await user.upload(fileInput(), CSV);
    await user.click(screen.getByRole("button", { name: "Import" }));
    const table = await screen.findByRole("table", { name: "Import errors" });
    const rows = within(table).getAllByRole("row").slice(1).map((r) => r.textContent);
    expect(rows).toEqual([
      "2UE address10.9.0.1 is outside tenant acme's UE pool 10.47.0.0/16",
      "3IMSIIMSI 001010000000001 is already in use in this tenant; choose another.",
    ]);
    expect(screen.getByRole("alert")).toHaveTextContent("2 errors in the file; nothing was imported.");
    expect(sent[0]?.url).toBe("/api/v1/subscribers/import");
    expect(sent[0]?.form?.get("file")).toBeInstanceOf(File);
  });

  it("reports the imported count on success", async () => {
    fakeXhr(200, { rows: 1200, imported: 1200, duration_s: 0.25 });
    renderWithApp(<ImportCsv />);
    const user = userEvent.setup();
    await user.upload(fileInput(), CSV);
    await user.click(screen.getByRole("button", { name: "Import" }));
    await waitFor(() => expect(screen.getByRole("status")).toHaveTextContent("1,200 of 1,200 rows in 0.25 s"));
  });
});
