"""``sliceportal p4rt …``: p4runtime-shell against a p4rt backend's switch (docs/bmv2.md).

sliceportal p4rt shell edge-1              # read-only: a backup session, the switch's P4Info
sliceportal p4rt shell 3 --write           # takes the primary role; audited before it starts
sliceportal p4rt shell edge-1 < cmds.txt   # non-interactive: IPython reads lines from stdin

The command line is built by the p4rt driver plugin (``sliceportal_p4rt.shell``), which knows
its options; this module finds the backend, audits a writing session and hands over.
"""

from __future__ import annotations

import os
import pwd
import socket
import sys
from typing import Annotated, NoReturn

import typer
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from sliceportal.core.db import engine_for, session_scope
from sliceportal.core.dsn import database_url
from sliceportal.drivers.contract import DriverError
from sliceportal.models import Backend
from sliceportal.models.audit import Actor, record, set_actor

app = typer.Typer(help="P4Runtime backends: an operator's p4runtime-shell on the switch (ADR 0003).")

P4RT = "p4rt"


def _fail(message: str, hint: str = "") -> NoReturn:
    typer.echo(f"error: {message}" + (f" ({hint})" if hint else ""), err=True)
    raise typer.Exit(code=2)


def find_backend(session: Session, ref: str) -> Backend:
    """The backend named ``ref``, or whose id it is; refused when the two are different backends."""
    where = Backend.name == ref
    if ref.isdigit():
        where = or_(where, Backend.id == int(ref))
    found = list(session.scalars(select(Backend).where(where).order_by(Backend.id)))
    if not found:
        _fail(f"no backend named or numbered {ref!r}")
    if len(found) > 1:
        _fail(f"{ref!r} is backend {found[0].id}'s name or id and backend {found[1].id}'s: ambiguous")
    return found[0]


def os_user() -> str:
    """Who runs this, as the system knows the uid (not $USER, which the caller sets)."""
    return pwd.getpwuid(os.getuid()).pw_name


@app.command()
def shell(
    backend: Annotated[str, typer.Argument(help="the backend's name or id")],
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="take the primary role to write (audited; the portal's next push takes it back). "
            "Default: a read-only backup session",
        ),
    ] = False,
) -> None:
    """Open p4runtime-shell on a p4rt backend's switch, with the P4Info the switch runs.

    Standard input that is not a terminal is read as the shell's commands, line by line
    (%run -i FILE runs a script with the shell's names)."""
    try:
        from sliceportal_p4rt.shell import shell_session
    except ImportError:
        _fail("the p4rt driver plugin is not installed (package sliceportal-driver-p4rt)")
    url = database_url()
    with session_scope(url) as session:
        b = find_backend(session, backend)
        if b.driver != P4RT:
            _fail(f"backend {b.name!r} (id {b.id}) uses the {b.driver!r} driver: p4runtime-shell speaks P4Runtime only")
        try:
            # write=True connects once to learn the primary's election id: before the audit row,
            # so an unreachable switch leaves no record of a session that never was
            sess = shell_session(b.options, write=write)
        except DriverError as e:
            _fail(f"backend {b.name!r}: {e.message}", e.hint)
        if write:
            set_actor(session, Actor(None, os_user(), "cli"))
            after = {"address": sess.address, "device_id": sess.device_id, "election_id": str(sess.election_id)}
            record(session, "p4rt_shell_write", "backend", b.id, after={**after, "host": socket.gethostname()})
        name, backend_id = b.name, b.id
    engine_for(url).dispose()  # the exec would drop the pooled connections unannounced
    typer.echo(f"backend {name!r} (id {backend_id}): {sess.describe()}", err=True)
    sys.stdout.flush()
    sess.exec()
