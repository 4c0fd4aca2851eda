"""Client of the simulator's control socket (text lines, see dataplane/netfpga/sim/main.cpp).

A real NetFPGA SUME exposes the same AXI4-Lite registers through its driver's register
ioctl; only this transport would change. Every failure surfaces as ``UnreachableError``,
except a token the agent refuses (``OptionsError``: retrying cannot help, the options must change).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable, Sequence

from sliceportal.drivers.addresses import TcpAddress, parse_address
from sliceportal.drivers.contract import DriverError, OptionsError, UnreachableError

# The agent's answer to a connection that did not open with the right ``AUTH <token>``;
# it closes the connection after it, before executing anything else that was sent.
_UNAUTHORIZED = "ERR unauthorized"
# What the agent answers: "OK[ payload]" or "ERR <reason>", printable ASCII. Anything else is
# another service (an HTTP server's "HTTP/1.1 400 Bad Request"), never quoted back.
_PROTOCOL_REPLY = re.compile(rb"^(OK( [ -~]*)?|ERR [ -~]{1,300})\r?$")


class CsrError(DriverError):
    """The data plane answered, but with an error."""


def _connect(address: str, timeout: float) -> socket.socket:
    try:
        where = parse_address(address, unprefixed="unix")
        if isinstance(where, TcpAddress):
            return socket.create_connection((where.host, where.port), timeout=timeout)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(where.path)
        return s
    except (OSError, ValueError) as e:
        raise UnreachableError(
            f"cannot reach the NetFPGA data plane at {address!r}: {e}",
            hint="start the simulator (sp_sim --socket PATH) or check the backend's address",
        ) from e


class CsrClient:
    """Register reads and writes; batches are pipelined (all lines sent, then all replies)."""

    def __init__(self, address: str, timeout: float = 30.0, token: str | None = None) -> None:
        self.address = address
        self._sock = _connect(address, timeout)
        self._buf = b""
        if token is not None:
            try:
                self.command(f"AUTH {token}")
            except CsrError as e:  # an agent without a token answers AUTH with "ERR no token"
                self.close()
                raise OptionsError(
                    f"the NetFPGA agent at {address!r} does not take a token: {e}",
                    hint="remove agent_token, or start the agent with --token-file",
                ) from e
            except DriverError:
                self.close()
                raise

    def close(self) -> None:
        self._sock.close()

    def _mismatch(self) -> UnreachableError:
        # Our words only: what answered is not quoted back (#27), or a backend's health would
        # tell whoever registers one what any port of the backend networks replies.
        return UnreachableError(
            f"protocol mismatch: what answers at {self.address!r} is not a NetFPGA agent "
            "(its reply is not of the register protocol)",
            hint="check the backend's address: it must be an sp_sim / NetFPGA agent",
        )

    def _lost(self, e: Exception | None = None) -> UnreachableError:
        return UnreachableError(f"the NetFPGA data plane at {self.address!r} dropped the connection: {e or 'EOF'}")

    def _readline(self) -> str:
        while b"\n" not in self._buf:
            try:
                chunk = self._sock.recv(65536)
            except OSError as e:
                raise self._lost(e) from e
            if not chunk:
                raise self._lost()
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        if not _PROTOCOL_REPLY.match(line):
            raise self._mismatch()
        return line.decode()

    def commands(self, lines: Sequence[str]) -> list[str]:
        """Send ``lines``; return the payload of each ``OK`` reply (raise on ``ERR``)."""
        if not lines:
            return []
        try:
            self._sock.sendall(("\n".join(lines) + "\n").encode())
        except OSError as e:
            raise self._lost(e) from e
        # Every reply is read before raising, so the connection stays in step; but an agent that
        # refused the token answers once and closes, so that reply is raised at once.
        replies = []
        for _ in lines:
            reply = self._readline()
            if reply.startswith(_UNAUTHORIZED):
                raise OptionsError(
                    f"the NetFPGA agent at {self.address!r} refused the connection: it needs the token of its "
                    "--token-file",
                    hint="set the backend's agent_token to the token in the agent's --token-file",
                )
            replies.append(reply)
        for line, reply in zip(lines, replies, strict=True):
            if not reply.startswith("OK"):
                raise CsrError(f"data plane refused {line.split()[0]!r}: {reply}")
        return [r[3:] for r in replies]

    def command(self, line: str) -> str:
        return self.commands([line])[0]

    def _value(self, payload: str) -> int:
        try:
            return int(payload)
        except ValueError:
            raise self._mismatch() from None

    def read(self, addr: int) -> int:
        return self._value(self.command(f"R {addr:#x}"))

    def read_many(self, addrs: Iterable[int]) -> list[int]:
        return [self._value(v) for v in self.commands([f"R {a:#x}" for a in addrs])]

    def read64(self, addr: int) -> int:
        lo, hi = self.read_many([addr, addr + 4])
        return lo | hi << 32

    def write(self, addr: int, value: int) -> None:
        self.command(f"W {addr:#x} {value:#x}")

    def write_many(self, writes: Iterable[tuple[int, int]]) -> None:
        self.commands([f"W {a:#x} {v:#x}" for a, v in writes])

    def write_read(self, writes: Iterable[tuple[int, int]], addrs: Iterable[int]) -> list[int]:
        """``writes``, then reads of ``addrs``, in that order and in one round trip."""
        ws = [f"W {a:#x} {v:#x}" for a, v in writes]
        replies = self.commands([*ws, *(f"R {a:#x}" for a in addrs)])
        return [self._value(v) for v in replies[len(ws) :]]
