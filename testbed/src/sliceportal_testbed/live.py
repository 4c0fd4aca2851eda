"""The live emulated testbed of ``sliceportal run``: three data planes carrying traffic, KPIs
from what each of them did.

Per backend, links of its own (see ``netns_testbed``):

- **XDP** on ``<prefix>core``'s eth0 (the real kernel): the edge's bridge sends into it;
  prioritised lanes are passed up (measured on core's eth0), the best-effort lane is
  rewritten and sent to ``<prefix>alt`` with XDP_TX (measured there) — seed 001.
- **P4** — the bundled P4Runtime target on live ports: port 1 ``<prefix>p4i`` (peer ``p4-in``
  in edge, a tenant VLAN trunk), port 2 ``<prefix>p4o`` (peer ``p4-out`` in sink, the uplink).
- **NetFPGA** — the Verilator model as a live card: ``--veth-in <prefix>nfi`` (peer ``nf-in``
  in edge), ``--veth-out <prefix>nfo`` (peer ``nf-out`` in sink).

A sender per backend plays the subscribers of the slices *assigned* to that backend
(VXLAN / GTP-U, seq + timestamp in each payload). A meter at each egress measures every
flow; its place (slice, lane) is where the rule set the backend holds puts it
(``placement``), so a slice that is not deployed there shows up as that backend's default
traffic, never as the slice's KPIs. Every interval the meters' reports become KPI points
of (slice, backend, lane) with source ``testbed``: the end-to-end view of an operator's own
traffic monitor. The data planes' own counters are the product's to read, as for any
backend: the controller's KPI collector turns them into ``counters`` samples beside these
(drops by cause, ECN marks, in-plane queueing delay); the testbed reads them only to check
its placement (``counted_hits``), every ``PLACEMENT_CHECK_S``.

The senders are processes of their own (``sender_process``: in the controller's process
they held its GIL from its health probes on a busy host); everything else runs as
supervised loops (``core.loops``): captures, traffic, KPI writer and a
watchdog that restarts a dead data-plane process with backoff, marks its backend down
meanwhile and reconciles it when it is back. Start-up never rewrites the operator's data
(slice assignments are only seeded for slices without any, when the testbed's backends are
first created), a backend that refuses is marked failed and the rest starts anyway, and
everything started is torn down on every exit path; a crashed run's leftovers are removed
by the next start.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from socket import socket
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.control import extensions
from sliceportal.core.loops import SupervisedLoop
from sliceportal.drivers.contract import Counters, DriverError
from sliceportal.kpi.hub import KpiHub
from sliceportal.kpi.points import KpiPoint, points_from_meter
from sliceportal.kpi.store import ingest
from sliceportal.models import Backend, DeploymentStatus, Slice, Subscriber, Tenant
from sliceportal.models.queries import current_rule_set
from sliceportal.models.subscribers import subscriber_slice
from sliceportal.schemas.testbed import DefaultLane, TestbedBackend, TestbedLink, TestbedState
from sliceportal.services import admission, deployments
from sliceportal.services.admission import Override
from sliceportal.services.backends import POOL, describe, pooled_counters, register
from sliceportal.services.errors import BusyError
from sliceportal.traffic.capture import open_capture, run_capture
from sliceportal.traffic.meter import Meter, MeterReport
from sliceportal.traffic.packets import Encap, Flow, Underlay
from sliceportal.traffic.scenarios import ScenarioFlow
from sliceportal_testbed.congestion import LINK_HEADROOM, MECHANISM, CapError, netfpga_egress, p4_egress, xdp_egress
from sliceportal_testbed.netns_testbed import Testbed
from sliceportal_testbed.placement import DEFAULT_SLICE, counted_hits, expected_hits, flow_places
from sliceportal_testbed.probes import TIMEOUT_S as PROBE_TIMEOUT_S
from sliceportal_testbed.probes import PlaneProbes, probe_lanes
from sliceportal_testbed.processes import (
    ManagedProcess,
    ProcessError,
    XdpAgent,
    bmv2_process,
    netfpga_process,
    reap_leftovers,
    simple_switch_process,
)
from sliceportal_testbed.sender_process import SenderProcess
from sliceportal_testbed.tls import testbed_certs

log = logging.getLogger(__name__)

SERVICE_HOST = "10.99.0.1"
USERS_PER_SLICE = 4  # flows per slice = users x services; enough to fill every lane
BEST_EFFORT_LANE = 0  # folded lane the XDP backend sends to the alt node (seed 001)
FRAME_SIZE = 1024  # bytes on the wire per frame (innermost payload + every header)
FLOW_ID_GENERATION = 1_000_000  # flow ids of successive traffic generations never collide
# Packets/s the bundled P4 target (Python) and the NetFPGA model (Verilator) are offered:
# what each forwards on this 2-core machine with room to spare, congestion included
# (bench/kpi_latency.py sweeps it: the P4 target kept up to ~1000/s, the NetFPGA model fell
# behind above 150-300/s, depending on what else the machine runs); XDP takes the configured
# rate. A congestion scenario multiplies these.
# What each bundled plane lacks of the demo's SLAs (their Capabilities; docs/rules.md "Capabilities")
DEMO_ACCEPTS_UNENFORCED = {"netfpga": ("ecn",)}
# The demo's slices have one SLA on all three planes, with rate limits above what XDP is offered
# (~7 Mbit/s a slice at 2000 packets/s): more than the software planes' links carry (their
# ``link_bps``, registered below), so admission control refuses them there. The demo assignment
# admits them anyway, as an operator would, with this reason (audited; shown as waived).
DEMO_ADMISSION_OVERRIDE = (
    "testbed demo: one SLA per slice on all three planes, sized for the traffic the XDP plane is offered; "
    "the emulated P4 and NetFPGA planes' links are slower (docs/rules.md, \"The testbed's capacities\")"
)
PROCESS_PLANE_PPS = {"p4rt": 300.0, "netfpga": 150.0}
XDP_LANES = 4
RESTART_BACKOFF_S = (0.5, 30.0)  # first and largest wait before restarting a dead process
# A packet not at its meter this long after it was sent is lost: longer than any testbed
# queue holds one (the P4 target's 64-packet queues drain in < 1.5 s even under congestion),
# so a lane its data plane starves shows its loss each interval, not "no data".
LOSS_GRACE_S = 2.0
# How often the placement is checked against the data planes' counters: the collector reads
# them every interval already, so this second reader stays rare on the CPU-bound planes
PLACEMENT_CHECK_S = 2.0


class BackendDown(extensions.BackendDown):
    """The backend's data plane is down; the message says why."""


