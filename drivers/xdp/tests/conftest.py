"""Fixtures of the XDP driver tests: a loaded (not attached) data plane and IR helpers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sliceportal_xdp.driver import Driver

ALT_MAC = "02:00:00:00:aa:01"
ALT_IP = "10.99.0.1"
SRC_MAC = "02:00:00:00:aa:02"


def noop(_: object) -> None:
    pass


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    """A data plane loaded into the kernel, recording its decisions, not attached."""
    d = Driver(
        {
            "record_last": True,
            "alt_mac": ALT_MAC,
            "alt_ip": ALT_IP,
            "src_mac": SRC_MAC,
            "lanes": 4,
            "paths": 8,
            "lane_cpus": {0: 0, 1: 0, 2: 0, 3: 0},
            "overload_poll_s": 0,
        }
    )
    assert d.dataplane is not None  # load now, so a missing privilege fails here with a clear message
    yield d
    d.close()
