"""Reflector and sender on the loopback interface (no root): what the reflector puts into its
replies, the residence time the sender excludes, and the samples stored by the real ingest API."""

from __future__ import annotations

import json
import select
import threading
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from sliceportal.models import Backend, Role
from sliceportal.probe import cli as probe_cli
from sliceportal.probe.post import Poster
from sliceportal.probe.reflector import Reflector, reply
from sliceportal.probe.sender import LaneFlow, LaneSample, Sender
from sliceportal.probe.sockets import receive, udp_socket
from sliceportal.probe.wire import ReflectorPacket, SenderPacket, ns_from_ntp, ntp_from_ns
from tests.factories import login, make_user, slice_type_id, tenant_body, wait_until


@pytest.fixture
def reflector() -> Iterator[Reflector]:
    r = Reflector("127.0.0.1", 0)
    stop = threading.Event()
    t = threading.Thread(target=r.serve, args=(stop,))
    t.start()
    yield r
    stop.set()
    t.join()
    r.close()


def _exchange(reflector: Reflector, payload: bytes, tos: int) -> tuple[ReflectorPacket, int, int, int]:
    sock = udp_socket("127.0.0.1", 0, tos=tos)
    try:
        sock.connect(("127.0.0.1", reflector.port))
        sock.send(payload)
        assert select.select([sock], [], [], 5)[0], "no reply within 5 s"
        got = receive(sock)
        return ReflectorPacket.unpack(got.data), len(got.data), got.tos, got.rx_ns
    finally:
        sock.close()


def test_the_reflector_answers_as_rfc_8762_says(reflector: Reflector) -> None:
    t1 = time.time_ns()
    test = SenderPacket(seq=4242, timestamp=ntp_from_ns(t1), error_estimate=0x8105)
    reply, length, tos, t4 = _exchange(reflector, test.pack(120), tos=46 << 2)
    assert reply.seq == 4242  # stateless: the sender's sequence number (§4.3.1)
    assert (reply.sender_seq, reply.sender_timestamp, reply.sender_error_estimate) == (4242, test.timestamp, 0x8105)
    assert reply.sender_ttl == 255  # the sender sends with TTL 255, loopback does not decrement
    t2, t3 = ns_from_ntp(reply.receive_timestamp), ns_from_ntp(reply.timestamp)
    assert t1 - 1 <= t2 <= t3 <= t4 + 1  # one host, one clock
    assert length == 120  # as long as the test packet
    assert tos >> 2 == 46  # the lane's DSCP carried back
    # a TWAMP-light sender's 14 octets + padding: answered with a full 44-octet packet
    twamp, length, _, _ = _exchange(reflector, test.pack()[:14] + bytes(27), tos=0)
    assert twamp.sender_seq == 4242 and length == 44
    # the reflector counts a reply after sending it: the reply can arrive here first
    wait_until("the second reply counted", lambda: reflector.reflected == 2, timeout_s=5)
    assert reflector.dscp_seen == {46: 1, 0: 1}


def test_the_reflectors_residence_time_is_not_delay() -> None:
    """The reflector holds the probe 150 ms before answering: t4 - t1 includes it, the
    two-way delay must not."""
    held = Reflector("127.0.0.1", 0)
    sender = Sender(("127.0.0.1", held.port), [LaneFlow(0, 0)], rate_pps=10, timeout_s=3.0)
    samples: list[LaneSample] = []
    run = threading.Thread(target=sender.run, args=(samples.extend,), kwargs={"duration_s": 0.05})
    try:
        run.start()
        assert select.select([held.sock], [], [], 5)[0], "the probe did not arrive"
        threading.Event().wait(0.15)  # the residence time under test, not a wait for a condition
        assert held.reflect_waiting() == 1
        run.join(10)
    finally:
        sender.close()
        held.close()
    assert not run.is_alive()
    [s] = samples
    assert (s.tx_packets, s.rx_packets, s.loss_pct) == (1, 1, 0.0)
    assert s.delay_mean_ms is not None and s.delay_mean_ms < 20, s  # loopback: far below the 150 ms held


