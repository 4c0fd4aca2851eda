"""How the congestion scenario overloads each plane so that its own priority mechanism, not
a FIFO in front of it, decides which lanes lose (seed 000 Table 5: the best-effort lane
first, the highest lanes last).

- **P4** (bundled target, Python around a compiled engine, CPU-bound here): its egress
  link runs at ``LINK_HEADROOM`` times the normal offered bit rate; congestion lowers
  that link to ``normal / factor`` (its traffic manager's wall-clock drain,
  ``Live/SetLinkRate``) while the offered load stays:
  the 8 strict-priority queues per port fill and tail-drop from the lowest lane up. Raising
  the offered load instead would overload the Python process, whose socket buffers drop
  every lane alike.
- **NetFPGA** (Verilator model, CPU-bound): the same, through the model's wall-clock DMA
  drain (``LIVE_DRAIN``): the RTL's two-level queue (round robin over slices' paths, strict
  priority over lanes inside a path) decides.
- **XDP** (the kernel): frames leave the program by XDP_TX / cpumap, past every qdisc, so
  the program itself holds the budget: ``struct sp_egress``, one token bucket for all it
  forwards at ``normal / factor``, admitting lane l of n only while (n-1-l)/n of the
  bucket, kept for the lanes above it, stays in it (the lowest lane is refused first; the
  excess is dropped, counted).
  No budget outside a scenario.

``MECHANISM`` says, per driver, what is capped and how (``GET /api/v1/testbed``).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.models import Backend
from sliceportal.services.backends import POOL
from sliceportal_testbed.tls import P4RuntimeCerts

LINK_HEADROOM = 4.0  # a software plane's normal egress link rate / its normal offered bit rate
# The bundled P4 target's own configuration service beside P4Runtime (docs/bmv2.md, "Live ports"):
# JSON bodies over gRPC on the P4Runtime port, with the same TLS. The testbed is a client of it
# as an operator's script would be; it imports nothing of the target.
LINK_RATE_METHOD = "/sliceportal.bmv2.Live/SetLinkRate"

MECHANISM = {
    "p4rt": "egress port link rate of the target's traffic manager (8 strict-priority queues, 64 packets "
    "each, tail drop), lowered to offered / factor",
    "netfpga": "wall-clock DMA drain of the RTL's two-level queue (round robin over slices, strict priority "
    "over lanes), lowered to offered / factor",
    "xdp": "the XDP program's egress budget (token bucket admitting lanes by priority, excess dropped), "
    "set to offered / factor",
}


class CapError(RuntimeError):
    """The data plane did not take the new egress rate; the message says why."""


def p4_link_rate(address: str, rate_bps: int | None, certs: P4RuntimeCerts | None = None) -> dict[str, Any]:
    """Set the bundled P4 target's egress link rate (None: unlimited); returns its status.
    ``certs``: the target serves mutual TLS with them (the testbed's P4 plane does)."""
    channel = (
        grpc.insecure_channel(address)
        if certs is None
        else grpc.secure_channel(
            address,
            grpc.ssl_channel_credentials(
                certs.ca_cert.read_bytes(), certs.client_key.read_bytes(), certs.client_cert.read_bytes()
            ),
        )
    )
    try:
        with channel:
            reply = channel.unary_unary(LINK_RATE_METHOD)(json.dumps({"link_rate_bps": rate_bps}).encode(), timeout=5.0)
    except grpc.RpcError as exc:  # refused, unreachable, or not the bundled target (UNIMPLEMENTED)
        raise CapError(f"the P4 target at {address} refused the link rate {rate_bps}: {exc}") from exc
    status: dict[str, Any] = json.loads(reply)
    return status


def netfpga_drain(sock_path: str, rate_bps: float) -> None:
    """Set the NetFPGA model's wall-clock DMA drain (0: off, paced in simulated cycles)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(str(Path(sock_path)))
            s.sendall(f"LIVE_DRAIN {rate_bps / 1e6:.6f}\n".encode())
            reply = s.makefile().readline().strip()
    except OSError as exc:
        raise CapError(f"the NetFPGA model at {sock_path} is unreachable: {exc}") from exc
    if reply != "OK":
        raise CapError(f"the NetFPGA model refused LIVE_DRAIN {rate_bps / 1e6:.3f}: {reply}")


def p4_egress(address: str, certs: P4RuntimeCerts | None = None) -> Callable[[float | None], None]:
    """The setter the testbed calls with a P4 target's egress rate in bit/s."""

    def set_rate(bps: float | None) -> None:
        p4_link_rate(address, None if bps is None else int(bps), certs)

    return set_rate


def netfpga_egress(sock_path: str) -> Callable[[float | None], None]:
    """The setter the testbed calls with the NetFPGA model's egress (drain) rate in bit/s."""
    return lambda bps: netfpga_drain(sock_path, bps or 0.0)


def xdp_egress(
    sessions: sessionmaker[Session], backend_id: Callable[[], int], lanes: int
) -> Callable[[float | None], None]:
    """The setter for the XDP program's egress budget, through the backend's driver (in-process,
    the one that loaded and attached the program; or the client of the backend's agent)."""

    def set_budget(bps: float | None) -> None:
        with sessions() as session:
            backend = session.get(Backend, backend_id())
            if backend is None:
                raise CapError(f"backend {backend_id()} is gone")
            try:
                with POOL.use(session, backend) as driver:
                    setter = getattr(driver, "set_egress_budget", None)
                    if setter is None:
                        raise CapError(f"driver {backend.driver} has no XDP program to budget")
                    setter(bps, lanes)
            except CapError:
                raise
            except Exception as exc:
                raise CapError(f"the XDP program did not take the egress budget {bps}: {exc}") from exc

    return set_budget
