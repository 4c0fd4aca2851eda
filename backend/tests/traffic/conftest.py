"""A veth pair inside a private network namespace for the live traffic tests.

The testbed module is written elsewhere; these tests only need one wire. Namespaces are
named after this process (``sptr-<pid>-<n>``), so a run that crashed leaves names whose
pid is gone, and the next run deletes them before creating its own.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PREFIX = "sptr-"
_counter = itertools.count()


@dataclass(frozen=True)
class Wire:
    netns: str
    tx: str  # send on this end
    rx: str  # capture on this end

    def ip(self, *args: str) -> str:
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *args], check=True, capture_output=True, text=True
        ).stdout


def _pid_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _remove_stale() -> None:
    for entry in Path("/run/netns").glob(f"{PREFIX}*") if Path("/run/netns").exists() else []:
        parts = entry.name[len(PREFIX) :].split("-")
        if parts and parts[0].isdigit() and not _pid_alive(int(parts[0])):
            subprocess.run(["ip", "netns", "del", entry.name], check=False, capture_output=True)


@pytest.fixture
def wire() -> Iterator[Wire]:
    _remove_stale()
    name = f"{PREFIX}{os.getpid()}-{next(_counter)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        w = Wire(name, "sptx0", "sprx0")
        # no IPv6 on the wire: a link coming up sends its own frames (router solicitation, MLD),
        # which a test counting every frame or every socket drop would take for its own
        w.ip("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
        w.ip("ip", "link", "add", "name", w.tx, "type", "veth", "peer", "name", w.rx)
        for dev in (w.tx, w.rx):
            w.ip("ip", "link", "set", dev, "up")
        yield w
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)