class NoCongestionMechanism(extensions.ScenarioRefused):
    """The backend's data plane has no rate the congestion scenario could lower."""


@dataclass
class Plane:
    """One backend of the testbed: its data plane, links, traffic and what was measured."""

    name: str
    driver: str
    ingress: tuple[str, str]  # (netns, ifname) the sender writes to
    captures: list[tuple[str, str]]  # (netns, ifname) where its egress is measured
    underlay: Underlay
    base_pps: float
    tagged: bool = False  # frames carry the tenant's VLAN (the P4 program's trunk port)
    options: dict[str, Any] = field(default_factory=dict)
    stale_options: tuple[str, ...] = ()  # dropped from the backend's recorded options (now set elsewhere)
    process: ManagedProcess | None = None
    backend_id: int = 0
    up: bool = False
    reason: str = ""
    created: bool = False
    rule_set_id: int | None = None
    flows: list[ScenarioFlow] = field(default_factory=list)
    places: dict[int, tuple[int, int]] = field(default_factory=dict)
    meters: list[Meter] = field(default_factory=list)
    socks: list[socket] = field(default_factory=list)
    shape: frozenset[tuple[int, int, int]] | None = None
    generation: int = 0
    sender: SenderProcess | None = None
    sending_pps: float = 0.0
    probes: PlaneProbes | None = None  # STAMP probes of the (slice, lane)s it carries (probes.py)
    # packets sent per flow (the sender process keeps it up to date) and snapshots of it
    progress: tuple[list[int], Sequence[int]] = field(default_factory=lambda: ([], []))  # (flow ids, sent)
    sent_history: list[tuple[float, dict[int, int]]] = field(default_factory=list)
    congestion_until: datetime | None = None
    congestion_factor: float | None = None
    restart_failures: int = 0
    restart_at: float = 0.0
    last_interval_at: datetime | None = None
    # per capture point, its newest interval's miss-path traffic (XDP has two: core and alt)
    default_parts: dict[int, list[DefaultLane]] = field(default_factory=dict)
    expected: tuple[frozenset[int], bool] = (frozenset(), False)  # data-plane slices hit, any miss
    placement_check: str = "not checked yet"
    # a congestion scenario lowers its egress capacity (the offered load stays): the normal
    # capacity (None: not limited), the one in force and how it is set (testbed/congestion.py)
    link_bps: float | None = None
    egress_bps: float | None = None
    set_egress: Callable[[float | None], None] | None = None
    health_due: tuple[str, str] | None = None  # (health, detail) the watchdog has yet to write
    restore_due: bool = False  # restarted, its refill not yet confirmed
    refilled_at: float = 0.0  # (monotonic) its refill was confirmed then: KPIs count from intervals after it

    def default_traffic(self) -> list[DefaultLane]:
        """The miss-path traffic over all capture points, per lane (each point's newest interval:
        packets and throughput summed, the worst loss, every source slice)."""
        merged: dict[int, DefaultLane] = {}
        for part in list(self.default_parts.values()):  # a snapshot: the KPI writer replaces parts
            for d in part:
                m = merged.get(d.lane)
                merged[d.lane] = (
                    d
                    if m is None
                    else DefaultLane(
                        lane=d.lane,
                        rx_packets=m.rx_packets + d.rx_packets,
                        throughput_bps=m.throughput_bps + d.throughput_bps,
                        loss_pct=max(m.loss_pct, d.loss_pct),
                        from_slices=sorted({*m.from_slices, *d.from_slices}),
                    )
                )
        return [merged[lane] for lane in sorted(merged)]

    def congested(self, now: datetime) -> bool:
        return self.congestion_until is not None and now < self.congestion_until and bool(self.congestion_factor)

    def offered_pps(self, now: datetime) -> float:
        """Packets/s sent to it; a congestion scenario lowers the capacity, not raises this
        (the software planes would lose in their socket buffers, before their queues)."""
        return self.base_pps

    def wanted_egress_bps(self, now: datetime) -> float | None:
        """The egress capacity it should have now: normal, or the normal load / factor."""
        if self.congested(now) and self.congestion_factor:
            return self.base_pps * FRAME_SIZE * 8 / self.congestion_factor
        return self.link_bps


