"""Faults of the live testbed (issue #19): a killed data-plane process is noticed, restarted
and reconciled; what a SIGKILLed run leaves behind (namespaces, host links, orphaned
data-plane processes) is found and removed by the next start."""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.models import Backend, Deployment, DeploymentKind, KpiSample, Role, Slice, Subscriber
from sliceportal.rules.ir import RuleIR
from sliceportal.services import deployments
from sliceportal.services.backends import POOL
from sliceportal.services.bootstrap_data import seed_demo
from sliceportal_testbed.live import Plane
from sliceportal_testbed.netns_testbed import Testbed, namespaces
from sliceportal_testbed.processes import BMV2_DIR, leftovers, reap_leftovers
from tests.factories import live_testbed_settings, login, make_user, running_controller, wait_until

pytestmark = pytest.mark.needs_root


def test_killed_data_plane_is_marked_down_restarted_and_reconciled(db_url: str, session: Session) -> None:
    seed_demo(session, users_per_slice=2)
    make_user(session, "op", Role.OPERATOR)
    settings = live_testbed_settings("k", 500)
    prefix = settings.testbed_prefix
    app = create_app(settings, db_url)
    with TestClient(app) as client, running_controller(settings, db_url) as controller:
        op = login(client, "op")
        testbed = controller.testbed
        assert testbed is not None
        plane = next(p for p in testbed.planes if p.driver == "p4rt")
        assert plane.up and plane.process is not None and plane.process.proc is not None
        # a hand edit behind the portal's back (the data plane emptied): its own counters no
        # longer match where the KPIs would put its traffic, and the testbed says so
        wait_until("the placement check", lambda: plane.placement_check == "agrees", 15)
        backend = session.get_one(Backend, plane.backend_id)
        with POOL.use(session, backend) as drv:
            caps = drv.capabilities()
            drv.apply(drv.lower(RuleIR(lanes=caps.lanes, paths=caps.paths, rules=())), lambda _: None)
        wait_until("the check to see the edit", lambda: plane.placement_check.startswith("differs"), 10)
        assert client.post(f"/api/v1/backends/{plane.backend_id}/reconcile", headers=op).status_code == 200
        wait_until("the check to agree after reconcile", lambda: plane.placement_check == "agrees", 10)
        # while its tables were emptied the slices' lanes got nothing: 100 % loss is the truth
        # there; what follows is about outages
        time.sleep(3)  # an interval measured before the reconcile may still be written
        before_kills = datetime.now(UTC)
        for driver in ("p4rt", "netfpga"):
            _kill_and_recover(client, op, session, next(p for p in testbed.planes if p.driver == driver))
        # a backend that is down has no samples, never zero ones: the meter's lanes received
        # something in every interval it reported, and the collector's counted something entering
        session.expire_all()
        zeros = session.execute(
            select(KpiSample.source, KpiSample.backend_id, KpiSample.lane, KpiSample.ts, KpiSample.tx_packets).where(
                KpiSample.ts > before_kills,
                KpiSample.rx_packets == 0,
                (KpiSample.source == "testbed") | (KpiSample.tx_packets == 0),
            )
        ).all()
        assert not zeros, zeros
    assert leftovers(prefix) == []


def test_leftovers_of_a_killed_run_are_removed(tmp_path: object) -> None:
    prefix = f"l{os.getpid() % 10000}-"
    tb = Testbed(prefix, subnet="10.78.0.0/24")
    tb.up()  # as a run that was SIGKILLed would leave them: never torn down
    p4i, p4o = tb.host_link("p4i", tb["edge"].netns, "p4-in"), tb.host_link("p4o", f"{prefix}sink", "p4-out")
    env = dict(os.environ, PYTHONPATH=str(BMV2_DIR))
    # an orphan: started through a shell that exits at once, so its parent is gone
    subprocess.run(
        ["sh", "-c", f"{sys.executable} -m bmv2_target --grpc-port 0 -i 1@{p4i} -i 2@{p4o} >/dev/null 2>&1 &"],
        env=env,
        check=True,
    )
    try:
        orphans = wait_until("the orphaned target", lambda: leftovers(prefix), 10)
        assert len(orphans) == 1
        assert reap_leftovers(prefix) == orphans
        assert not os.path.exists(f"/proc/{orphans[0]}")
        with Testbed(prefix, subnet="10.78.0.0/24"):  # the next start's namespaces replace the old ones
            pass
        assert not set(namespaces(prefix)) & set(os.popen("ip netns list").read().split())
        assert subprocess.run(["ip", "link", "show", "dev", p4i], capture_output=True).returncode != 0
    finally:
        reap_leftovers(prefix)
        tb.down()


def test_a_backend_that_refuses_at_start_is_failed_and_the_portal_starts(db_url: str, session: Session) -> None:
    seed_demo(session, users_per_slice=2)
    make_user(session, "op", Role.OPERATOR)
    # 1500 subscribers on every other address of one slice: no prefix aggregates them, so the
    # rule set exceeds the small classifiers (XDP's map, the NetFPGA TCAM) and they refuse it
    embb = session.scalar(select(Slice).where(Slice.name == "red-embb"))
    assert embb is not None
    base = int(ipaddress.IPv4Address("10.45.64.0"))
    for i in range(1500):
        session.add(
            Subscriber(
                tenant_id=embb.tenant_id,
                imsi=f"0010199{i:08d}",
                ue_ip=ipaddress.IPv4Address(base + 2 * i),
                teids=[500000 + i],
                slices=[embb],
            )
        )
    session.commit()
    settings = live_testbed_settings("r", 300)
    prefix = settings.testbed_prefix
    with TestClient(create_app(settings, db_url)) as client, running_controller(settings, db_url):
        op = login(client, "op")
        state = client.get("/api/v1/testbed", headers=op).json()
        assert state["running"], state
        refused = [b for b in state["backends"] if b["reason"].startswith("start-up deployment failed")]
        assert refused, state
        for b in refused:
            row = client.get(f"/api/v1/backends/{b['backend_id']}", headers=op).json()
            assert row["health"] == "failed" and row["health_detail"] == b["reason"]
        assert client.get("/api/v1/health").status_code == 200
    assert not set(namespaces(prefix)) & set(os.popen("ip netns list").read().split())
    assert leftovers(prefix) == []


