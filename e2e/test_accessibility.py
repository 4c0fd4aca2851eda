"""Accessibility and small screens: axe-core on every page each role can open (0 serious or
critical violations), per-page document titles, the skip link, and no sideways scrolling at
390 px (a phone), as the operator, a tenant and an integrator meet the portal.

axe-core is the npm package in frontend/node_modules (a devDependency), injected into the
page as the browser would load any script; nothing here mocks the app or the API.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from e2e.conftest import INTEGRATOR, OPERATOR, RED, REPO, Stack, login, shot
from sliceportal_testbed.processes import start_p4runtime_target

AXE = REPO / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = {"serious", "critical"}
PHONE = {"width": 390, "height": 844}


@dataclass(frozen=True)
class Visit:
    path: str
    heading: str  # the page's h1, waited for before checking (pages load lazily)
    title: str  # what the browser tab says before " · sliceportal"


def new_context(browser: Browser, stack: Stack, **kw: object) -> BrowserContext:
    # bypass_csp: the portal's Content-Security-Policy (script-src 'self') would refuse the
    # injected axe-core script; it applies to the test's own script only, the app runs as served.
    context = browser.new_context(base_url=stack.base_url, bypass_csp=True, **kw)  # type: ignore[arg-type]
    context.set_default_timeout(15_000)
    return context


@pytest.fixture
def page(browser: Browser, stack: Stack) -> Iterator[Page]:
    """conftest's laptop-sized page, with axe-core injectable."""
    context = new_context(browser, stack, viewport={"width": 1366, "height": 900})
    yield context.new_page()
    context.close()


def _axe_script() -> Path:
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `cd frontend && npm ci` (axe-core is a devDependency)")
    return AXE


