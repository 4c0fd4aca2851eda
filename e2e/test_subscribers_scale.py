"""The subscribers page with 50 000 rows: imported through the browser (progress bar, report),
then paged to the end, sorted and searched on the server — the browser only ever holds a page."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from e2e.conftest import OPERATOR, login, shot

ROWS = 50_000


def test_fifty_thousand_subscribers(page: Page, tmp_path: Path) -> None:
    login(page, *OPERATOR)
    nav = page.get_by_role("navigation", name="Main navigation")
    nav.get_by_role("link", name="Tenants").click()
    page.get_by_role("button", name="New tenant").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Name").fill("mvno-scale")
    dialog.get_by_label("VXLAN VNI").fill("4242")
    dialog.get_by_label("UE address pool").fill("10.80.0.0/16")
    dialog.get_by_role("button", name="Create tenant").click()
    expect(page.get_by_role("cell", name="mvno-scale", exact=True)).to_be_visible()

    csv = tmp_path / "scale.csv"
    with csv.open("w") as f:
        f.write("imsi,ue_ip,teids,tenant,slices\n")
        for u in range(ROWS):
            f.write(f"00177{u:010d},10.80.{u >> 8}.{u & 255},{100000 + u},mvno-scale,\n")

    nav.get_by_role("link", name="Subscribers").click()
    page.locator("input[type=file]").set_input_files(str(csv))
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("status")).to_contain_text("50,000 of 50,000 rows", timeout=90_000)

    search = page.get_by_label("Search subscribers (IMSI or address)")
    search.fill("00177")
    expect(page.get_by_test_id("row-count")).to_have_text("50,000 rows")
    table = page.get_by_role("table", name="Subscribers")
    expect(table.get_by_role("row")).to_have_count(51)  # header + one page of 50, never all rows

    page.get_by_role("button", name="last page").click()
    expect(page.get_by_role("button", name="Page 1000")).to_have_attribute("aria-current", "page")
    expect(table.get_by_role("cell", name=f"00177{ROWS - 1:010d}", exact=True)).to_be_visible()
    page.get_by_role("button", name="IMSI").click()  # sorted ascending already: this flips to descending
    expect(table.get_by_role("row").nth(1)).to_contain_text(f"00177{ROWS - 1:010d}")

    search.fill("10.80.100.7")
    expect(page.get_by_test_id("row-count")).not_to_have_text("50,000 rows")
    expect(table).to_contain_text("10.80.100.7")
    shot(page, "subscribers-50k", full_page=False)