def test_a_second_start_keeps_the_operators_data(db_url: str, session: Session) -> None:
    """Start, change an assignment, stop, start again: the assignment and the rule sets stay
    as they were (restored by reconcile, not redeployed), and traffic follows the assignment."""
    seed_demo(session, users_per_slice=2)
    settings = live_testbed_settings("s", 500)
    prefix = settings.testbed_prefix
    with TestClient(create_app(settings, db_url)), running_controller(settings, db_url):
        pass
    session.expire_all()
    backends = {b.driver: b for b in session.scalars(select(Backend))}
    assert set(backends) == {"xdp", "p4rt", "netfpga"}
    blue = session.scalar(select(Slice).where(Slice.name == "blue-urllc"))
    assert blue is not None and {b.id for b in blue.backends} == {b.id for b in backends.values()}
    blue.backends = [backends["p4rt"]]  # the operator's choice
    backends["p4rt"].options = {**backends["p4rt"].options, "batch_size": 250}  # and an option of theirs
    session.commit()
    rule_sets = {b.id: deployments.current_rule_set(session, b.id) for b in backends.values()}
    assert all(rs is not None for rs in rule_sets.values())
    app = create_app(settings, db_url)
    with TestClient(app), running_controller(settings, db_url) as controller:
        testbed = controller.testbed
        assert testbed is not None
        for plane in testbed.planes:
            assert plane.up and not plane.reason, (plane.name, plane.reason)

        def sending() -> dict[str, set[int]] | None:
            got = {p.driver: {sf.slice_index for sf in p.flows} for p in testbed.planes}
            return got if all(got.values()) else None

        flows = wait_until("traffic to every backend", sending, 10)
        assert blue.id in flows["p4rt"] and blue.id not in flows["xdp"] and blue.id not in flows["netfpga"]
        second_start = datetime.now(UTC)

        def measured() -> set[int] | None:
            session.expire_all()
            got = set(
                session.scalars(
                    select(KpiSample.backend_id).where(KpiSample.ts > second_start, KpiSample.rx_packets > 0).distinct()
                )
            )
            return got if got == {b.id for b in backends.values()} else None

        wait_until("KPIs from every restored data plane", measured, 20)
    session.expire_all()
    assert {b.id for b in session.get_one(Slice, blue.id).backends} == {backends["p4rt"].id}
    assert session.get_one(Backend, backends["p4rt"].id).options["batch_size"] == 250
    for backend_id, rs in rule_sets.items():
        now = deployments.current_rule_set(session, backend_id)
        assert now is not None and rs is not None and now.id == rs.id  # restored, not recompiled
    assert leftovers(prefix) == []


def _kill_and_recover(client: TestClient, op: dict[str, str], session: Session, plane: Plane) -> None:
    """SIGKILL the plane's process: down within one watchdog period, restarted, reconciled
    to the rule set it held, and measured again."""
    assert plane.process is not None and plane.process.proc is not None
    session.expire_all()
    before = session.scalar(select(func.max(Deployment.id))) or 0
    restarts = plane.process.starts
    killed_at = time.monotonic()
    os.kill(plane.process.proc.pid, signal.SIGKILL)

    def health() -> str:
        session.expire_all()
        b = session.get(Backend, plane.backend_id)
        return b.health if b is not None else ""

    def state() -> dict[str, Any]:
        return next(
            b
            for b in client.get("/api/v1/testbed", headers=op).json()["backends"]
            if b["backend_id"] == plane.backend_id
        )

    wait_until(f"{plane.name} health down", lambda: health() == "down", 5)
    assert time.monotonic() - killed_at <= 2.5  # one watchdog period plus a database round trip

    # the controller reports the testbed's state every beat (0.5 s)
    def reported_down() -> dict[str, Any] | None:
        st = state()
        return None if st["up"] else st

    st = wait_until(f"the testbed to report {plane.name} down", reported_down, 1.5)
    assert "exited with code -9" in st["reason"]
    # restarted with backoff, the rule set it held written back by a reconcile
    wait_until(f"{plane.name} restarted", lambda: plane.up, 15)

    def repaired() -> bool:
        session.expire_all()
        return (
            session.scalar(
                select(Deployment).where(
                    Deployment.backend_id == plane.backend_id,
                    Deployment.kind == DeploymentKind.RECONCILE,
                    Deployment.id > before,
                )
            )
            is not None
        )

    wait_until(f"a reconcile of the restarted {plane.name}", repaired, 10)
    assert health() == "ok"
    assert plane.process.starts == restarts + 1
    wait_until(f"the testbed to report {plane.name} up", lambda: state()["up"], 1.5)
    back = datetime.now(UTC)

    def measured() -> bool:
        session.expire_all()
        return bool(
            session.scalar(
                select(func.count())
                .select_from(KpiSample)
                .where(KpiSample.backend_id == plane.backend_id, KpiSample.ts > back)
            )
        )

    wait_until(f"KPIs from the restarted {plane.name}", measured, 10)
