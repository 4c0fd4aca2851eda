"""Data-plane processes the testbed starts: the bundled P4Runtime target (dataplane/bmv2)."""

from __future__ import annotations

import socket
import sys
from typing import Protocol

from sliceportal.core.config import REPO_ROOT

BMV2_DIR = REPO_ROOT / "dataplane" / "bmv2"


def free_port() -> int:
    """A TCP port on loopback nobody listens on now (for a server the caller starts next)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RunningTarget(Protocol):
    address: str

    def stop(self) -> None: ...


def start_p4runtime_target(*args: str) -> RunningTarget:
    """The bundled P4Runtime target as a subprocess on a free port (``dataplane/bmv2``'s own
    launcher, which its tests use too); raises RuntimeError when it does not come up."""
    if str(BMV2_DIR) not in sys.path:
        sys.path.insert(0, str(BMV2_DIR))
    from bmv2_target.testing import Target

    target: RunningTarget = Target(*args)
    return target
