"""Open sockets inside a network namespace without running a process there.

``setns(2)`` moves only the calling thread; a socket keeps the namespace it was created in
after the thread moves back, so the sender and the meter can live in this process while
their interfaces live in the testbed's namespaces.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CLONE_NEWNET = 0x40000000
NETNS_DIR = Path("/run/netns")

_libc = ctypes.CDLL(None, use_errno=True)


class NetnsError(OSError):
    """A namespace that does not exist or cannot be entered (needs CAP_SYS_ADMIN)."""


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise NetnsError(err, f"setns failed: {os.strerror(err)}")


@contextmanager
def entered(name: str | None) -> Iterator[None]:
    """Run the body with this thread in network namespace ``name`` (None: stay where we are)."""
    if name is None:
        yield
        return
    try:
        target = os.open(NETNS_DIR / name, os.O_RDONLY)
    except OSError as exc:
        raise NetnsError(exc.errno, f"network namespace {name!r} not found under {NETNS_DIR}") from exc
    home = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(target)
        os.close(home)
