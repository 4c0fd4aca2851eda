"""The testbed's P4 plane on the real BMv2 (``testbed_p4_target="bmv2"``): simple_switch_grpc
from ../shared/p4tools gets the p4c build through the p4rt driver, carries the demo
subscribers' traffic, and its own P4Runtime counters agree with where the KPIs put each flow;
the congestion scenario is refused there with the reason (BMv2 has no port rate to lower);
its P4Runtime is mutual TLS, so a local user's read without the portal's certificate is refused."""

from __future__ import annotations

import os
import shutil
import subprocess

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.core.db import session_factory
from sliceportal.kpi.hub import KpiHub
from sliceportal.models import Backend, KpiSample, Slice
from sliceportal.services.bootstrap_data import seed_demo
from sliceportal_p4rt.client import read_once
from sliceportal_p4rt.tls import Tls
from sliceportal_testbed.live import LiveTestbed, NoCongestionMechanism
from sliceportal_testbed.netns_testbed import namespaces
from sliceportal_testbed.processes import leftovers
from tests.factories import wait_until

pytestmark = pytest.mark.needs_root


def test_the_p4_plane_on_simple_switch_grpc_carries_traffic_and_its_counters_agree(
    db_url: str, session: Session
) -> None:
    if shutil.which("simple_switch_grpc") is None:
        if os.environ.get("CI"):
            pytest.fail("simple_switch_grpc is missing in CI (scripts/bootstrap.sh installs ../shared/p4tools)")
        pytest.skip("simple_switch_grpc is not installed (../shared/p4tools/install.sh)")
    seed_demo(session, users_per_slice=2)
    prefix = f"b{os.getpid() % 10000}-"
    testbed = LiveTestbed(session_factory(db_url), KpiHub(), prefix=prefix, rate_pps=600, p4_target="bmv2")
    testbed.start()
    try:
        assert testbed.running, testbed.error
        plane = next(p for p in testbed.planes if p.driver == "p4rt")
        assert plane.up and not plane.reason, plane.reason
        assert plane.process is not None and "simple_switch_grpc" in plane.process.argv[0]
        embb = session.scalar(select(Slice).where(Slice.name == "red-embb"))
        assert embb is not None

        def lanes() -> set[int] | None:
            session.expire_all()
            got = set(
                session.scalars(
                    select(KpiSample.lane)
                    .where(
                        KpiSample.slice_id == embb.id,
                        KpiSample.backend_id == plane.backend_id,
                        KpiSample.rx_packets > 0,
                    )
                    .distinct()
                )
            )
            return got if got == {0, 2, 4, 6} else None

        wait_until("KPIs of every lane of red-embb through the real BMv2", lanes, 45)
        wait_until(
            "BMv2's own counters to agree with the placement",
            lambda: next(b for b in testbed.state().backends if b.driver == "p4rt").placement_check == "agrees",
            20,
        )
        shown = next(b for b in testbed.state().backends if b.driver == "p4rt")
        assert shown.congestion_mechanism == "" and shown.egress_capacity_bps is None, shown
        with pytest.raises(NoCongestionMechanism, match="priority queues"):
            testbed.congest(plane.backend_id, 5, 2)

        # mutual TLS (#27): the portal holds the client certificate; a local user without it reads nothing
        backend = session.get(Backend, plane.backend_id)
        assert backend is not None and backend.options["tls_client_key_secret"].startswith("-----BEGIN")
        anything = [p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())]  # every table's entries
        for tls in (None, Tls(ca_cert=backend.options["tls_ca_cert"].encode())):
            with pytest.raises(grpc.RpcError) as refused:
                read_once(plane.process.address, 1, anything, timeout_s=5, tls=tls)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        portal = Tls(
            *(backend.options[k].encode() for k in ("tls_ca_cert", "tls_client_cert", "tls_client_key_secret"))
        )
        assert read_once(plane.process.address, 1, anything, timeout_s=5, tls=portal)  # the rule set, to the portal
    finally:
        testbed.stop()
    assert not set(namespaces(prefix)) & set(
        subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split()
    )
    assert leftovers(prefix) == []