def axe_violations(page: Page) -> list[dict[str, object]]:
    """Serious and critical axe-core violations of the page as it is now (WCAG 2.x A/AA rules)."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        # evaluated over the DevTools protocol, which the page's CSP does not govern: the journeys
        # (strict CSP, every violation fails them) can run axe too, without a script tag
        page.evaluate(_axe_script().read_text(encoding="utf-8"))
    result = page.evaluate("""async () => {
        const r = await window.axe.run(document, {
            runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
            resultTypes: ["violations"],
        });
        return r.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(n => ({ target: n.target.join(" "), summary: n.failureSummary })) }));
    }""")
    return [v for v in result if v["impact"] in BLOCKING]


# Finite animations and transitions still running (a dialog fading out, a drawer sliding): axe
# would measure their half-transparent colours. Endless ones (a spinner) are not waited for.
_SETTLING = """() => document.getAnimations().every(a => a.playState !== 'running'
    || (a.effect && a.effect.getComputedTiming().iterations === Infinity))"""


def assert_accessible(page: Page, where: str) -> None:
    page.wait_for_function(_SETTLING)
    violations = axe_violations(page)
    assert not violations, f"axe-core on {where}:\n" + json.dumps(violations, indent=1)


# Elements sticking out of the viewport that no scrolling box of theirs contains: content the
# page scrolls sideways for, or (under overflow: hidden) content cut off.
_OVERFLOWING = """() => {
    const w = window.innerWidth;
    const out = [];
    for (const el of document.body.querySelectorAll("*")) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.height === 0 || r.right <= w + 1 || r.left >= w) continue;
        let p = el.parentElement, contained = false;
        while (p && p !== document.body) {
            const o = getComputedStyle(p).overflowX;
            if ((o === "auto" || o === "scroll") && p.getBoundingClientRect().right <= w + 1) {
                contained = true;
                break;
            }
            p = p.parentElement;
        }
        if (!contained) {
            out.push(`${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}.${[...el.classList].join(".")}`
                + ` (right edge ${Math.round(r.right)} px) "${(el.textContent || "").trim().slice(0, 40)}"`);
        }
    }
    return { scroll: document.documentElement.scrollWidth, width: w, out: out.slice(0, 5) };
}"""


# Badges whose text is cut ("DEGR…"), and table cells of three words or more wrapped one word a
# line (a status table squeezed to 390 px instead of scrolling inside its box).
_CUT_AND_WRAPPED = """() => {
    const cut = [...document.querySelectorAll(".mantine-Badge-label")]
        .filter((l) => l.getClientRects().length > 0 && l.scrollWidth > l.clientWidth + 1)
        .map((l) => l.textContent);
    const wrapped = [];
    for (const td of document.querySelectorAll("main table td")) {
        const words = (td.innerText || "").trim().split(/\\s+/).filter(Boolean);
        if (words.length < 3) continue;
        const tops = new Set();
        const walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
        for (let n = walk.nextNode(); n; n = walk.nextNode()) {
            const r = document.createRange();
            r.selectNodeContents(n);
            for (const rect of r.getClientRects()) if (rect.width > 0) tops.add(Math.round(rect.top / 4));
        }
        // lines the text breaks itself (a JSON diff, one value a line) are layout, not squeezing
        const own = (td.innerText || "").split("\\n").filter((l) => l.trim()).length;
        if (tops.size >= words.length && own < words.length) wrapped.push(td.innerText.trim().slice(0, 40));
    }
    return { cut, wrapped };
}"""


def assert_badges_whole_and_cells_unwrapped(page: Page, where: str) -> None:
    r = page.evaluate(_CUT_AND_WRAPPED)
    assert not r["cut"], f"{where}: badges cut: {r['cut']}"
    assert not r["wrapped"], f"{where}: table cells wrapped one word a line: {r['wrapped']}"


def assert_no_sideways_scroll(page: Page, where: str) -> None:
    r = page.evaluate(_OVERFLOWING)
    assert r["scroll"] <= r["width"], f"{where} scrolls sideways at {r['width']} px: content is {r['scroll']} px wide"
    assert not r["out"], f"{where} at {r['width']} px: content sticks out of the screen: {r['out']}"


def visit(page: Page, v: Visit) -> None:
    page.goto(v.path)
    expect(page.get_by_role("heading", name=v.heading, level=1)).to_be_visible()
    expect(page).to_have_title(f"{v.title} · sliceportal")
    # Pages poll and stream (KPIs), so the network never idles: wait until nothing is loading.
    expect(page.get_by_label("Loading", exact=True)).to_have_count(0)


def _token(stack: Stack, who: tuple[str, str]) -> dict[str, str]:
    r = httpx.post(f"{stack.base_url}/api/v1/login/access-token", data={"username": who[0], "password": who[1]})
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


def _first(stack: Stack, path: str, params: dict[str, str] | None = None) -> dict[str, object]:
    page = httpx.get(f"{stack.base_url}{path}", params=params or {}, headers=_token(stack, OPERATOR)).json()
    assert page["data"], f"{path}: the demo data has none"
    return dict(page["data"][0])


@pytest.fixture(scope="module")
def a11y_backend(stack: Stack) -> Iterator[dict[str, object]]:
    """A backend page to visit, on its own P4Runtime target: a second backend on the session's
    shared target would take its controller election from the operator journey's backend.
    Deleted again afterwards, so other tests see the stack as before."""
    target = start_p4runtime_target("--priority-queues", "8")
    auth = _token(stack, OPERATOR)
    try:
        r = httpx.post(
            f"{stack.base_url}/api/v1/backends",
            headers=auth,
            json={"name": "bmv2-a11y", "driver": "p4rt", "options": {"address": target.address}},
        )
        assert r.status_code == 201, r.text
        backend = dict(r.json())
        yield backend
        d = httpx.delete(f"{stack.base_url}/api/v1/backends/{backend['id']}", headers=_token(stack, OPERATOR))
        assert d.status_code == 204, d.text
    finally:
        target.stop()


def operator_pages(stack: Stack, backend: dict[str, object]) -> list[Visit]:
    red_slice = _first(stack, "/api/v1/slices", {"q": "red-embb"})
    return [
        Visit("/", "Overview", "Overview"),
        Visit("/dashboard", "SLA dashboard", "SLA dashboard"),
        Visit("/slice-types", "Slice-type catalogue", "Slice-type catalogue"),
        Visit("/tenants", "Tenants", "Tenants"),
        Visit("/slices", "Slices", "Slices"),
        Visit("/slices/new", "New slice", "New slice"),
        Visit(f"/slices/{red_slice['id']}", f"Slice {red_slice['name']}", f"Slice {red_slice['name']}"),
        Visit("/subscribers", "Subscribers", "Subscribers"),
        Visit("/backends", "Backends", "Backends"),
        Visit(f"/backends/{backend['id']}", f"Backend {backend['name']}", f"Backend {backend['name']}"),
        Visit("/users", "Users", "Users"),
        Visit("/audit", "Audit log", "Audit log"),
        Visit("/api-keys", "API keys", "API keys"),
    ]


def tenant_pages(stack: Stack) -> list[Visit]:
    red_slice = _first(stack, "/api/v1/slices", {"q": "red-embb"})
    return [
        Visit("/dashboard", "SLA dashboard", "SLA dashboard"),
        Visit("/slice-types", "Slice-type catalogue", "Slice-type catalogue"),
        Visit("/slices", "Slices", "Slices"),
        Visit(f"/slices/{red_slice['id']}", f"Slice {red_slice['name']}", f"Slice {red_slice['name']}"),
    ]


INTEGRATOR_PAGES = [
    Visit("/api-keys", "API keys", "API keys"),
    Visit("/slice-types", "Slice-type catalogue", "Slice-type catalogue"),
]


def check_pages(page: Page, pages: Iterable[Visit], who: str) -> None:
    titles = set()
    for v in pages:
        visit(page, v)
        assert_accessible(page, f"{v.path} as {who}")
        titles.add(page.title())
    assert len(titles) == len(list(pages)), "two pages share one document title"


def test_login_page_is_accessible(page: Page, stack: Stack) -> None:
    page.goto("/login")
    expect(page).to_have_title("Log in · sliceportal")
    assert_accessible(page, "/login")


def test_operator_pages_are_accessible(
    page: Page, stack: Stack, kpi_feed: None, a11y_backend: dict[str, object]
) -> None:
    login(page, *OPERATOR)
    check_pages(page, operator_pages(stack, a11y_backend), "operator")
    # Dialogs too: their close buttons are named, their fields labelled.
    visit(page, Visit("/tenants", "Tenants", "Tenants"))
    page.get_by_role("button", name="New tenant").click()
    dialog = page.get_by_role("dialog", name="New tenant")
    expect(dialog.get_by_role("button", name="Close “New tenant”")).to_be_visible()
    # A value out of range is kept as typed and explained (never clamped on blur).
    dialog.get_by_label("VLAN ID").fill("5000")
    dialog.get_by_label("Contact").focus()
    expect(dialog.get_by_label("VLAN ID")).to_have_value("5000")
    expect(dialog).to_contain_text("VLAN ID must be between 1 and 4094; 5000 is out of range.")
    assert_accessible(page, "the New tenant dialog")
    shot(page, "tenant-form-validation", full_page=False)
    dialog.get_by_role("button", name="Close “New tenant”").click()
    visit(page, Visit("/audit", "Audit log", "Audit log"))
    shot(page, "audit-timeline")


def test_skip_link_moves_focus_to_the_page(page: Page, stack: Stack) -> None:
    login(page, *OPERATOR)
    visit(page, Visit("/slice-types", "Slice-type catalogue", "Slice-type catalogue"))
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to main content")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()  # visible once focused
    page.keyboard.press("Enter")
    expect(page.locator("#main")).to_be_focused()


def test_tenant_pages_are_accessible_and_fit_a_phone(browser: Browser, stack: Stack, kpi_feed: None) -> None:
    context = new_context(browser, stack, viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto("/login")
        assert_no_sideways_scroll(page, "/login")
        page.get_by_role("textbox", name="Username").fill(RED[0])
        page.get_by_role("textbox", name="Password").fill(RED[1])
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("heading", name="SLA dashboard")).to_be_visible()
        for v in tenant_pages(stack):
            visit(page, v)
            assert_no_sideways_scroll(page, f"{v.path} as tenant")
            assert_accessible(page, f"{v.path} as tenant at 390 px")
            # state badges whole, the status table scrolled in its box, not one word a line (#29)
            assert_badges_whole_and_cells_unwrapped(page, f"{v.path} as tenant at 390 px")
        shot(page, "phone-tenant-slice")
        # An operator page by URL: an explanation, no operator controls.
        page.goto("/tenants")
        expect(page.get_by_role("heading", name="Not available")).to_be_visible()
        expect(page.get_by_role("button", name="New tenant")).to_have_count(0)
        assert_accessible(page, "/tenants as tenant")
        # The navigation opens from the burger and lists only the tenant's sections.
        page.get_by_role("button", name="Toggle navigation").click()
        links = page.get_by_role("navigation", name="Main navigation").get_by_role("link")
        expect(links).to_have_text(["SLA dashboard", "Slice types", "Slices"])
    finally:
        context.close()


def test_operator_pages_fit_a_phone(
    browser: Browser, stack: Stack, kpi_feed: None, a11y_backend: dict[str, object]
) -> None:
    context = new_context(browser, stack, viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        # conftest's login() waits for the user name, which the header hides below 576 px
        page.goto("/login")
        page.get_by_role("textbox", name="Username").fill(OPERATOR[0])
        page.get_by_role("textbox", name="Password").fill(OPERATOR[1])
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("heading", name="Overview")).to_be_visible()
        for v in operator_pages(stack, a11y_backend):
            visit(page, v)
            assert_no_sideways_scroll(page, f"{v.path} as operator")
            assert_badges_whole_and_cells_unwrapped(page, f"{v.path} as operator at 390 px")
    finally:
        context.close()


def test_integrator_pages_are_accessible(page: Page, stack: Stack) -> None:
    login(page, *INTEGRATOR)
    check_pages(page, INTEGRATOR_PAGES, "integrator")


def test_deep_link_survives_login(page: Page, stack: Stack) -> None:
    page.goto("/audit?object_type=tenant")
    expect(page).to_have_url(f"{stack.base_url}/login")
    page.get_by_role("textbox", name="Username").fill(OPERATOR[0])
    page.get_by_role("textbox", name="Password").fill(OPERATOR[1])
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
    expect(page).to_have_url(f"{stack.base_url}/audit?object_type=tenant")
    page.reload()
    expect(page.get_by_role("heading", name="Audit log")).to_be_visible()


def test_unreachable_api_shows_a_banner_not_a_white_page(page: Page, stack: Stack) -> None:
    login(page, *OPERATOR)
    visit(page, Visit("/tenants", "Tenants", "Tenants"))
    # The network between browser and API fails (the app itself is already loaded).
    page.route("**/api/v1/**", lambda route: route.abort("connectionrefused"))
    page.get_by_role("navigation", name="Main navigation").get_by_role("link", name="Subscribers").click()
    banner = page.get_by_test_id("offline-banner")
    expect(banner).to_contain_text("The portal cannot reach the API", timeout=20_000)
    expect(page.get_by_role("heading", name="Subscribers", level=1)).to_be_visible()  # the page, not a white screen
    # the banner covers neither the header nor the first menu item (#29)
    first_item = page.get_by_role("navigation", name="Main navigation").get_by_role("link").first
    boxes = [loc.bounding_box() for loc in (banner, page.get_by_role("banner"), first_item)]
    b, *covered = boxes
    assert b is not None and all(c is not None for c in covered), boxes
    for c in covered:
        assert c is not None
        apart = (
            b["x"] + b["width"] <= c["x"] + 1
            or c["x"] + c["width"] <= b["x"] + 1
            or b["y"] + b["height"] <= c["y"] + 1
            or c["y"] + c["height"] <= b["y"] + 1
        )
        assert apart, f"the offline banner {b} covers {c}"
    assert_accessible(page, "the offline banner")
    page.unroute("**/api/v1/**")
    banner.get_by_role("button", name="Retry now").click()
    expect(banner).to_have_count(0)
    expect(page.get_by_test_id("row-count")).to_be_visible()  # the failed list loads once the API answers
