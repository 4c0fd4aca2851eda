"""``sliceportal p4rt shell BACKEND`` (ADR 0003): the backend looked up by name or id in the real
database, a backend of another driver refused by name, and a ``--write`` session audited with the
OS user before the process becomes p4runtime-shell (a real CLI process against the bundled target;
what the shell reads and may write is drivers/p4rt/tests/test_p4runtime_shell.py's subject)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from sliceportal.cli import app
from sliceportal.core.dsn import RESOLVED_ENV
from sliceportal.models import Backend
from sliceportal.models.audit import AuditLog
from sliceportal.p4rt_cli import os_user
from sliceportal_p4rt.driver import Driver
from sliceportal_testbed.processes import RunningTarget

CLASSIFIER = "SlicingIngress.classifier.classifier"


def _backend(session: Session, name: str, driver: str, options: dict[str, object]) -> Backend:
    b = Backend(name=name, driver=driver, options=options)
    session.add(b)
    session.commit()
    return b


def test_only_a_p4rt_backend_named_or_numbered_unambiguously_gets_a_shell(db_url: str, session: Session) -> None:
    xdp = _backend(session, "edge-xdp", "xdp", {})
    _backend(session, str(xdp.id), "p4rt", {})  # named as the other's id
    runner = CliRunner(env={RESOLVED_ENV: db_url})
    for ref, words in (
        ("edge-xdp", f"backend 'edge-xdp' (id {xdp.id}) uses the 'xdp' driver: p4runtime-shell speaks P4Runtime only"),
        ("no-such-backend", "no backend named or numbered 'no-such-backend'"),
        (str(xdp.id), "ambiguous"),
    ):
        r = runner.invoke(app, ["p4rt", "shell", ref])
        assert r.exit_code == 2 and words in r.output, (ref, r.output)
    assert session.scalars(select(AuditLog).where(AuditLog.action == "p4rt_shell_write")).all() == []


def _shell(db_url: str, *args: str, script: str) -> subprocess.CompletedProcess[str]:
    """The command as an operator runs it: a process of its own, which becomes the shell."""
    return subprocess.run(
        [sys.executable, "-c", "from sliceportal.cli import main; main()", "p4rt", "shell", *args],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, RESOLVED_ENV: db_url},
    )


@pytest.mark.needs_p4runtime_shell
def test_a_write_session_is_audited_with_the_os_user_before_the_shell_starts(
    db_url: str, session: Session, start_target: Callable[..., RunningTarget]
) -> None:
    target = start_target("--priority-queues", "8")
    options = {"address": target.address}
    d = Driver(options)
    try:
        d.read_state()  # connecting sets the pipeline: the shell fetches its P4Info from the switch
    finally:
        d.close()
    b = _backend(session, "edge-p4", "p4rt", options)
    count = f"print('ENTRIES', len(list(table_entry['{CLASSIFIER}'].read())))\n"

    read_only = _shell(db_url, "edge-p4", script=count)
    assert read_only.returncode == 0, read_only.stderr
    assert f"backend 'edge-p4' (id {b.id}): " in read_only.stderr and "read-only backup" in read_only.stderr
    assert "ENTRIES 0" in read_only.stdout, read_only.stdout
    assert session.scalars(select(AuditLog).where(AuditLog.action == "p4rt_shell_write")).all() == []

    write = _shell(db_url, str(b.id), "--write", script=count)
    assert write.returncode == 0, write.stderr
    assert "primary (election id " in write.stderr and "ENTRIES 0" in write.stdout, write.stderr + write.stdout
    assert "You are not the primary client" not in write.stdout
    (row,) = session.scalars(select(AuditLog).where(AuditLog.action == "p4rt_shell_write")).all()
    actor = (row.actor, row.via, row.actor_id)
    assert actor == (os_user(), "cli", None) and (row.object_type, row.object_id) == ("backend", b.id)
    assert row.after is not None and row.after["address"] == target.address
    assert f"election id {row.after['election_id']})" in write.stderr  # the id the shell joined with
