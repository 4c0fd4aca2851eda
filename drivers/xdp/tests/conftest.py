"""Fixtures of the XDP driver tests: a loaded (not attached) data plane, and what the tests'
receivers read (the program on the veth testbed: ``beds.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sliceportal.traffic.packets import parse_payload
from sliceportal_xdp.driver import Driver

ALT_MAC = "02:00:00:00:aa:01"
ALT_IP = "10.99.0.1"
SRC_MAC = "02:00:00:00:aa:02"
LANES_ON_CPU0 = {0: 0, 1: 0, 2: 0, 3: 0}


def noop(_: object) -> None:
    pass


def loaded(**options: Any) -> Driver:
    """A data plane loaded into the kernel, not attached, recording its decisions: its alt
    node ALT_MAC / ALT_IP (frames sent there from SRC_MAC), no overload polling; ``options``
    on top."""
    return Driver(
        {"record_last": True, "alt_mac": ALT_MAC, "alt_ip": ALT_IP, "src_mac": SRC_MAC, "overload_poll_s": 0, **options}
    )


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    """A data plane loaded into the kernel, recording its decisions, not attached."""
    d = loaded(lanes=4, paths=8, lane_cpus=LANES_ON_CPU0)
    assert d.dataplane is not None  # load now, so a missing privilege fails here with a clear message
    yield d
    d.close()


def our_payload(datagram: bytes) -> tuple[int, int] | None:
    """(flow id, sequence) of one of our frames as a VXLAN socket receives it (its payload ends
    with our innermost payload header and padding); None for anything else."""
    idx = datagram.find(b"SP")
    got = parse_payload(datagram[idx:]) if idx >= 0 else None
    return (got[0], got[1]) if got else None
