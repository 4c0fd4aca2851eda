"""The live loop in Chromium, on all three data planes of the emulated testbed (issue #12):
for each backend, a new slice is deployed → its KPIs for that backend appear within 5 s;
the congestion scenario (the operator's button) → the slice shows DEGRADED on that backend
and the violation is in its SLA history; a rollback to the rule set before it → the slice
shows not deployed there and its traffic lands where the data plane puts it (the backend's
default traffic). The API reports the same at every step."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import OPERATOR, Stack, login, shot

DRIVERS = ("xdp", "p4rt", "netfpga")


class Api:
    def __init__(self, stack: Stack) -> None:
        token = httpx.post(
            f"{stack.base_url}/api/v1/login/access-token", data={"username": OPERATOR[0], "password": OPERATOR[1]}
        ).json()["access_token"]
        self.client = httpx.Client(
            base_url=f"{stack.base_url}/api/v1", timeout=30, headers={"Authorization": f"Bearer {token}"}
        )

    def get(self, path: str, **params: Any) -> Any:
        r = self.client.get(path, params=params)
        assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text}"
        return r.json()

    def post(self, path: str, body: Any = None, status: int = 201) -> Any:
        r = self.client.post(path, json=body)
        assert r.status_code == status, f"POST {path}: {r.status_code} {r.text}"
        return r.json()


def _wait_default(api: Any, backend: int, what: str, check: Callable[[], bool], timeout_s: float = 60) -> None:
    """``_wait`` for a slice's traffic on a plane's default path; a miss says what the plane showed
    (on XDP in CI this took over 30 s twice, and passes in seconds on an idle machine)."""
    try:
        _wait(what, check, timeout_s)
    except AssertionError as exc:
        plane = next(b for b in api.get("/testbed")["backends"] if b["backend_id"] == backend)
        raise AssertionError(
            f"{exc}; the plane: flows {plane['flows']}, offered {plane['offered_pps']} pps, "
            f"placement {plane['placement_check']}, default traffic {plane['default_traffic']}, "
            f"last interval {plane['last_interval_at']}"
        ) from None


def _wait(what: str, check: Callable[[], Any], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.25)
    raise AssertionError(f"{what} within {timeout_s:.0f} s (last: {last!r})")


def _status(api: Api, slice_id: int, backend_id: int) -> dict[str, Any]:
    st = api.get(f"/slices/{slice_id}/status")
    return dict(next(b for b in st["backends"] if b["backend_id"] == backend_id))


@pytest.fixture
def planes(stack: Stack) -> dict[str, int]:
    if not stack.live:
        pytest.fail("the live-loop journey needs the emulated testbed: run as root (E2E_TESTBED unset)")
    api = Api(stack)
    state = _wait(
        "the testbed's three data planes up",
        lambda: (
            lambda s: (
                s
                if s["running"]
                and all(b["up"] for b in s["backends"])
                and {b["driver"] for b in s["backends"]} >= set(DRIVERS)
                else None
            )
        )(api.get("/testbed")),
        60,
    )
    return {b["driver"]: b["backend_id"] for b in state["backends"]}


@pytest.mark.parametrize("driver", DRIVERS)
def test_live_loop_on_each_backend(page: Page, stack: Stack, planes: dict[str, int], driver: str) -> None:
    api = Api(stack)
    backend = planes[driver]
    red = next(t for t in api.get("/tenants", q="mvno-red")["data"] if t["name"] == "mvno-red")
    st = next(t for t in api.get("/slice-types", q="Best Effort")["data"] if t["name"] == "Best Effort")
    index = DRIVERS.index(driver)
    name = f"loop-{driver}"
    sl = api.post(
        "/slices",
        {
            "name": name,
            "tenant_id": red["id"],
            "slice_type_id": st["id"],
            "backend_ids": [backend],
            "sla": {"max_loss_pct": 1.0, "max_delay_ms": 200.0},
            "services": [
                {"name": "bulk", "lane": st["lanes"][0], "dst_ports": [{"lo": 7200 + index, "hi": 7200 + index}]}
            ],
        },
    )
    for u in range(2):
        api.post(
            "/subscribers",
            {
                "tenant_id": red["id"],
                "imsi": f"0010188{index:02d}{u:06d}",
                "ue_ip": f"10.45.{60 + index}.{u + 1}",
                "teids": [880_000 + 10 * index + u],
                "slice_ids": [sl["id"]],
            },
        )
    before = api.get(f"/backends/{backend}/deployments", limit=1)["data"][0]["rule_set_number"]

    login(page, *OPERATOR)
    page.goto(f"/slices/{sl['id']}")
    row = page.get_by_test_id(f"status-{_status(api, sl['id'], backend)['backend_name']}")
    expect(row).to_have_attribute("data-state", "draft")
    assert _status(api, sl["id"], backend)["state"] == "draft"

    # its subscribers already send (the slice is assigned): until it is deployed, the data
    # plane puts their packets on its default path, and the slice has no KPIs of its own
    def in_default() -> bool:
        return any(
            sl["id"] in d["from_slices"] and d["rx_packets"] > 0
            for b in api.get("/testbed")["backends"]
            if b["backend_id"] == backend
            for d in b["default_traffic"]
        )

    # the traffic step adds the new subscribers' flows; under CI load an interval can take long
    _wait_default(api, backend, f"{name}'s traffic reaching {driver} as default traffic", in_default)
    assert api.get(f"/slices/{sl['id']}/kpis", backend_id=backend) == []

    # deploy → KPIs of this backend within 5 s, in the API and on the page
    deployed = api.post(f"/backends/{backend}/deployments")
    assert deployed["status"] == "succeeded", deployed
    t0 = time.monotonic()
    _wait(
        f"{name}'s KPIs from {driver}",
        lambda: [p for p in api.get(f"/slices/{sl['id']}/kpis", backend_id=backend) if p["rx_packets"] > 0],
        5,
    )
    latency = time.monotonic() - t0
    expect(row).to_have_attribute("data-state", "deployed", timeout=5_000)
    expect(page.get_by_role("heading", name=f"Slice {name}").locator("..")).to_contain_text("deployed", timeout=6_000)
    expect(page.get_by_test_id("kpi-samples")).not_to_have_text("0 samples in the last 5 min", timeout=5_000)
    print(f"{driver}: first KPI point {latency:.2f} s after the deployment succeeded")
    assert _status(api, sl["id"], backend)["state"] == "deployed"
    _wait(f"{name}'s traffic off {driver}'s default path", lambda: not in_default(), 10)
    expect(page.get_by_test_id("sla-status")).to_have_attribute("data-sla", "met", timeout=10_000)
    shot(page, f"live-loop-{driver}-deployed")

    # congestion (the operator's button) → degraded on this backend, the violation in its history.
    # The slice is best effort (lane 0), the first to suffer: on XDP and the P4 target strict
    # priority starves it (a loss violation); on the NetFPGA model its own round-robin path
    # keeps its share of the link, so its packets wait instead (a delay violation, also fine)
    if driver == "netfpga":
        # the card's round robin gives each slice's path an equal share of what is left; at the
        # button's factor the two-subscriber slice can stay inside its share, so the journey asks
        # the API for a deeper cut (capacity 1/20 of the offered load) on this plane
        api.post("/testbed/congestion", {"backend_id": backend, "duration_s": 30, "factor": 20}, status=202)
    else:
        # traffic-affecting: the button only asks; the dialog says what and for how long
        page.get_by_role("button", name="Congestion (30 s)…").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("for 30 seconds")
        with page.expect_response(lambda r: r.url.endswith("/testbed/congestion")) as started:
            dialog.get_by_role("button", name="Congest for 30 s").click()
        assert started.value.status == 202
    expect(row).to_have_attribute("data-sla", "degraded", timeout=30_000)
    assert _status(api, sl["id"], backend)["sla"] == "degraded"
    history = page.get_by_role("table", name="SLA history")
    expect(history).to_contain_text(re.compile("loss|delay"), timeout=10_000)
    violations = api.get("/violations", slice_id=sl["id"], backend_id=backend)["data"]
    assert violations and violations[0]["backend_id"] == backend, violations
    assert {v["metric"] for v in violations} & {"loss_pct", "delay_p99_ms"}, violations
    history.get_by_role("button", name="Explain").first.click()
    explain = page.get_by_test_id("explain")
    expect(explain).to_contain_text("Hold-down: opened after 3 consecutive intervals")
    shot(page, f"live-loop-{driver}-degraded", full_page=False)
    page.keyboard.press("Escape")
    # the operator ends it (a starved lane would hide where the rollback puts the traffic)
    with page.expect_response(lambda r: "/testbed/congestion/" in r.url) as ended:
        page.get_by_role("button", name=re.compile(r"^End congestion")).click()
    assert ended.value.status == 204
    expect(page.get_by_role("button", name="Congestion (30 s)…")).to_be_visible(timeout=5_000)
    assert next(b for b in api.get("/testbed")["backends"] if b["backend_id"] == backend)["congestion_until"] is None

    # roll back to the rule set before this slice → not deployed there; its traffic goes
    # where the data plane puts it now (the default path), and no new KPIs of its own
    back = api.post(f"/backends/{backend}/rollback", {"rule_set": before})
    assert back["status"] == "succeeded", back
    expect(row).to_have_attribute("data-state", "not_deployed", timeout=5_000)
    assert _status(api, sl["id"], backend)["state"] == "not_deployed"
    _wait_default(api, backend, f"{name}'s traffic back on {driver}'s default path", in_default)
    time.sleep(2)  # an interval measured before the rollback may still be written
    cut = len(api.get(f"/slices/{sl['id']}/kpis", backend_id=backend))
    time.sleep(3)
    assert len(api.get(f"/slices/{sl['id']}/kpis", backend_id=backend)) == cut, "KPIs kept coming after the rollback"
    expect(row).to_have_attribute("data-sla", "no_data", timeout=15_000)
    shot(page, f"live-loop-{driver}-rolled-back")
