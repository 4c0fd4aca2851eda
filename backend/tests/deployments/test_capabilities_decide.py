"""Capabilities decide (#14 item 3): preview and deploy refuse, per slice, field and backend,
an SLA attribute the data plane cannot enforce -- unless an operator accepted it on the
backend, in which case the preview lists it as accepted, never as enforced.

Real drivers' ``capabilities()`` (their truth, docs/rules.md): NetFPGA limits rates (the RTL's
per-slice token buckets) but marks no ECN; P4Runtime/BMv2 marks ECN in its vQueue QoS mode, not with meters.
Lowering is pure, so no data plane needs to run for the preview.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from sliceportal.core.config import DEFAULT_DATA_DIR
from sliceportal.drivers.registry import discover
from sliceportal_testbed.processes import free_port
from tests.factories import add_backend, add_slice, add_tenant


def _address(driver: str) -> str:
    # nothing listens there: lowering is pure, the preview never reaches the data plane
    port = free_port()
    return f"unix:{DEFAULT_DATA_DIR}/run/h4-absent-{port}.sock" if driver == "netfpga" else f"127.0.0.1:{port}"


def _world(client: TestClient, op: dict[str, str], driver: str, **options: Any) -> tuple[int, int]:
    bid = add_backend(client, op, f"{driver}-{free_port()}", {"address": _address(driver), **options}, driver)["id"]
    sid = add_slice(
        client,
        op,
        add_tenant(client, op),
        sla={"rate_limit_mbps": 20, "max_delay_ms": 50, "ecn_delay_ms": 10},
        backend_ids=[bid],
        services=[{"name": "video", "lane": 4, "dst_ports": [{"lo": 5000, "hi": 5007}], "dscp": [34]}],
    )
    return int(bid), sid


def test_capabilities_say_the_truth() -> None:
    registry = discover()
    caps = {name: registry.create(name, {"address": _address(name)}).capabilities() for name in ("netfpga", "p4rt")}
    assert (caps["netfpga"].rate_limit, caps["netfpga"].ecn) == (True, False)  # RTL token buckets, no marker
    assert (caps["p4rt"].rate_limit, caps["p4rt"].ecn) == (True, True)


def test_netfpga_refuses_ecn_until_accepted(client: TestClient, op: dict[str, str]) -> None:
    bid, sid = _world(client, op, "netfpga")
    r = client.get(f"/api/v1/backends/{bid}/preview", headers=op)
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["title"] == "Not enforceable on this backend"
    # The rate limit and its burst (max delay) are enforced by the RTL's limiter now.
    assert [e["field"] for e in problem["errors"]] == [f"slices.{sid}.sla.ecn_delay_ms"]
    name = client.get(f"/api/v1/backends/{bid}", headers=op).json()["name"]
    assert problem["errors"][0]["message"] == (
        f"slice embb: sla.ecn_delay_ms cannot be enforced on backend {name} (netfpga does not mark ECN)"
    )
    # deploying refuses the same way, before anything is stored or pushed
    d = client.post(f"/api/v1/backends/{bid}/deployments", headers=op)
    assert d.status_code in (422, 503), d.text  # 503 first when the (absent) simulator does not answer
    assert client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json()["count"] == 0
    # accepting ECN lets the preview through, listing ECN as accepted (never as enforced)
    b = client.get(f"/api/v1/backends/{bid}", headers=op).json()
    r = client.patch(
        f"/api/v1/backends/{bid}", json={"accept_unenforced": ["ecn"], "version": b["version"]}, headers=op
    )
    assert r.status_code == 200 and r.json()["accept_unenforced"] == ["ecn"]
    p = client.get(f"/api/v1/backends/{bid}/preview", headers=op)
    assert p.status_code == 200, p.text
    assert [(g["field"], g["capability"], g["accepted"]) for g in p.json()["enforcement"]] == [
        ("sla.ecn_delay_ms", "ecn", True)
    ]
    bad = client.patch(f"/api/v1/backends/{bid}", json={"accept_unenforced": ["teleport"]}, headers=op)
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"].startswith("accept_unenforced")


@pytest.mark.parametrize(("qos_mode", "gaps"), [("vqueue", []), ("meter", ["sla.ecn_delay_ms"])])
def test_p4rt_ecn_only_with_the_vqueue(client: TestClient, op: dict[str, str], qos_mode: str, gaps: list[str]) -> None:
    bid, sid = _world(client, op, "p4rt", qos_mode=qos_mode)
    r = client.get(f"/api/v1/backends/{bid}/preview", headers=op)
    if gaps:
        assert r.status_code == 422 and [e["field"] for e in r.json()["errors"]] == [f"slices.{sid}.{g}" for g in gaps]
    else:
        assert r.status_code == 200 and r.json()["enforcement"] == [], r.text