def test_probe_samples_reach_the_ingest_api(client: TestClient, session: Session, reflector: Reflector) -> None:
    make_user(session, "op", Role.OPERATOR)
    agent = make_user(session, "probe-agent", Role.INTEGRATOR)
    op = login(client, "op")
    st = slice_type_id(client, op, "Dual Best Effort + Low Latency")
    tenant = client.post("/api/v1/tenants", json=tenant_body("red", 1, 1), headers=op).json()["id"]
    slice_id = client.post(
        "/api/v1/slices", json={"name": "red-s", "tenant_id": tenant, "slice_type_id": st}, headers=op
    ).json()["id"]
    backend = Backend(name="xdp-a", driver="xdp")
    session.add(backend)
    session.commit()
    # the probe agent's key, made by an operator (an integrator's own login grants read only)
    r = client.post(
        "/api/v1/api-keys", json={"name": "probe", "scopes": ["telemetry"], "user_id": agent.id}, headers=op
    )
    assert r.status_code == 201, r.text

    sender = Sender(
        ("127.0.0.1", reflector.port), [LaneFlow(0, 0), LaneFlow(1, 46)], rate_pps=200, interval_s=0.5, timeout_s=0.5
    )
    poster = Poster(client, r.json()["secret"], slice_id, backend.id)
    try:
        totals = sender.run(poster, duration_s=1.0)
    finally:
        sender.close()
        poster.close()
    assert poster.failed == 0 and poster.posted >= 4

    got = client.get(f"/api/v1/slices/{slice_id}/kpis", params={"source": "probe"}, headers=op).json()
    assert {p["lane"] for p in got} == {0, 1}
    assert all(p["source"] == "probe" and p["backend_id"] == backend.id for p in got)
    for t in totals:
        lane = [p for p in got if p["lane"] == t.lane]
        assert sum(p["tx_packets"] for p in lane) == t.sent
        assert sum(p["rx_packets"] for p in lane) == t.returned == t.sent  # loopback loses nothing
        assert all(p["loss_pct"] == 0 and p["delay_p99_ms"] is not None for p in lane)
    assert client.get(f"/api/v1/slices/{slice_id}/kpis", params={"source": "counters"}, headers=op).json() == []


def test_cli_refuses_bad_options_naming_them() -> None:
    runner = CliRunner()
    cases = [
        (["--lane", "9=0", "--print"], "--lane"),
        (["--lane", "0=0"], "--portal"),
        (["--lane", "0=0", "--portal", "http://127.0.0.1:1"], "--api-key-file"),
        (["--lane", "0=0", "--print", "--rate", "0"], "--rate"),
    ]
    for extra, field in cases:
        r = runner.invoke(probe_cli.app, ["send", "--to", "127.0.0.1:9", "--slice", "1", "--backend", "1", *extra])
        assert r.exit_code == 2, (extra, r.output)
        assert field in r.output, (extra, r.output)


def test_cli_prints_json_lines(reflector: Reflector) -> None:
    r = CliRunner().invoke(
        probe_cli.app,
        [
            "send",
            "--to",
            f"127.0.0.1:{reflector.port}",
            "--slice",
            "3",
            "--backend",
            "4",
            "--lane",
            "2=46",
            "--print",
            "--rate",
            "100",
            "--interval",
            "0.2",
            "--timeout",
            "0.3",
            "--duration",
            "0.5",
        ],
    )
    assert r.exit_code == 0, r.output
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert lines and all(p["slice_id"] == 3 and p["backend_id"] == 4 and p["lane"] == 2 for p in lines)
    assert sum(p["tx_packets"] for p in lines) == sum(p["rx_packets"] for p in lines) > 0


def test_a_sender_with_its_own_transmit_gets_the_replies_on_its_lane_sockets() -> None:
    # the testbed's way (testbed/probes.py): the test packets leave another way (there, inside a
    # subscriber's tunnelled frame), a reflector built from ``reply`` answers each lane's socket
    far = udp_socket("127.0.0.1", 0)
    sent: list[tuple[int, bytes]] = []

    def transmit(flow: LaneFlow, data: bytes) -> None:
        sent.append((flow.lane, data))
        test = SenderPacket.unpack(data)
        far.sendto(reply(test, time.time_ns(), 0).pack(len(data)), ("127.0.0.1", ports[flow.lane]))

    sender = Sender(
        far.getsockname(), [LaneFlow(2, 46), LaneFlow(6, 10)], bind="127.0.0.1", rate_pps=20, transmit=transmit
    )
    ports = sender.ports()
    samples: list[LaneSample] = []
    try:
        totals = sender.run(samples.extend, duration_s=1.0)
    finally:
        sender.close()
        far.close()
    assert {lane for lane, _ in sent} == {2, 6}
    assert all(t.sent == t.returned and t.sent >= 15 and t.late == 0 for t in totals), totals
    assert samples and all(s.loss_pct == 0 and s.delay_p99_ms is not None for s in samples), samples