@dataclass
class LiveTestbed:
    sessions: sessionmaker[Session]
    hub: KpiHub
    prefix: str = "sp-run-"
    rate_pps: float = 2000.0
    p4_target: str = "bundled"  # or "bmv2": the real simple_switch_grpc (Settings.testbed_p4_target)
    interval_s: float = 1.0
    planes: list[Plane] = field(default_factory=list)
    running: bool = False
    error: str = ""
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _reports: queue.Queue[tuple[Plane, int, datetime, MeterReport]] = field(default_factory=queue.Queue)
    _probe_points: queue.Queue[list[KpiPoint]] = field(default_factory=queue.Queue)
    _loops: list[SupervisedLoop] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # per backend, its counters at the last placement check (what the next one compares with)
    _last_counters: dict[int, Counters] = field(default_factory=dict)

    # ---- life cycle ---------------------------------------------------------------

    def start(self) -> None:
        """Bring the testbed up; never raises for a data plane that refuses (its backend is
        marked so) and leaves nothing behind when something else fails (logged, ``error``)."""
        if os.geteuid() != 0:
            self.error = "not root: no emulated testbed (network namespaces and XDP need root)"
            log.warning(self.error)
            return
        try:
            self._start()
        except Exception as exc:
            log.exception("the testbed did not start; the portal runs without it")
            self.error = f"{type(exc).__name__}: {exc}"
            self.stop()
            return
        self.running = True

    def _start(self) -> None:
        reaped = reap_leftovers(self.prefix)
        if reaped:
            log.warning("removed data-plane processes a crashed run left behind: %s", reaped)
        tb = self._stack.enter_context(Testbed(self.prefix))  # also removes leftover namespaces
        self.planes = self._topology(tb)
        for plane in self.planes:
            self._stack.callback(self._stop_plane, plane)
            if plane.process is not None:
                try:
                    plane.process.start()
                    plane.up = True
                except ProcessError as exc:
                    plane.up, plane.reason = False, str(exc)
                    log.warning("testbed backend %s: %s", plane.name, exc)
            else:
                plane.up = True
        with self.sessions() as session:
            backends = [self._backend(session, p) for p in self.planes]
            if any(p.created for p in self.planes):
                self._seed_assignments(session, backends)
            for plane, backend in zip(self.planes, backends, strict=True):
                if plane.up and not plane.reason:
                    try:
                        confirmed = self._restore(session, plane, backend)
                    except BusyError:  # someone else's push of it is under way
                        session.rollback()
                        confirmed = False
                    plane.restore_due = not confirmed and not plane.reason  # the watchdog tries again
        for plane in self.planes:
            for i, (ns, ifname) in enumerate(plane.captures):
                plane.meters.append(Meter())
                plane.socks.append(sock := open_capture(ifname, ns))
                self._stack.callback(sock.close)
                self._loop(f"capture-{plane.name}-{i}", 0.001, self._capture_step(plane, i))
        self._loop("traffic", 1.0, self._traffic_step)
        self._loop("kpi-writer", 0.05, self._write_step)
        self._loop("placement-check", PLACEMENT_CHECK_S, self._placement_step)
        self._loop("watchdog", 0.5, self._watchdog_step)

    def stop(self) -> None:
        self._stop.set()
        for loop in self._loops:
            loop.stop(timeout_s=5)
        self._loops.clear()
        self._stack.close()
        self.running = False

    def _stop_plane(self, plane: Plane) -> None:
        if plane.probes is not None:
            plane.probes.close()
            plane.probes = None
        if plane.sender is not None:
            plane.sender.stop()
        if plane.process is not None:
            plane.process.teardown()

    def _loop(self, name: str, period_s: float, step: Callable[[], None]) -> None:
        loop = SupervisedLoop(f"testbed-{self.prefix}{name}", period_s, step)
        self._loops.append(loop)
        loop.start()

    # ---- topology -----------------------------------------------------------------

    def _topology(self, tb: Testbed) -> list[Plane]:
        edge, core, alt = tb["edge"], tb["core"], tb["alt"]
        sink = f"{self.prefix}sink"
        # The XDP program is the agent's (its maps pinned in bpffs): it forwards while the agent
        # restarts, and every portal process drives it through the agent's socket (#16)
        agent = XdpAgent(
            self.prefix,
            f"{self.prefix}xdp-core",
            core.ifname,
            core.netns,
            {
                "tx_peer": f"{edge.netns}/{tb.peer_port('core')}",
                "alt_mac": alt.mac,
                "alt_ip": alt.ip,
                "alt_lanes": [BEST_EFFORT_LANE],
                "lanes": XDP_LANES,
                "paths": 8,
                # this machine's CPUs also run the senders, meters, database and portal, so their busy
                # share is not the data plane's load: seed 001's CPU overload detection would steer
                # prioritised lanes to the alt node (unmetered) at random; the congestion scenario is
                # the testbed's overload (docs/testbed.md)
                "overload_poll_s": 0,
            },
        )
        xdp = Plane(
            name="xdp-core",
            driver="xdp",
            ingress=(edge.netns, tb.peer_port("core")),
            captures=[(core.netns, core.ifname), (alt.netns, alt.ifname)],
            underlay=Underlay(src_mac=edge.mac, dst_mac=core.mac, outer_src=edge.ip, outer_dst=core.ip),
            base_pps=self.rate_pps,
            process=agent,
            options={"address": agent.address, "agent_token": agent.token},
            # what the in-process driver of earlier runs kept in the record is the agent's now
            stale_options=(
                "interface",
                "netns",
                "tx_peer",
                "pin_name",
                "alt_mac",
                "alt_ip",
                "alt_lanes",
                "lanes",
                "paths",
                "overload_poll_s",
            ),
        )
        xdp.set_egress = xdp_egress(self.sessions, lambda: xdp.backend_id, lanes=XDP_LANES)
        p4_in, p4_out = tb.host_link("p4i", edge.netns, "p4-in"), tb.host_link("p4o", sink, "p4-out")
        p4_pps = min(PROCESS_PLANE_PPS["p4rt"], self.rate_pps)
        p4_link = p4_pps * FRAME_SIZE * 8 * LINK_HEADROOM
        real = self.p4_target == "bmv2"
        # the real BMv2 has rates per priority queue, none per port: no link to lower, so its
        # plane runs without the congestion scenario (and without a link rate: unpaced)
        # P4Runtime over mutual TLS: only the portal, holding the client certificate issued beside
        # the switch's, reads or writes the P4 plane; a local user on loopback is refused (#27)
        p4_tls = testbed_certs(self.prefix)
        self._stack.callback(p4_tls.remove)
        p4 = (
            simple_switch_process(self.prefix, {1: p4_in, 2: p4_out}, tls_args=p4_tls.server_args())
            if real
            else bmv2_process(
                self.prefix, {1: p4_in, 2: p4_out}, link_rate_bps=int(p4_link), tls_args=p4_tls.server_args()
            )
        )
        bmv2 = Plane(
            name="bmv2",
            driver="p4rt",
            ingress=(edge.netns, "p4-in"),
            captures=[(sink, "p4-out")],
            underlay=Underlay(src_mac=edge.mac, dst_mac="02:53:50:00:01:01", outer_src=edge.ip, outer_dst="10.77.1.1"),
            base_pps=p4_pps,
            tagged=True,
            process=p4,
            link_bps=None if real else p4_link,
            egress_bps=None if real else p4_link,
            set_egress=None if real else p4_egress(p4.address, p4_tls),
            options={
                "address": p4.address,
                "lanes": 8,
                "trunk_ports": [1, 2],
                "uplink_port": 2,
                **p4_tls.client_options(),
            },
            stale_options=("plaintext", "tls_server_name"),
        )
        planes = [xdp, bmv2]
        nf_in, nf_out = tb.host_link("nfi", edge.netns, "nf-in"), tb.host_link("nfo", sink, "nf-out")
        nf_pps = min(PROCESS_PLANE_PPS["netfpga"], self.rate_pps)
        nf_link = nf_pps * FRAME_SIZE * 8 * LINK_HEADROOM
        try:
            nf: ManagedProcess | None = netfpga_process(self.prefix, nf_in, nf_out, live_drain_bps=nf_link)
            nf_reason = ""
        except ProcessError as exc:
            nf, nf_reason = None, str(exc)
        netfpga = Plane(
            name="netfpga-sim",
            driver="netfpga",
            ingress=(edge.netns, "nf-in"),
            captures=[(sink, "nf-out")],
            underlay=Underlay(src_mac=edge.mac, dst_mac="02:53:50:00:02:01", outer_src=edge.ip, outer_dst="10.77.2.1"),
            base_pps=nf_pps,
            process=nf,
            link_bps=nf_link,
            egress_bps=nf_link,
            set_egress=netfpga_egress(nf.address) if nf else None,
            options={"address": nf.address if nf else ""},
        )
        if nf is None:
            netfpga.reason = nf_reason
        planes.append(netfpga)
        return planes

    # ---- backends and their rule sets ------------------------------------------------

    def _backend(self, session: Session, plane: Plane) -> Backend:
        # admission control checks against the egress rate this run paces the plane at (the
        # value it gave the process), not the default 10 Gbit/s; a plane the testbed does not
        # pace (XDP outside a congestion scenario, the real BMv2) keeps what is recorded
        link_bps = None if plane.link_bps is None else round(plane.link_bps)
        # The demo gives every plane the same SLAs (ECN targets, rate limits); a plane that lacks
        # one carries it knowingly, listed as accepted in its preview (services/enforcement.py)
        accepts = DEMO_ACCEPTS_UNENFORCED.get(plane.driver, ())
        b = session.scalar(select(Backend).where(Backend.name == plane.name))
        if b is None:
            # registered as an operator's POST /backends registers one: driver and options checked
            b = register(
                session,
                name=plane.name,
                driver=plane.driver,
                options=plane.options,
                link_bps=link_bps,
                accept_unenforced=accepts,
            )
            plane.created = True
        else:
            # only what this run decides (addresses, interfaces) changes; the operator's other
            # options (e.g. a QoS mode) stay as they were
            kept = {k: v for k, v in (b.options or {}).items() if k not in plane.stale_options}
            b.driver, b.options = plane.driver, {**kept, **plane.options}
            if link_bps is not None:
                b.link_bps = link_bps
            b.accept_unenforced = sorted(set(b.accept_unenforced or ()) | set(accepts))
        if plane.up:
            try:
                POOL.discard(session, b)  # a driver of an earlier process must not be reused
                describe(session, b)
            except Exception as exc:  # an unusable driver fails this backend, not the testbed
                plane.reason = f"driver refused: {exc}"
                b.health, b.health_detail = "failed", plane.reason[:2000]
        else:
            b.health, b.health_detail = "down", plane.reason or "not started"
        session.commit()
        plane.backend_id = b.id
        return b

    @staticmethod
    def _seed_assignments(session: Session, backends: list[Backend]) -> None:
        """The demo assignment, once: when the testbed's backends are first created, slices
        that are on no backend at all go on all of them. Nothing else is ever reassigned.

        Admission control decides as it would for an operator's assignment; where the slices
        do not fit a plane's link, the assigned slices are admitted with
        ``DEMO_ADMISSION_OVERRIDE`` (audited with the computation), so the start-up deployment
        is not refused and the refusal's numbers stay visible."""
        seeded = [s for s in session.scalars(select(Slice).order_by(Slice.id)) if not s.backends]
        for s in seeded:
            s.backends = list(backends)
        waived = False
        for b in backends:
            # each plane decided on its own numbers (and audited on its own page), not waved
            # through by the override an earlier plane needed
            for s in seeded:
                s.admission_override = None
            admission.check(
                session,
                [b],
                override=Override(DEMO_ADMISSION_OVERRIDE),
                action="testbed demo assignment",
                subject=b,
                waive=seeded,
            )
            waived = waived or any(s.admission_override for s in seeded)
        for s in seeded:
            s.admission_override = DEMO_ADMISSION_OVERRIDE if waived else None
        session.commit()

    def _restore(self, session: Session, plane: Plane, backend: Backend) -> bool:
        """A fresh data plane gets the rule set it last held (reconcile repairs it to that);
        one that never had one gets its first deployment. A refusal marks it failed.

        True once the data plane is confirmed to hold its rule set (read back in sync, or
        repaired, or deployed): only then do its KPIs resume (issue #26 item 5)."""
        try:
            if current_rule_set(session, backend.id) is not None:
                report = deployments.reconcile(session, backend)
                return report is not None and report.reachable and (report.in_sync or report.repaired)
            dep = deployments.deploy(session, backend, "testbed")
            if dep.status != DeploymentStatus.SUCCEEDED:
                plane.reason = f"start-up deployment failed: {dep.error}"
                backend.health, backend.health_detail = "failed", plane.reason
                session.commit()
                return False
            return True
        except (DBAPIError, BusyError):
            raise  # the database, or a push holding the backend: the caller tries again
        except Exception as exc:  # any refusal: this backend is failed, the others go on
            session.rollback()
            plane.reason = f"start-up deployment failed: {exc}"
            log.warning("testbed backend %s: %s", plane.name, plane.reason)
            b = session.get(Backend, backend.id)
            if b is not None:
                b.health, b.health_detail = "failed", plane.reason[:2000]
                session.commit()
        return False

    # ---- traffic ----------------------------------------------------------------------

    def _traffic_step(self) -> None:
        """Follow the facts every second: which slices are assigned to each backend (the
        flows sent to it), which rule set it holds (where each flow lands) and the load."""
        now = datetime.now(UTC)
        with self.sessions() as session:
            for plane in self.planes:
                flows = self._flows(session, plane, first_id=(plane.generation + 1) * FLOW_ID_GENERATION)
                rule_set = current_rule_set(session, plane.backend_id)
                rs_id = rule_set.id if rule_set is not None else None
                shape = frozenset((sf.slice_index, sf.priority, sf.service * 1000 + sf.user) for sf in flows)
                pps = plane.offered_pps(now)
                if plane.congestion_until is not None and now >= plane.congestion_until:
                    plane.congestion_until = plane.congestion_factor = None
                self._set_egress(plane, now)
                restart = (
                    shape != plane.shape
                    or pps != plane.sending_pps
                    or (plane.sender is not None and not plane.sender.is_alive() and not plane.sender.stopping)
                )
                if restart:
                    plane.generation += 1
                    plane.shape = shape
                    plane.flows = flows
                if restart or rs_id != plane.rule_set_id:
                    places = flow_places(
                        rule_set.ir if rule_set else None, rule_set.explanation if rule_set else None, plane.flows
                    )
                    for meter in plane.meters:
                        meter.places = places  # one reference swap: the capture thread reads it
                    plane.places, plane.rule_set_id = places, rs_id
                    plane.expected = expected_hits(rule_set.ir if rule_set else None, plane.flows)
                    plane.placement_check = "not checked yet"
                    self._restart_probes(plane)
                if restart:
                    self._restart_sender(plane, pps)

    @staticmethod
    def _set_egress(plane: Plane, now: datetime) -> None:
        """Give a software plane the egress rate it should have now (a congestion scenario
        lowers it); a plane that does not take it keeps the old one and is asked again."""
        want = plane.wanted_egress_bps(now)
        if want == plane.egress_bps or not plane.up or plane.set_egress is None:
            return
        try:
            plane.set_egress(want)
        except CapError as exc:
            log.warning("testbed %s: %s", plane.name, exc)
            return
        plane.egress_bps = want
        log.info("testbed %s: egress capacity %s bit/s", plane.name, "unlimited" if want is None else f"{want:.0f}")

    def _restart_sender(self, plane: Plane, pps: float) -> None:
        if plane.sender is not None:
            plane.sender.stop()
        plane.sending_pps = pps
        plane.sender = None
        if not plane.flows:
            return
        sender = SenderProcess(plane.name, plane.ingress[0], plane.ingress[1], plane.flows, pps, plane.underlay)
        plane.progress = ([sf.flow_id for sf in plane.flows], sender.progress)
        sender.start()
        plane.sender = sender
        log.info("testbed traffic to %s: %d flows at %.0f packets/s", plane.name, len(plane.flows), pps)

    def _restart_probes(self, plane: Plane) -> None:
        """Probe the (slice, lane)s the plane's rule set carries now (none: no probes)."""
        lanes = probe_lanes(plane.flows, plane.places)
        old = plane.probes
        if old is not None and [(x.slice_id, x.lane, x.flow.flow) for x in old.lanes] == [
            (x.slice_id, x.lane, x.flow.flow) for x in lanes
        ]:
            return
        plane.probes = None
        if old is not None:
            old.close(wait=False)  # not the traffic step's wait: its senders' last replies
        if not lanes:
            return
        try:
            probes = PlaneProbes(
                plane.ingress,
                plane.underlay,
                lanes,
                plane.backend_id,
                self._probe_points.put,
                # a sample's probes were sent up to an interval and their timeout before it is due
                lambda: self._forwards(plane, time.monotonic() - self.interval_s - PROBE_TIMEOUT_S),
            )
        except OSError as exc:
            log.warning("testbed %s: no probes (%s)", plane.name, exc)
            return
        probes.start()
        plane.probes = probes

    @staticmethod
    def _forwards(plane: Plane, since: float) -> bool:
        """Has the plane forwarded with its rule set since ``since`` (monotonic)? A plane that is
        down, or restarted and not yet holding its rules, has its KPIs stop, never zero samples."""
        return (
            plane.up
            and not plane.restore_due
            and plane.refilled_at <= since
            and (plane.process is None or plane.process.alive)
        )

    @staticmethod
    def _flows(session: Session, plane: Plane, first_id: int) -> list[ScenarioFlow]:
        """A few subscribers of every slice assigned to this backend, on each of its services."""
        flows: list[ScenarioFlow] = []
        slices = session.scalars(
            select(Slice).where(Slice.backends.any(Backend.id == plane.backend_id)).order_by(Slice.id)
        )
        for s in slices:
            tenant = session.get(Tenant, s.tenant_id)
            assert tenant is not None
            if plane.tagged and tenant.vlan is None:
                continue  # no VLAN, no traffic on the P4 program's trunk (seed 002)
            users = session.scalars(
                select(Subscriber)
                .join(subscriber_slice)
                .where(subscriber_slice.c.slice_id == s.id)
                .order_by(Subscriber.id)
                .limit(USERS_PER_SLICE)
            ).all()
            for u_index, u in enumerate(users):
                for svc_index, svc in enumerate(s.services):
                    port = svc.dst_ports[0][0] if svc.dst_ports else 5000
                    flow = Flow(
                        src_ip=str(ipaddress.IPv4Address(str(u.ue_ip))),
                        dst_ip=SERVICE_HOST,
                        dst_port=port,
                        dscp=svc.dscp[0] if svc.dscp else 0,
                        vni=tenant.vni,
                        teid=u.teids[0] if u.teids else 0,
                        encap=Encap.VXLAN_GTP,
                        vlan=tenant.vlan if plane.tagged else None,
                    )
                    flows.append(
                        ScenarioFlow(
                            flow_id=first_id + len(flows),
                            flow=flow,
                            slice_index=s.id,
                            user=u_index,
                            service=svc_index,
                            priority=svc.lane,
                            frame_size=FRAME_SIZE,
                        )
                    )
        return flows

    def congest(self, backend_id: int, duration_s: float, factor: float) -> Plane:
        """Overload a backend for ``duration_s``: its egress capacity drops to its offered
        load / ``factor`` (the traffic step applies and lifts it), through the plane's own
        queues or budget, so its priority mechanism decides which lanes lose (seed 000
        Table 5; see ``testbed/congestion.py`` and docs/testbed.md)."""
        return self.congest_until(backend_id, datetime.now(UTC) + timedelta(seconds=duration_s), factor)

    def congest_until(self, backend_id: int, until: datetime, factor: float) -> Plane:
        """``congest`` to a set end: the controller applies a scenario the API accepted (and
        answered with its end) in another process (``control/controller.py``)."""
        plane = next((p for p in self.planes if p.backend_id == backend_id), None)
        if plane is None:
            raise KeyError(backend_id)
        if not plane.up:
            raise BackendDown(plane.reason or "not started")
        if plane.set_egress is None:
            raise NoCongestionMechanism(
                f"{plane.name} has no egress rate the testbed can lower"
                + (" (the real BMv2 rates priority queues, not ports)" if plane.driver == "p4rt" else "")
            )
        plane.congestion_factor = factor
        plane.congestion_until = until
        return plane

    def end_congestion(self, backend_id: int) -> bool:
        """End a backend's running scenario now (the traffic step restores its capacity within a
        second); False when none ran there."""
        plane = next((p for p in self.planes if p.backend_id == backend_id), None)
        now = datetime.now(UTC)
        if plane is None or not plane.congested(now):
            return False
        plane.congestion_until = now
        return True

    def base_pps(self) -> dict[int, float]:
        """Per backend, the packets/s its subscribers are sent (what a congestion factor divides)."""
        return {p.backend_id: p.base_pps for p in self.planes if p.backend_id}

    # ---- measurement ------------------------------------------------------------------

    def _capture_step(self, plane: Plane, index: int) -> Callable[[], None]:
        def reflect(frame: bytes, rx_ns: int) -> None:
            probes = plane.probes  # one read: the traffic step may swap them
            if probes is not None:
                probes.on_frame(frame, rx_ns)

        def step() -> None:
            meter, sock = plane.meters[index], plane.socks[index]
            began = time.monotonic()
            run_capture(sock, meter, duration_s=self.interval_s, stop=self._stop, on_foreign=reflect)
            # stamped where the interval ends: each capture point's points have their own ts
            # a starved lane's loss counts only while its data plane forwards (an interval that
            # began before its refill was confirmed is not the refilled plane's)
            if self._forwards(plane, began):
                report = meter.interval_report(sent_before=self._sent_before(plane))
                self._reports.put((plane, index, datetime.now(UTC), report))
            else:
                # what was sent while it was down is not loss of the plane that comes back:
                # starved-lane accounting starts afresh LOSS_GRACE_S after it forwards again; and
                # what it forwarded before its refill (an empty plane's default path) is no KPI of
                # the slices: the interval is read out and dropped
                with self._lock:
                    plane.sent_history.clear()
                meter.interval_report(sent_before=None)
            # flows of earlier traffic generations (and stray ids) are done: forget them here,
            # on the thread that owns the meter's accumulators
            places = meter.places
            for flow_id in [f for f in meter.flows if f not in places]:
                del meter.flows[flow_id]

        return step

    def _sent_before(self, plane: Plane) -> dict[int, int]:
        """Per flow, what its sender had sent ``LOSS_GRACE_S`` ago (empty until then)."""
        now = time.monotonic()
        ids, sent = plane.progress
        with self._lock, contextlib.suppress(ValueError):  # ValueError: a sender restarted meanwhile
            history = plane.sent_history
            if not history or now - history[-1][0] >= 0.25:
                history.append((now, dict(zip(ids, list(sent), strict=True))))
            while len(history) > 1 and now - history[1][0] >= LOSS_GRACE_S:
                del history[0]
            if now - history[0][0] >= LOSS_GRACE_S:
                return history[0][1]
        return {}

    def _write_step(self) -> None:
        """Store what the meters and the probes reported (one point per slice, backend, lane, source
        and interval)."""
        batch: list[tuple[Plane, int, datetime, MeterReport]] = []
        points: list[KpiPoint] = []
        with contextlib.suppress(queue.Empty):
            while len(batch) < 64:
                batch.append(self._reports.get_nowait())
        with contextlib.suppress(queue.Empty):
            for _ in range(64):
                points += self._probe_points.get_nowait()
        if not batch and not points:
            return
        with self.sessions() as session:
            for plane, index, now, report in batch:
                lanes = [g for g in report.lanes if g.received or g.expected]  # nothing crossed: no point
                if not lanes:
                    continue
                plane.last_interval_at = now
                self._note_default(plane, index, [g for g in lanes if g.slice_index == DEFAULT_SLICE])
                kept = report.model_copy(update={"lanes": [g for g in lanes if g.slice_index != DEFAULT_SLICE]})
                slice_ids = {g.slice_index: g.slice_index for g in kept.lanes if g.slice_index is not None}
                points += points_from_meter(kept, slice_ids, now, self.interval_s, plane.backend_id)
            if points:
                ingest(session, points)  # published to every process by NOTIFY (kpi/notify.py)

    def _placement_step(self) -> None:
        """Do the data planes' own counters agree with where the placement says the flows land?
        (the slices each counted packets for since the last check, and its miss path) — evidence
        that it holds the rule set the KPIs are attributed by."""
        with self.sessions() as session:
            for plane in self.planes:
                backend = session.get(Backend, plane.backend_id) if plane.up else None
                if backend is None:
                    self._last_counters.pop(plane.backend_id, None)
                    continue
                try:
                    now = pooled_counters(session, backend)
                except DriverError:
                    now = None
                if now is None:
                    continue  # busy with a push, or not answering: checked next time
                before = self._last_counters.get(plane.backend_id)
                self._last_counters[plane.backend_id] = now
                if before is None or before.epoch != now.epoch:
                    continue  # a first read, or a restarted data plane: the new baseline
                if plane.sender is None or not plane.sender.is_alive():
                    continue
                hit, missed = counted_hits(before, now)
                want_hit, want_miss = plane.expected
                if hit == want_hit and missed == want_miss:
                    plane.placement_check = "agrees"
                else:
                    plane.placement_check = (
                        f"differs: the data plane counted slices {sorted(hit)} (miss path used: "
                        f"{missed}); its rule set predicts {sorted(want_hit)} (misses: {want_miss})"
                    )

    def _note_default(self, plane: Plane, index: int, groups: list[Any]) -> None:
        """The miss-path traffic of one capture point's interval; the plane reports it merged with
        its other capture points' (one point's report used to replace the other's: on XDP the
        alt node's, without default traffic, hid the core's from the API most of the time)."""
        by_flow = {sf.flow_id: sf.slice_index for sf in plane.flows}
        plane.default_parts[index] = [
            DefaultLane(
                lane=g.lane or 0,
                rx_packets=g.received,
                loss_pct=g.loss_pct,
                throughput_bps=g.bytes * 8 / self.interval_s,
                from_slices=sorted(
                    {
                        by_flow[f]
                        for f, place in plane.places.items()
                        if place == (DEFAULT_SLICE, g.lane) and f in by_flow
                    }
                ),
            )
            for g in groups
        ]

    # ---- supervision ------------------------------------------------------------------

    def _watchdog_step(self) -> None:
        """A dead data-plane process: its backend down at once (with the reason), the process
        restarted with backoff, and the backend reconciled to its rule set when it is back.

        Process work first, database work last and remembered until it succeeds: a database
        blip delays the health write or the reconcile to a later iteration, never a restart.
        """
        for plane in self.planes:
            proc = plane.process
            if proc is None:
                continue
            if not proc.alive:
                if plane.up:
                    plane.up = False
                    plane.reason = f"{proc.name} exited with code {proc.exit_code()}: {proc.last_output(200)}"
                    plane.restart_at = time.monotonic() + RESTART_BACKOFF_S[0]
                    plane.health_due = ("down", plane.reason)
                    log.error("testbed backend %s down: %s", plane.name, plane.reason)
                elif time.monotonic() >= plane.restart_at:
                    try:
                        proc.start()
                    except ProcessError as exc:
                        plane.restart_failures += 1
                        plane.reason = str(exc)
                        wait = min(RESTART_BACKOFF_S[1], RESTART_BACKOFF_S[0] * 2**plane.restart_failures)
                        plane.restart_at = time.monotonic() + wait
                        plane.health_due = ("down", f"{plane.reason} (next restart in {wait:.0f} s)")
                    else:
                        # restore_due before up: a capture must never see it up and not refilling
                        plane.health_due, plane.restore_due = None, True
                        plane.restart_failures, plane.up, plane.reason = 0, True, ""
                        plane.egress_bps = plane.link_bps  # started at the normal rate
                        log.warning("testbed backend %s: %s restarted; reconciling", plane.name, proc.name)
            if plane.health_due is not None:
                self._set_health(plane, *plane.health_due)
                plane.health_due = None
            if plane.restore_due and plane.up:
                with self.sessions() as session:
                    backend = session.get(Backend, plane.backend_id)
                    if backend is None:
                        plane.restore_due = False
                        continue
                    POOL.discard(session, backend)
                    try:
                        confirmed = self._restore(session, plane, backend)
                    except BusyError:  # a deploy or the reconcile loop holds it: look again next step
                        session.rollback()
                        continue
                if confirmed:
                    plane.refilled_at = time.monotonic()
                    log.info("testbed backend %s: refill confirmed; its KPIs resume", plane.name)
                # not confirmed: tried again next step, KPIs stay stopped; refused: failed, no refill
                plane.restore_due = not confirmed and not plane.reason

    def _set_health(self, plane: Plane, health: str, detail: str) -> None:
        with self.sessions() as session:
            backend = session.get(Backend, plane.backend_id)
            if backend is not None:
                backend.health, backend.health_detail = health, detail[:2000]
                session.commit()

    # ---- what the API shows ------------------------------------------------------------

    def state(self) -> TestbedState:
        now = datetime.now(UTC)
        out = []
        for p in self.planes:
            pps = p.sending_pps if p.sender is not None else 0.0
            links = [TestbedLink(role="ingress", netns=p.ingress[0], ifname=p.ingress[1])]
            links += [TestbedLink(role="egress", netns=ns, ifname=ifn) for ns, ifn in p.captures]
            running = p.congestion_until is not None and now < p.congestion_until
            mechanism = MECHANISM.get(p.driver, "") if p.set_egress is not None else ""
            out.append(
                TestbedBackend(
                    backend_id=p.backend_id,
                    name=p.name,
                    driver=p.driver,
                    up=p.up,
                    reason=p.reason,
                    links=links,
                    rule_set_id=p.rule_set_id,
                    flows=len(p.flows),
                    offered_pps=pps,
                    offered_bps=pps * FRAME_SIZE * 8,
                    congestion_until=p.congestion_until if running else None,
                    congestion_factor=p.congestion_factor if running else None,
                    egress_capacity_bps=p.egress_bps,
                    congestion_mechanism=mechanism,
                    restarts=max(0, (p.process.starts - 1) if p.process else 0),
                    last_interval_at=p.last_interval_at,
                    default_traffic=p.default_traffic(),
                    placement_check=p.placement_check,
                )
            )
        return TestbedState(running=self.running, error=self.error, prefix=self.prefix, backends=out)
