"""The testbed registers each backend with the egress rate its plane really runs at (issue #14
item 2): the P4 and NetFPGA planes' ``link_bps`` is the link rate given to their processes, so
admission control checks against that, not against the default 10 Gbit/s. The demo's slices,
sized for the traffic XDP is offered, do not fit those links: the demo assignment admits them
with an audited override (the computation kept), and every plane still gets its first
deployment."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.core.db import session_factory
from sliceportal.kpi.hub import KpiHub
from sliceportal.models import AuditLog, Backend, Slice
from sliceportal.models.slicing import DEFAULT_LINK_BPS
from sliceportal.services import admission
from sliceportal.services.bootstrap_data import seed_demo
from sliceportal_testbed.live import DEMO_ADMISSION_OVERRIDE, LiveTestbed
from sliceportal_testbed.processes import leftovers

pytestmark = pytest.mark.needs_root


def test_backends_carry_their_planes_link_rate_and_the_demo_is_admitted_knowingly(
    db_url: str, session: Session
) -> None:
    seed_demo(session, users_per_slice=2)
    prefix = f"c{os.getpid() % 10000}-"
    testbed = LiveTestbed(session_factory(db_url), KpiHub(), prefix=prefix, rate_pps=300)
    testbed.start()
    try:
        assert testbed.running, testbed.error
        session.expire_all()
        planes = {p.driver: p for p in testbed.planes}
        backends = {b.driver: b for b in session.scalars(select(Backend))}
        for driver in ("p4rt", "netfpga"):
            plane = planes[driver]
            assert plane.up and not plane.reason, (driver, plane.reason)
            # the rate the process was started with is the one admission control sees
            assert plane.link_bps is not None and plane.egress_bps == plane.link_bps
            assert backends[driver].link_bps == round(plane.link_bps)
            assert backends[driver].link_bps < 20_000_000, backends[driver].link_bps  # Mbit/s, not Gbit/s
        # nothing paces the XDP plane outside a congestion scenario: its record stays
        assert planes["xdp"].link_bps is None and backends["xdp"].link_bps == DEFAULT_LINK_BPS

        slices = list(session.scalars(select(Slice).order_by(Slice.id)))
        assert {s.name for s in slices} == {"red-embb", "red-iot", "blue-urllc"}
        assert all(s.admission_override == DEMO_ADMISSION_OVERRIDE for s in slices)
        assert all({b.id for b in s.backends} == {b.id for b in backends.values()} for s in slices)
        # the override was needed on the software planes, and only there: without it the
        # demo's SLAs do not fit their links (the same computation, recorded per backend)
        for s in slices:
            s.admission_override = None
        fits = {d: admission.evaluate(b, admission.assigned_slices(session, b)).ok for d, b in backends.items()}
        session.rollback()
        assert fits == {"xdp": True, "p4rt": False, "netfpga": False}
        audited = {
            e.object_id: e.after
            for e in session.scalars(
                select(AuditLog).where(AuditLog.action == "admission_override", AuditLog.object_type == "backend")
            )
        }
        assert set(audited) == {backends["p4rt"].id, backends["netfpga"].id}
        for driver in ("p4rt", "netfpga"):
            after = audited[backends[driver].id] or {}
            assert after["reason"] == DEMO_ADMISSION_OVERRIDE and after["action"] == "testbed demo assignment"
            assert any("exceed" in r or "worst-case delay" in r for r in after["refusals"]), after["refusals"]
            assert after["admission"][0]["capacity_bps"] == backends[driver].link_bps
        # and every plane got its start-up deployment (no refusal marked a backend failed)
        assert all(b.health != "failed" for b in backends.values()), {
            b.name: b.health_detail for b in backends.values()
        }
    finally:
        testbed.stop()
    assert leftovers(prefix) == []
