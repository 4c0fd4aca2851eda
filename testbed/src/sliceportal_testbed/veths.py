"""Veth pairs for tests and benches that put a data plane on links of their own (root)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def veth_pairs(*pairs: tuple[str, str]) -> Iterator[None]:
    """Create each (a, b) veth pair, up, without IPv6 (no router solicitations of the kernel's
    own among the frames: IPv6 goes off before the link comes up); deleted on exit."""
    try:
        for a, b in pairs:
            subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
            for dev in (a, b):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1"], check=False)
                subprocess.run(["ip", "link", "set", dev, "up"], check=True)
        yield
    finally:
        for a, _ in pairs:
            subprocess.run(["ip", "link", "del", a], check=False, capture_output=True)
