"""p4runtime-shell against a p4rt backend: the command ``sliceportal p4rt shell`` runs (ADR 0003).

p4runtime-shell lives in a virtualenv of its own (``.tools/p4runtime-shell``, made by
scripts/bootstrap.sh from tools/p4runtime-shell/requirements.txt): it pins protobuf 3.20.3 and
ships the PyPI ``p4`` package, which would replace the workspace's (ADR 0007). This module only
builds its command line from a backend's options; it never imports it.

* Read-only by default: the session joins with election id 0, below every id a portal session
  uses (the ``election_id`` option is at least 1, writers bid from 2**64), so it never takes
  the primary role from the portal; the launcher refuses writes in the client as well
  (tools/p4runtime-shell/launch.py says why). ``write=True`` bids above the primary the switch
  names, as a portal writer does (``client.writer_bid``); the portal's next push outbids it back.
* No ``--config``: the shell fetches the P4Info from the switch and pushes no pipeline.
* TLS material goes to the shell as ``/dev/fd/N`` of anonymous memory files (memfd): the client
  key is never on disk nor in argv (p4runtime-shell reads PEM from paths only).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from sliceportal.drivers.contract import DriverError, OptionsError

from .client import WRITE_FLOOR, Session, writer_bid
from .driver import Options

TOOL_DIR = Path("tools") / "p4runtime-shell"  # the lock and the launcher, committed
VENV_DIR = Path(".tools") / "p4runtime-shell"  # the isolated virtualenv bootstrap.sh makes
LAUNCHER = "launch.py"
BACKUP_ELECTION_ID = 0


class ShellUnavailable(DriverError):
    """p4runtime-shell's virtualenv is not installed beside this checkout."""


def shell_python(start: Path | None = None) -> tuple[Path, Path]:
    """The isolated interpreter and the launcher of the checkout this package lives in."""
    here = (start or Path(__file__)).resolve()
    for root in here.parents:
        launcher = root / TOOL_DIR / LAUNCHER
        if launcher.is_file():
            python = root / VENV_DIR / "bin" / "python"
            if not os.access(python, os.X_OK):
                raise ShellUnavailable(
                    f"p4runtime-shell is not installed: {python} is missing", hint="run scripts/bootstrap.sh"
                )
            return python, launcher
    raise ShellUnavailable(f"{TOOL_DIR / LAUNCHER} not found above {here}: not a sliceportal checkout")


def _election(value: int) -> str:
    return f"{value >> 64},{value & ((1 << 64) - 1)}"  # p4runtime-shell's "<high>,<low>"


@dataclass
class ShellSession:
    """p4runtime-shell's command line for one backend, and the memfds it reads TLS material from."""

    argv: list[str]
    fds: tuple[int, ...]
    address: str
    device_id: int
    election_id: int
    write: bool
    tls: bool

    def describe(self) -> str:
        role = (
            f"primary (election id {self.election_id}) until the portal's next push outbids it"
            if self.write
            else f"read-only backup (election id {self.election_id})"
        )
        transport = "TLS" if self.tls else "plaintext"
        return f"p4runtime-shell to device {self.device_id} at {self.address} ({transport}): {role}"

    def exec(self) -> NoReturn:
        """Replace this process with the shell (its terminal, its exit status)."""
        for fd in self.fds:
            os.set_inheritable(fd, True)
        os.execv(self.argv[0], self.argv)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name)  # close-on-exec until exec() or pass_fds hands it over
    os.write(fd, data)
    return fd


def _options(options: Mapping[str, Any]) -> Options:
    try:
        return Options.model_validate(dict(options))
    except ValidationError as e:
        raise OptionsError.from_validation("p4rt", e) from None


def _primary_bid(opts: Options) -> int:
    """An id above the primary's, as the switch names it to a session that joins below writers."""
    s = Session(opts.address, opts.device_id, 2 + secrets.randbelow(WRITE_FLOOR - 2), opts.timeout_s, opts.tls())
    try:
        return writer_bid(s.primary_id)
    finally:
        s.close()


def shell_session(options: Mapping[str, Any], *, write: bool = False, extra: Sequence[str] = ()) -> ShellSession:
    """p4runtime-shell's session for a p4rt backend's ``options``; ``write`` joins to take the
    primary role (connects once to learn the primary's id). ``extra``: more p4runtime-shell flags."""
    python, launcher = shell_python()
    opts = _options(options)
    election = _primary_bid(opts) if write else BACKUP_ELECTION_ID
    # -I: neither PYTHONPATH nor user site-packages may mix the workspace's packages in
    argv = [str(python), "-I", str(launcher), "--grpc-addr", opts.address, "--device-id", str(opts.device_id)]
    argv += ["--election-id", _election(election), *([] if write else ["--read-only"])]
    fds: list[int] = []
    tls = opts.tls()
    if tls is not None:
        argv.append("--ssl")
        for flag, pem in (("--cacert", tls.ca_cert), ("--cert", tls.client_cert), ("--private-key", tls.client_key)):
            if pem is not None:
                fds.append(_memfd(flag.lstrip("-"), pem))
                argv += [flag, f"/dev/fd/{fds[-1]}"]
        if tls.server_name:
            argv += ["--server-name", tls.server_name]
    return ShellSession(
        [*argv, *extra], tuple(fds), opts.address, opts.device_id, election, write=write, tls=tls is not None
    )
