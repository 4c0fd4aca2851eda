"""STAMP probes across the testbed's data planes (RFC 8762; #25 item 3): source ``probe``.

The product's Session-Sender (``sliceportal.probe.sender``) probes every (slice, lane) a
plane's rule set carries, five test packets a second per lane. The planes carry tunnelled
subscriber traffic one way (edge -> egress), so a test packet travels as a subscriber's
frame would: inside the VXLAN / GTP-U headers (and VLAN tag) of one of that slice's flows in
that lane, its innermost UDP source port the lane's own, sent into the plane's ingress. The
data plane classifies it as that subscriber's traffic, into that lane, and queues it with
it. At the plane's egress the testbed's capture (which sees every frame the meter does not
count) hands it to the Session-Reflector's reply (``sliceportal.probe.reflector.reply``): t2 is
the capture's kernel receive time, and the reflected packet goes back to the lane's socket
over the edge namespace's loopback.

So the two-way delay is the data plane's forward path (what the test packet queued behind in
its lane) plus a loopback return of some tens of µs; the sender subtracts the reflector's
residence time (t3 - t2). Loss is what the plane dropped of the probes (the return leg does
not lose). Samples go to the KPI writer like the meter's; while a plane does not forward
(down, restarted and not yet refilled) they are dropped, as the meter's are.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import socket
import threading
from collections.abc import Callable

from sliceportal.kpi.points import KpiPoint
from sliceportal.probe.reflector import reply
from sliceportal.probe.sender import LaneFlow, LaneSample, Sender
from sliceportal.probe.sockets import udp_socket
from sliceportal.probe.wire import PACKET_SIZE, SenderPacket, WireError
from sliceportal.traffic.netns import entered
from sliceportal.traffic.packets import Underlay, build_bytes
from sliceportal.traffic.scenarios import ScenarioFlow
from sliceportal.traffic.wire import innermost_udp

log = logging.getLogger(__name__)

PROBE_PPS = 5.0  # test packets a second per lane: a few per interval, a trickle beside the traffic
TIMEOUT_S = 2.0  # a reply this late is lost: as long as the meter's LOSS_GRACE_S
LOOPBACK = "127.0.0.1"


@dataclasses.dataclass(frozen=True)
class ProbeLane:
    """One (slice, lane) a plane carries and the subscriber flow whose headers its probes wear."""

    slice_id: int
    lane: int
    flow: ScenarioFlow


def probe_lanes(flows: list[ScenarioFlow], places: dict[int, tuple[int, int]]) -> list[ProbeLane]:
    """A probe lane for every (slice, lane) the rule set puts a flow in (the first such flow);
    a flow whose slice misses is default traffic, never probed as the slice's."""
    chosen: dict[tuple[int, int], ScenarioFlow] = {}
    for sf in flows:
        place = places.get(sf.flow_id)
        if place is not None and place[0] == sf.slice_index:
            chosen.setdefault(place, sf)
    return [ProbeLane(s, lane, sf) for (s, lane), sf in sorted(chosen.items())]


def _template(sf: ScenarioFlow, port: int, underlay: Underlay) -> tuple[bytearray, int]:
    """The flow's frame with a test packet's room as its innermost UDP payload (from ``port``),
    and where that payload starts. The innermost UDP checksum is 0 (none, as IPv4 allows):
    each probe's payload differs and no data plane here checks it."""
    frame = bytearray(build_bytes(dataclasses.replace(sf.flow, src_port=port), bytes(PACKET_SIZE), underlay))
    found = innermost_udp(bytes(frame))
    assert found is not None and found[0] == port, "the builder's frame must carry the probe's UDP"
    frame[found[2] - 2 : found[2]] = b"\0\0"
    return frame, found[2]


