"""The model as a live card: frames sent into one veth leave classified on the other
(AF_PACKET on both ends), host frames go the other way untouched."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from scapy.sendrecv import AsyncSniffer, sendp

from sliceportal.traffic.packets import Flow, build_bytes, parse_payload, payload
from sliceportal_netfpga.experiment import table2_ir

from .conftest import live_card


@pytest.mark.needs_root
def test_frames_cross_the_simulated_card(sim_binary: Path, tmp_path: Path, veths: tuple[str, str]) -> None:
    wire, host = veths
    with live_card(sim_binary, tmp_path, veths) as driver:
        driver.apply(driver.lower(table2_ir(1)), lambda _: None)
        flows = [Flow("10.0.0.5", "10.255.0.1", 5000 + 8 * lane) for lane in range(4)]
        frames = [build_bytes(f, payload(i, 0, 0, 64)) for i, f in enumerate(flows)]
        ours: list[bytes] = []  # only our frames count: the kernel may send its own on a new link
        listening = threading.Event()
        sniffer = AsyncSniffer(
            iface=host,
            store=False,
            started_callback=listening.set,
            lfilter=lambda p: parse_payload(bytes(p)[-64:]) is not None,
            prn=lambda p: ours.append(bytes(p)),
        )
        sniffer.start()
        assert listening.wait(10), "the sniffer did not start"
        sendp(frames, iface=wire, verbose=False)
        deadline = time.monotonic() + 10
        while len(ours) < len(frames) and time.monotonic() < deadline:
            time.sleep(0.05)
        sniffer.stop()
        assert sorted(ours) == sorted(frames)
        c = driver.counters()
        assert [c.lanes[f"0/{lane}"].packets for lane in range(4)] == [1, 1, 1, 1]


@pytest.mark.needs_root
def test_rate_limit_holds_in_wall_clock_time(sim_binary: Path, tmp_path: Path, veths: tuple[str, str]) -> None:
    """Live, the model's buckets refill by the wall clock (sp_sim's time_skip), not by its own
    slow cycles: a slice limited to 400 kbit/s and offered ~4x that for ~1.5 s passes no more
    than the limit over the wall time plus its bucket, and at least half the limit."""
    from sliceportal.rules.ir import Qos, SliceEntry, TenantEntry

    rate_bps, burst_ms = 400_000, 100.0
    wire, host = veths
    with live_card(sim_binary, tmp_path, veths) as driver:
        base = table2_ir(1)
        entry = SliceEntry(
            slice_id=1,
            ref=1,
            name="s",
            tenant_vni=7,
            tenant_vlan=None,
            lanes=(0, 1, 2, 3),
            qos=Qos(rate_bps=rate_bps, burst_ms=burst_ms),
        )
        ir = type(base)(
            lanes=base.lanes,
            paths=base.paths,
            rules=base.rules,
            slices=(entry,),
            tenants=(TenantEntry(1, "t", 7, None),),
        )
        plan = driver.lower(ir)
        burst = plan.tables["rate_limits"][0]["burst"]
        driver.apply(plan, lambda _: None)
        flow = Flow("10.0.0.5", "10.255.0.1", 5000)
        frames = [build_bytes(flow, payload(i, 0, 0, 900)) for i in range(300)]
        size = len(frames[0])
        listening = threading.Event()
        sniffer = AsyncSniffer(iface=host, store=True, started_callback=listening.set)
        sniffer.start()
        assert listening.wait(10), "the sniffer did not start"
        t0 = time.monotonic()
        sendp(frames, iface=wire, verbose=False, inter=1 / 200)  # ~1.5 Mbit/s when the host keeps up
        elapsed = time.monotonic() - t0
        time.sleep(0.5)
        sniffer.stop()
        got = [p for p in sniffer.results or [] if parse_payload(bytes(p)[-900:]) is not None]
        allowed = (rate_bps / 8 * (elapsed + 0.5) + burst) / size
        assert len(got) <= allowed + 1, (len(got), allowed, elapsed)
        # By the model's own (compressed) cycles the bucket would barely refill: a few
        # frames of its burst would pass. By the wall clock, half the limit at least.
        assert len(got) >= min(len(frames), 0.5 * rate_bps / 8 * elapsed / size), (len(got), elapsed)
        c = driver.counters()
        assert c.slices[1].drops["rate_limit"] == len(frames) - len(got)
