"""Admission control in Chromium against the real stack: an operator records a backend's link
and per-port capacities (a bad value is explained next to its field), lowering a port under the
guarantees it carries is refused next to that port, an SLA edit the link cannot carry is refused
with the numbers next to the fields, and "Override with reason" admits it and shows the audit
entry it made; the same for a subscriber's own guaranteed rate on the Subscribers page.
Screenshots for docs/portal.md; axe-core checks the pages.

The backend is a record without a data plane behind it (nothing is deployed): admission control
needs only the capacities and the slices assigned to the backend.
"""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Page, expect

from e2e.conftest import OPERATOR, Stack, login, shot
from e2e.test_accessibility import assert_accessible
from sliceportal_testbed.processes import free_port

MBIT = 1_000_000


def _api(stack: Stack) -> httpx.Client:
    token = httpx.post(
        f"{stack.base_url}/api/v1/login/access-token",
        data={"username": OPERATOR[0], "password": OPERATOR[1]},
        timeout=60,
    ).json()["access_token"]
    # generous: six engineers share two cores, and registering a backend constructs its driver
    return httpx.Client(base_url=f"{stack.base_url}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=60)


def _tenant_backend_slice(
    api: httpx.Client,
    name: str,
    suffix: int,
    *,
    vni: int,
    vlan: int,
    link_bps: int,
    sla: dict[str, int],
    access_ports: tuple[str, ...] = (),
) -> tuple[dict, dict, dict]:
    """A tenant, a p4rt backend record (no data plane behind it) and a Flexible Slice of the tenant
    assigned to it: what admission control needs. ``access_ports`` are the tenant's access ports
    on the backend (its VLAN; port 1 is then the trunk)."""
    tenant = api.post("/tenants", json={"name": f"mvno-{name}-{suffix}", "vni": vni, "vlan": vlan}).json()
    assert "id" in tenant, tenant
    ports = {"access_ports": {p: vlan for p in access_ports}, "trunk_ports": [1]} if access_ports else {}
    r = api.post(
        "/backends",
        json={
            "name": f"edge-{name}-{suffix}",
            "driver": "p4rt",
            "link_bps": link_bps,
            "options": {"address": f"127.0.0.1:{free_port()}", **ports},
        },
    )
    assert r.status_code == 201, r.text
    backend = r.json()
    types = api.get("/slice-types", params={"q": "Flexible Slice"}).json()["data"]
    flexible = next(t["id"] for t in types if t["name"] == "Flexible Slice")
    r = api.post(
        "/slices",
        json={
            "name": f"{name}-{suffix}",
            "tenant_id": tenant["id"],
            "slice_type_id": flexible,
            "sla": sla,
            "backend_ids": [backend["id"]],
            "services": [{"name": "all", "lane": 0}],
        },
    )
    assert r.status_code == 201, r.text
    return tenant, backend, r.json()


def _to_top(page: Page, heading: str) -> None:
    """Scroll a section's heading to the top of the window, below the shell's header (for a shot)."""
    page.get_by_role("heading", name=heading, exact=True).evaluate(
        "h => { h.scrollIntoView(); window.scrollBy(0, -72); }"
    )


def test_capacities_refusal_and_override(page: Page, stack: Stack) -> None:
    api = _api(stack)
    suffix = free_port()
    # port 3 is the tenant's access port (seed 002): only its slices count on it. The slice
    # guarantees 40 Mbit/s: it fits port 3 and the link once the operator has recorded them.
    tenant, backend, sl = _tenant_backend_slice(
        api,
        "adm",
        suffix,
        vni=7000 + suffix % 1000,
        vlan=3000 + suffix % 1000,
        link_bps=10_000 * MBIT,
        access_ports=("3",),
        sla={"guaranteed_mbps": 40, "rate_limit_mbps": 40},
    )

    login(page, *OPERATOR)
    page.goto(f"/backends/{backend['id']}")
    form = page.get_by_role("form", name="Capacities")
    link = form.get_by_role("textbox", name="Egress link capacity (Mbit/s)")
    expect(link).to_have_value("10000")
    link.fill("100")
    form.get_by_role("button", name="Add port").click()
    form.get_by_role("textbox", name="Port 1 name").fill("3")
    port3 = form.get_by_role("textbox", name="Port 3 capacity (Mbit/s)")
    port3.fill("0")
    # explained next to the field as typed; nothing can be sent
    expect(port3).to_have_accessible_description("Port 3 capacity must be above 0 Mbit/s; 0 is not.")
    expect(form.get_by_role("button", name="Save capacities")).to_be_disabled()
    port3.fill("50")
    expect(form.get_by_text(f"tenant VLAN {tenant['vlan']} only (access port)")).to_be_visible()
    form.get_by_role("button", name="Save capacities").click()
    expect(page.get_by_text("Capacities saved")).to_be_visible()
    saved = api.get(f"/backends/{backend['id']}").json()
    assert (saved["link_bps"], saved["port_bps"]) == (100 * MBIT, {"3": 50 * MBIT})
    assert_accessible(page, "the backend page with its capacities")
    _to_top(page, "Capacities (admission control)")
    shot(page, "backend-capacities", full_page=False)

    # lowering port 3 under the 40 Mbit/s it carries: refused next to the port, nothing saved
    page.reload()
    form = page.get_by_role("form", name="Capacities")
    port3 = form.get_by_role("textbox", name="Port 3 capacity (Mbit/s)")
    expect(port3).to_have_value("50")
    port3.fill("30")
    form.get_by_role("button", name="Save capacities").click()
    expect(port3).to_have_accessible_description(
        f"guaranteed rates on port 3 of backend edge-adm-{suffix}: 40 (adm-{suffix}) = 40 Mbit/s exceed the port's "
        "30 Mbit/s"
    )
    expect(page.get_by_test_id("admission-port-3")).to_contain_text(
        f"40 Mbit/s (adm-{suffix}) = 40 Mbit/s of 30 Mbit/s"
    )
    assert api.get(f"/backends/{backend['id']}").json()["port_bps"] == {"3": 50 * MBIT}
    _to_top(page, "Capacities (admission control)")
    shot(page, "backend-capacity-refused", full_page=False)

    # an SLA edit the port cannot carry: the numbers next to the fields, then the operator overrides
    page.goto(f"/slices/{sl['id']}")
    guaranteed = page.get_by_role("textbox", name="Guaranteed rate (Mbit/s)")
    guaranteed.fill("60")
    page.get_by_role("textbox", name="Rate limit (Mbit/s)").fill("60")
    page.get_by_role("button", name="Save SLA").click()
    expect(guaranteed).to_have_accessible_description(
        f"guaranteed rates on port 3 of backend edge-adm-{suffix}: 60 (adm-{suffix}) = 60 Mbit/s exceed the port's "
        "50 Mbit/s"
    )
    details = page.get_by_test_id("admission-details")
    expect(details).to_contain_text(f"Port 3: 60 Mbit/s (adm-{suffix}) = 60 Mbit/s of 50 Mbit/s")
    assert api.get(f"/slices/{sl['id']}").json()["sla"]["guaranteed_mbps"] == 40
    reason = page.get_by_role("textbox", name="Reason for admitting it anyway")
    page.get_by_role("button", name="Override with reason").click()
    expect(reason).to_have_accessible_description(re.compile("Say why this is admitted anyway"))
    reason.fill("port 3 upgraded to 100 Mbit/s on Monday, change 4711")
    assert_accessible(page, "a slice refused by admission control")
    _to_top(page, "SLA")
    shot(page, "admission-refused", full_page=False)
    page.get_by_role("button", name="Override with reason").click()

    audit = page.get_by_test_id("override-audit")
    expect(audit).to_contain_text(f"admission_override (update) of slice {sl['id']} by {OPERATOR[0]}")
    expect(audit).to_contain_text("Reason: port 3 upgraded to 100 Mbit/s on Monday, change 4711")
    expect(audit).to_contain_text("60 Mbit/s exceed the port's 50 Mbit/s")
    assert api.get(f"/slices/{sl['id']}").json()["sla"]["guaranteed_mbps"] == 60
    entries = api.get("/audit", params={"object_type": "slice", "object_id": sl["id"], "q": "admission_override"})
    assert entries.json()["data"][0]["after"]["reason"] == "port 3 upgraded to 100 Mbit/s on Monday, change 4711"
    assert_accessible(page, "a slice admitted over a refusal")
    _to_top(page, "SLA")
    shot(page, "admission-override", full_page=False)


def test_subscriber_guarantee_refused_then_overridden(page: Page, stack: Stack) -> None:
    """A subscriber's own guaranteed rate, typed in Mbit/s on the Subscribers page: more than its
    slice's rate limit lets through is refused next to the field with the numbers; the operator
    saves it anyway with a reason and sees the audit entry; the list shows the guarantee."""
    api = _api(stack)
    suffix = free_port()
    tenant, _, sl = _tenant_backend_slice(
        api,
        "sub",
        suffix,
        vni=8000 + suffix % 1000,
        vlan=3500 + suffix % 500,
        link_bps=100 * MBIT,
        sla={"guaranteed_mbps": 20, "rate_limit_mbps": 40},
    )
    imsi = f"00101{suffix:010d}"
    r = api.post(
        "/subscribers",
        json={
            "tenant_id": tenant["id"],
            "imsi": imsi,
            "ue_ip": "10.88.0.7",
            "teids": [7],
            "slice_ids": [sl["id"]],
            "guaranteed_bps": 10 * MBIT,
        },
    )
    assert r.status_code == 201, r.text
    sub = r.json()

    login(page, *OPERATOR)
    page.goto(f"/subscribers?tenant_id={tenant['id']}")
    table = page.get_by_role("table", name="Subscribers")
    expect(table.get_by_role("row").filter(has_text=imsi)).to_contain_text("10 Mbit/s")
    page.get_by_role("button", name=f"Edit subscriber {imsi}").click()
    dialog = page.get_by_role("dialog", name="Edit subscriber")
    rate = dialog.get_by_role("textbox", name="Guaranteed rate (Mbit/s)")
    expect(rate).to_have_value("10")
    rate.fill("0")  # explained as typed; nothing is sent
    expect(rate).to_have_accessible_description(re.compile("Guaranteed rate must be above 0 Mbit/s; 0 is not."))
    rate.fill("50")
    dialog.get_by_role("button", name="Save").click()
    refusal = (
        f"slice sub-{suffix}: the guarantees of its 1 subscribers add up to 50 Mbit/s, more than its rate "
        "limit of 40 Mbit/s"
    )
    expect(rate).to_have_accessible_description(re.compile(re.escape(refusal)))
    expect(dialog.get_by_test_id(f"admission-subscribers-sub-{suffix}")).to_have_text(
        f"Slice sub-{suffix}: its 1 subscribers' guarantees = 50 Mbit/s, above its rate limit of 40 Mbit/s"
    )
    assert api.get(f"/subscribers/{sub['id']}").json()["guaranteed_bps"] == 10 * MBIT
    reason = dialog.get_by_role("textbox", name="Reason for admitting it anyway")
    reason.fill("premium SIM trial, the slice's limit is raised on Monday (change 4712)")
    assert_accessible(page, "a subscriber's guarantee refused by admission control")
    dialog.get_by_role("button", name="Override with reason").scroll_into_view_if_needed()
    shot(page, "subscriber-guarantee-refused", full_page=False)
    dialog.get_by_role("button", name="Override with reason").click()

    audit = dialog.get_by_test_id("override-audit")
    expect(audit).to_contain_text(f"admission_override (update) of subscriber {sub['id']} by {OPERATOR[0]}")
    expect(audit).to_contain_text("Reason: premium SIM trial, the slice's limit is raised on Monday (change 4712)")
    expect(audit).to_contain_text(refusal)
    assert api.get(f"/subscribers/{sub['id']}").json()["guaranteed_bps"] == 50 * MBIT
    shot(page, "subscriber-guarantee-override", full_page=False)
    dialog.get_by_role("button", name="Close", exact=True).click()
    expect(table.get_by_role("row").filter(has_text=imsi)).to_contain_text("50 Mbit/s")


def test_csv_import_refused_then_overridden(page: Page, stack: Stack) -> None:
    """A CSV whose subscribers' guarantees exceed their slice's rate limit: the import shows
    admission control's numbers and imports nothing; the operator imports the same file anyway
    with a reason, and the subscribers are there."""
    api = _api(stack)
    suffix = free_port()
    tenant, _, sl = _tenant_backend_slice(
        api,
        "csv",
        suffix,
        vni=9000 + suffix % 1000,
        vlan=2000 + suffix % 500,
        link_bps=100 * MBIT,
        sla={"guaranteed_mbps": 10, "rate_limit_mbps": 40},
    )
    imsis = [f"00102{suffix:06d}{i:04d}" for i in (1, 2)]
    csv = "imsi,ue_ip,teids,tenant,slices,guaranteed_bps\n" + "".join(
        f"{imsi},10.89.0.{i},{100 + i},{tenant['name']},{sl['name']},{30 * MBIT}\n" for i, imsi in enumerate(imsis, 1)
    )

    login(page, *OPERATOR)
    page.goto(f"/subscribers?tenant_id={tenant['id']}")
    page.locator('input[type="file"]').set_input_files(
        files=[{"name": "subscribers.csv", "mimeType": "text/csv", "buffer": csv.encode()}]
    )
    page.get_by_role("button", name="Import", exact=True).click()
    expect(
        page.get_by_text(
            f"Nothing was imported: slice {sl['name']}: the guarantees of its 2 subscribers add up "
            "to 60 Mbit/s, more than its rate limit of 40 Mbit/s"
        )
    ).to_be_visible()
    expect(page.get_by_test_id(f"admission-subscribers-{sl['name']}")).to_have_text(
        f"Slice {sl['name']}: its 2 subscribers' guarantees = 60 Mbit/s, above its rate limit of 40 Mbit/s"
    )
    assert api.get("/subscribers", params={"tenant_id": tenant["id"]}).json()["count"] == 0
    page.get_by_role("textbox", name="Reason for admitting it anyway").fill("bulk trial SIMs, ticket 4713")
    assert_accessible(page, "a CSV import refused by admission control")
    page.get_by_role("button", name="Override with reason").scroll_into_view_if_needed()
    shot(page, "subscriber-import-refused", full_page=False)
    page.get_by_role("button", name="Override with reason").click()

    expect(page.get_by_role("status").filter(has_text="Imported")).to_contain_text("2 of 2 rows")
    table = page.get_by_role("table", name="Subscribers")
    for imsi in imsis:
        expect(table.get_by_role("row").filter(has_text=imsi)).to_contain_text("30 Mbit/s")
    entries = api.get("/audit", params={"q": "admission_override", "sort": "-id", "limit": 5}).json()["data"]
    assert any(
        e["after"]["reason"] == "bulk trial SIMs, ticket 4713" and e["after"]["action"] == "import" for e in entries
    ), entries
