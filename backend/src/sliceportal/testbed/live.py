"""The live emulated testbed of ``sliceportal run``: data planes, traffic and KPIs.

Namespaces edge / core / alt (``Testbed``); the XDP data plane attached to core's link
(seed 001: prioritised lanes steered to their CPU and passed up, the rest rewritten and
sent to alt with XDP_TX); the bundled P4Runtime target as a second backend; Every demo
slice is deployed through the same API pipeline an operator uses. A sender in edge plays
the slices' subscribers (VXLAN / GTP-U encapsulated, seq + timestamp in each payload);
the Verilator model of the NetFPGA card as a third backend (rules and counters; no live
traffic through it here: its own tests and bench drive it with pcaps);
meters on core and alt measure each flow; every second their reports become KPI
samples per slice and lane, stored, checked against the SLAs and streamed.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import queue
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.drivers.contract import DriverError
from sliceportal.kpi.counters import CounterCollector, DropTotals
from sliceportal.kpi.hub import KpiHub
from sliceportal.kpi.points import points_from_meter
from sliceportal.kpi.store import ingest
from sliceportal.models import Backend, Slice, Subscriber, Tenant
from sliceportal.models.subscribers import subscriber_slice
from sliceportal.services import deployments
from sliceportal.services.backends import describe
from sliceportal.testbed.netns_testbed import Testbed
from sliceportal.testbed.processes import start_p4runtime_target
from sliceportal.traffic.capture import open_capture, run_capture
from sliceportal.traffic.meter import Meter, MeterReport
from sliceportal.traffic.packets import Encap, Flow, Underlay
from sliceportal.traffic.scenarios import ScenarioFlow
from sliceportal.traffic.sender import open_sender, send

log = logging.getLogger(__name__)

SERVICE_HOST = "10.99.0.1"
USERS_PER_SLICE = 4  # flows per slice = users x services; enough to fill every lane
BEST_EFFORT_LANE = 0  # folded lane the XDP backend sends to the alt node (seed 001)
FLOW_REFRESH_S = 5.0  # how often the traffic follows new slices / subscribers
FLOW_ID_GENERATION = 1_000_000  # flow ids of successive traffic generations never collide


@dataclass
class LiveTestbed:
    sessions: sessionmaker[Session]
    hub: KpiHub
    prefix: str = "sp-run-"
    rate_pps: float = 2000.0
    interval_s: float = 1.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _reports: queue.Queue[MeterReport] = field(default_factory=queue.Queue)
    _slice_ids: dict[int, int] = field(default_factory=dict)  # the flows' slice index is the slice id
    _meters: list[Meter] = field(default_factory=list)
    _sender: threading.Thread = field(default_factory=threading.Thread)
    _sender_stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        if os.geteuid() != 0:
            log.warning("not root: no emulated testbed (network namespaces and XDP need root)")
            return
        tb = self._stack.enter_context(Testbed(self.prefix))
        with self.sessions() as session:
            backends = [self._backend(session, "xdp-core", "xdp", self._xdp_options(tb))]
            bmv2 = self._start_bmv2()
            if bmv2 is not None:
                backends.append(self._backend(session, "bmv2", "p4rt", {"address": bmv2}))
            netfpga = self._start_netfpga()
            if netfpga is not None:
                backends.append(self._backend(session, "netfpga-sim", "netfpga", {"address": netfpga}))
            for s in session.scalars(select(Slice)):
                s.backends = backends
            session.commit()
            for b in backends:
                dep = deployments.deploy(session, b, "testbed")
                log.info("deployed %s on %s: %s %s", dep.rule_set_id, b.name, dep.status, dep.error)
        self._meters = [Meter(), Meter()]
        for meter, role in zip(self._meters, ("core", "alt"), strict=True):
            sock = open_capture(tb[role].ifname, tb[role].netns)
            self._spawn(f"meter-{role}", run_capture, sock, meter, stop=self._stop, interval_s=self.interval_s,
                        on_interval=self._reports.put)
        self._spawn("kpi-writer", self._write_kpis)
        self._spawn("traffic", self._traffic, tb)

    def _traffic(self, tb: Testbed) -> None:
        """Send the current slices' traffic; when slices or their subscribers change (an
        operator created one), start again with the new flows under fresh flow ids."""
        edge, core = tb["edge"], tb["core"]
        underlay = Underlay(src_mac=edge.mac, dst_mac=core.mac, outer_src=edge.ip, outer_dst=core.ip)
        out = open_sender(tb.peer_port("core"), edge.netns)
        generation, current = 0, None
        while not self._stop.is_set():
            with self.sessions() as session:
                flows, places = self._flows(session, first_id=generation * FLOW_ID_GENERATION)
            shape = frozenset((sf.slice_index, sf.priority, sf.flow) for sf in flows)
            if shape != current:
                if current is not None:
                    self._sender_stop.set()
                    self._sender.join(timeout=5)
                current, generation = shape, generation + 1
                for meter in self._meters:
                    meter.places.update(places)
                self._slice_ids = {sid: sid for sid, _ in places.values()}
                self._sender_stop = threading.Event()
                if flows:
                    self._sender = threading.Thread(
                        target=send, args=(out, flows), name="testbed-sender", daemon=True,
                        kwargs={"rate_pps": self.rate_pps, "stop": self._sender_stop, "underlay": underlay})
                    self._sender.start()
                log.info("testbed traffic: %d flows at %.0f packets/s", len(flows), self.rate_pps)
            self._stop.wait(FLOW_REFRESH_S)
        self._sender_stop.set()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)
        self._stack.close()

    # ---- pieces -------------------------------------------------------------------

    def _spawn(self, name: str, target: Any, *args: Any, **kwargs: Any) -> None:
        def run() -> None:
            try:
                target(*args, **kwargs)
            except Exception:
                log.exception("testbed %s stopped", name)

        t = threading.Thread(target=run, name=f"testbed-{name}", daemon=True)
        t.start()
        self._threads.append(t)

    @staticmethod
    def _xdp_options(tb: Testbed) -> dict[str, Any]:
        core, alt = tb["core"], tb["alt"]
        return {"interface": core.ifname, "netns": core.netns, "tx_peer": f"{tb['edge'].netns}/{tb.peer_port('core')}",
                "alt_mac": alt.mac, "alt_ip": alt.ip, "alt_lanes": [BEST_EFFORT_LANE], "lanes": 4, "paths": 8}

    def _start_bmv2(self) -> str | None:
        try:
            target = start_p4runtime_target("--priority-queues", "8")
        except (RuntimeError, ImportError) as exc:
            log.warning("no P4Runtime backend: %s", exc)
            return None
        self._stack.callback(target.stop)
        return target.address

    def _start_netfpga(self) -> str | None:
        """The Verilator model of the NetFPGA card, its register server on a Unix socket."""
        try:
            from sliceportal_netfpga.simulator import start
        except ImportError as exc:
            log.warning("no NetFPGA backend: %s", exc)
            return None
        sock = Path(tempfile.gettempdir()) / f"{self.prefix}netfpga.sock"
        try:
            sim = start(sock)
        except DriverError as exc:
            log.warning("no NetFPGA backend: %s", exc.message)
            return None
        self._stack.callback(sim.stop)
        return sim.address

    @staticmethod
    def _backend(session: Session, name: str, driver: str, options: dict[str, Any]) -> Backend:
        b = session.scalar(select(Backend).where(Backend.name == name))
        if b is None:
            b = Backend(name=name, driver=driver, options=options)
            session.add(b)
        else:
            b.options = options
        describe(session, b)
        session.commit()
        return b

    @staticmethod
    def _flows(session: Session, first_id: int = 0) -> tuple[list[ScenarioFlow], dict[int, tuple[int, int]]]:
        """The demo's traffic: a few subscribers of every slice on each of its services."""
        flows: list[ScenarioFlow] = []
        places: dict[int, tuple[int, int]] = {}
        for s in session.scalars(select(Slice).order_by(Slice.id)):
            tenant = session.get(Tenant, s.tenant_id)
            assert tenant is not None
            users = session.scalars(select(Subscriber).join(subscriber_slice).where(
                subscriber_slice.c.slice_id == s.id).order_by(Subscriber.id).limit(USERS_PER_SLICE)).all()
            for u_index, u in enumerate(users):
                for svc_index, svc in enumerate(s.services):
                    port = svc.dst_ports[0][0] if svc.dst_ports else 5000
                    flow_id = first_id + len(flows)
                    flow = Flow(src_ip=str(ipaddress.IPv4Address(str(u.ue_ip))), dst_ip=SERVICE_HOST, dst_port=port,
                                dscp=svc.dscp[0] if svc.dscp else 0, vni=tenant.vni,
                                teid=u.teids[0] if u.teids else 0, encap=Encap.VXLAN_GTP)
                    flows.append(ScenarioFlow(flow_id=flow_id, flow=flow, slice_index=s.id, user=u_index,
                                              service=svc_index, priority=svc.lane, frame_size=512))
                    places[flow_id] = (s.id, svc.lane)
        return flows, places

    def _write_kpis(self) -> None:
        """One thread stores what both meters report, so captures never wait on the database.

        The data planes' own counters (drops by reason, ECN marks) are read once an
        interval and added to the next sample of the same slice and lane.
        """
        collector = CounterCollector()
        pending: dict[tuple[int, int], DropTotals] = {}
        last_poll = 0.0
        while not self._stop.is_set():
            try:
                report = self._reports.get(timeout=0.5)
            except queue.Empty:
                continue
            points = points_from_meter(report, self._slice_ids, datetime.now(UTC), self.interval_s)
            with self.sessions() as session:
                if time.monotonic() - last_poll >= self.interval_s:
                    last_poll = time.monotonic()
                    backends = list(session.scalars(select(Backend)))
                    for place, totals in collector.collect(session, backends).items():
                        merged = pending.setdefault(place, DropTotals())
                        for reason, n in totals.drops.items():
                            merged.drops[reason] = merged.drops.get(reason, 0) + n
                        merged.ecn_marks += totals.ecn_marks
                for p in points:
                    if (p.slice_id, p.lane) in pending:
                        totals = pending.pop((p.slice_id, p.lane))
                        p.drops, p.ecn_marks = totals.drops, totals.ecn_marks
                if points:
                    ingest(session, points, self.hub)