class PlaneProbes:
    """The probes of one plane: a Session-Sender per slice (a lane flow per lane it carries),
    their test packets sent into the plane's ingress, reflected from its egress captures."""

    def __init__(
        self,
        ingress: tuple[str, str],
        underlay: Underlay,
        lanes: list[ProbeLane],
        backend_id: int,
        deliver: Callable[[list[KpiPoint]], None],
        forwarding: Callable[[], bool],
    ) -> None:
        self.lanes = lanes
        self._deliver, self._forwarding, self._backend_id = deliver, forwarding, backend_id
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._senders: list[tuple[int, Sender]] = []  # (slice id, its Session-Sender)
        self._frames: dict[tuple[int, int], tuple[bytearray, int]] = {}
        self._ports: set[int] = set()
        self.reflected = 0
        netns, ifname = ingress
        with entered(netns):  # the sockets stay in the edge namespace (its loopback, its port)
            self._reflector = udp_socket(LOOPBACK, 0)
            self._tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        try:
            self._tx.bind((ifname, 0))
            by_slice: dict[int, list[ProbeLane]] = {}
            for pl in lanes:
                by_slice.setdefault(pl.slice_id, []).append(pl)
            for slice_id, mine in by_slice.items():
                with entered(netns):
                    sender = Sender(
                        (LOOPBACK, self._reflector.getsockname()[1]),
                        [LaneFlow(pl.lane, pl.flow.flow.dscp) for pl in mine],
                        bind=LOOPBACK,
                        rate_pps=PROBE_PPS,
                        timeout_s=TIMEOUT_S,
                        transmit=functools.partial(self._send, slice_id),
                    )
                self._senders.append((slice_id, sender))
                for pl in mine:
                    port = sender.ports()[pl.lane]
                    self._frames[(slice_id, pl.lane)] = _template(pl.flow, port, underlay)
                    self._ports.add(port)
        except BaseException:
            self.close()
            raise

    def start(self) -> None:
        for slice_id, sender in self._senders:
            t = threading.Thread(
                target=self._run, args=(sender, slice_id), name=f"probe-{self._backend_id}-{slice_id}", daemon=True
            )
            t.start()
            self._threads.append(t)

    def _run(self, sender: Sender, slice_id: int) -> None:
        def sink(samples: list[LaneSample]) -> None:
            if self._forwarding():
                self._deliver([KpiPoint.model_validate(s.point(slice_id, self._backend_id)) for s in samples])

        try:
            sender.run(sink, stop=self._stop)
        except Exception:  # a probe that fails must not take the testbed with it
            log.exception("testbed probes of slice %d on backend %d stopped", slice_id, self._backend_id)

    def _send(self, slice_id: int, flow: LaneFlow, data: bytes) -> None:
        frame, off = self._frames[(slice_id, flow.lane)]
        frame[off : off + len(data)] = data
        self._tx.send(frame)

    def on_frame(self, frame: bytes, rx_ns: int) -> None:
        """A frame the egress meter did not count: reflect it if it is one of our test packets."""
        found = innermost_udp(frame)
        if found is None or found[0] not in self._ports:
            return
        try:
            test = SenderPacket.unpack(frame[found[2] :])
        except WireError:
            return
        # the innermost TTL is not read here (0: not reported); the return leg is loopback
        answer = reply(test, rx_ns, 0).pack(PACKET_SIZE)
        with contextlib.suppress(OSError):  # the sender closed meanwhile (its probes restarted)
            self._reflector.sendto(answer, (LOOPBACK, found[0]))
            self.reflected += 1

    def close(self, *, wait: bool = True) -> None:
        """Stop probing; the senders wait for their last replies (up to ``TIMEOUT_S``), so
        ``wait=False`` lets that and the sockets' closing finish in the background."""
        self._stop.set()
        if not wait:
            threading.Thread(target=self.close, name=f"probe-{self._backend_id}-close", daemon=True).start()
            return
        for t in self._threads:
            t.join(timeout=TIMEOUT_S + 1)
        for _, sender in self._senders:
            sender.close()
        self._reflector.close()
        self._tx.close()
