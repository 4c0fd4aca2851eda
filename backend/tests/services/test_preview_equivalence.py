"""The deploy preview of the demo data says ``proven`` on all three backends (issue #20
item 4): the API's preview carries the equivalence of each driver's lowered plan with the
IR, and the stored rule set keeps it."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.core.config import DEFAULT_DATA_DIR
from sliceportal.models import Backend, Slice
from sliceportal.services.bootstrap_data import seed_demo
from sliceportal_testbed.processes import RunningTarget, free_port
from tests.factories import add_backend, deploy_backend

# What each driver needs to lower; nothing listens at the addresses: lowering is pure, a
# preview never reaches the data plane. The P4 backend
# takes the tenants' VLANs on trunks, as the testbed's does, so every tenant reaches the
# classifier.
BACKENDS = {
    "xdp": {},
    "netfpga": {"address": "unix:{run}/h1-absent-{port}.sock", "capacity": 1024},
    "p4rt": {"address": "127.0.0.1:{port}", "lanes": 8, "trunk_ports": [1, 2], "uplink_port": 2},
}


def test_demo_preview_is_proven_on_all_three_backends(client: TestClient, session: Session, op: dict[str, str]) -> None:
    assert seed_demo(session)
    ids = {}
    for driver, options in BACKENDS.items():
        port = free_port()
        opts = {
            k: v.format(run=DEFAULT_DATA_DIR / "run", port=port) if isinstance(v, str) else v
            for k, v in options.items()
        }
        # the demo SLAs ask for rate limits / ECN some planes lack: accepted, as the testbed does
        ids[driver] = add_backend(client, op, f"demo-{driver}", opts, driver, accept_unenforced=["rate_limit", "ecn"])[
            "id"
        ]
    backends = list(session.scalars(select(Backend)))
    for s in session.scalars(select(Slice)):
        s.backends = backends
    session.commit()

    for driver, bid in ids.items():
        r = client.get(f"/api/v1/backends/{bid}/preview", headers=op)
        assert r.status_code == 200, r.text
        p = r.json()
        eq = p["equivalence"]
        assert eq["verdict"] == "proven", (driver, eq)
        assert eq["counterexample"] is None and eq["checked_entries"] >= p["rules_after"] > 0
        assert eq["method"].startswith("exact") and eq["elapsed_ms"] >= 0 and eq["cubes"] > 0
        assert f"{p['rules_after']} IR rules" in eq["detail"]


def test_a_deployed_rule_set_keeps_its_equivalence(
    client: TestClient, session: Session, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    """Deployed onto the bundled P4Runtime target, the stored rule set carries the proof."""
    target = start_target("--priority-queues", "8")
    assert seed_demo(session)
    bid = add_backend(client, op, "demo-p4", {"address": target.address, "trunk_ports": [1, 2], "uplink_port": 2})["id"]
    backend = session.get_one(Backend, bid)
    for s in session.scalars(select(Slice)):
        s.backends = [backend]
    session.commit()
    dep = deploy_backend(client, op, bid)
    assert dep["status"] == "succeeded", dep
    rs = client.get(f"/api/v1/backends/{bid}/rule-sets/{dep['rule_set_number']}", headers=op).json()
    eq = rs["explanation"]["equivalence"]
    assert eq["verdict"] == "proven" and eq["counterexample"] is None and eq["checked_entries"] > 0
