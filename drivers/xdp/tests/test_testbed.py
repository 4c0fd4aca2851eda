"""The generic testbed (testbed/src/sliceportal_testbed): topology, reachability through
the bridge, and clean-up after a run that never tore down."""

from __future__ import annotations

import os
import socket

import pytest

from sliceportal_testbed import Testbed, cleanup, in_netns

pytestmark = pytest.mark.needs_root


def test_leftovers_of_a_crashed_run_are_removed_on_entry() -> None:
    prefix = f"spk{os.getpid() % 100000}-"
    crashed = Testbed(prefix)
    crashed.up()  # never torn down, as after a crash
    assert {f"{prefix}{r}" for r in ("edge", "core", "alt")} <= set(os.listdir("/run/netns"))
    with Testbed(prefix) as tb:
        # every node reaches every other through the edge bridge
        for a, b in (("edge", "core"), ("edge", "alt"), ("core", "alt")):
            with in_netns(tb[b].netns):
                rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            with in_netns(tb[a].netns):
                tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            with rx, tx:
                rx.bind((tb[b].ip, 7777))
                rx.settimeout(2)
                tx.sendto(b"ping", (tb[b].ip, 7777))
                data, (src, _) = rx.recvfrom(16)
                assert (data, src) == (b"ping", tb[a].ip)
        before = tb.link_stats("alt")
        assert (
            tb.send("edge", [bytes.fromhex(tb["alt"].mac.replace(":", "")) + bytes(6) + b"\x88\xb5" + bytes(50)]) == 1
        )
        assert tb.link_stats("alt").rx_packets >= before.rx_packets + 1
    assert cleanup(prefix) == []


def test_bad_prefixes_are_refused() -> None:
    for bad in ("", "a/b", "x" * 30):
        with pytest.raises(ValueError):
            Testbed(bad)
