"""Shared by the traffic benches: a throw-away veth pair in its own network namespace."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def veth_wire(tag: str) -> Iterator[tuple[str, str, str]]:
    """(namespace, tx, rx): a veth pair, both ends up, deleted afterwards (needs root)."""
    if os.geteuid() != 0:
        raise SystemExit("this bench needs root (network namespaces, AF_PACKET)")
    ns = f"sptr-{os.getpid()}-{tag}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        run = ["ip", "-n", ns, "link"]
        subprocess.run([*run, "add", "name", "sptx0", "type", "veth", "peer", "name", "sprx0"], check=True)
        subprocess.run([*run, "set", "sptx0", "up"], check=True)
        subprocess.run([*run, "set", "sprx0", "up"], check=True)
        yield ns, "sptx0", "sprx0"
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
