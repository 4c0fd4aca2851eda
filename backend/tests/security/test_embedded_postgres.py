"""The embedded PostgreSQL cluster against other users of the host (issue #27): SCRAM for every
connection with a password only the portal's user reads, a socket directory private to the
cluster's user, and a first-wave cluster (``initdb -A trust``) upgraded when it starts."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from sliceportal.core.pgembed import EmbeddedPostgres, EmbeddedPostgresError
from sliceportal_testbed.processes import free_port


def _connect(pg: EmbeddedPostgres, password: str | None, dbname: str = "postgres") -> psycopg.Connection:
    return psycopg.connect(
        host=str(pg.sock),
        port=pg.port,
        user=pg._user,
        dbname=dbname,
        autocommit=True,
        connect_timeout=5,
        **({"password": password} if password is not None else {}),
    )


def _cluster_uid() -> int:
    return pwd.getpwnam("postgres").pw_uid if os.geteuid() == 0 else os.geteuid()


def _refused_without_password(pg: EmbeddedPostgres) -> str:
    with pytest.raises(psycopg.OperationalError) as e:
        _connect(pg, None).close()
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        _connect(pg, "not-the-password").close()
    return str(e.value)


def test_a_connection_without_the_password_is_refused(pg: EmbeddedPostgres) -> None:
    assert "password" in _refused_without_password(pg)
    with _connect(pg, pg.password()) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        # the role's secret is a SCRAM verifier, never the password itself
        verifier = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = current_user").fetchone()
        assert verifier is not None and str(verifier[0]).startswith("SCRAM-SHA-256$")


def test_socket_directory_and_password_file_are_private(pg: EmbeddedPostgres) -> None:
    sock = pg.sock.lstat()
    assert stat.S_ISDIR(sock.st_mode) and stat.S_IMODE(sock.st_mode) == 0o700 and sock.st_uid == _cluster_uid()
    pw = pg.password_file.lstat()
    assert stat.S_ISREG(pw.st_mode) and stat.S_IMODE(pw.st_mode) == 0o600 and pw.st_uid == os.geteuid()
    assert pg.password() not in pg.password_file.parent.joinpath("data", "pg_hba.conf").read_text()


@pytest.mark.needs_root
def test_another_local_user_cannot_reach_the_socket(pg: EmbeddedPostgres) -> None:
    from sliceportal.core.pgembed import _bindir

    psql = [str(_bindir() / "psql"), "-h", str(pg.sock), "-p", str(pg.port), "-U", "postgres", "-w", "-c", "SELECT 1"]
    out = subprocess.run(
        ["runuser", "-u", "nobody", "--", *psql], capture_output=True, text=True, timeout=60, check=False, cwd="/"
    )
    assert out.returncode != 0 and f'socket "{pg.sock}/.s.PGSQL.{pg.port}" failed: Permission denied' in out.stderr, (
        out.stderr[-400:]
    )


def test_a_password_file_others_can_read_is_refused(tmp_path: Path) -> None:
    pg = EmbeddedPostgres(tmp_path)
    pg.password_file.write_text("secret\n")
    os.chmod(pg.password_file, 0o644)
    with pytest.raises(EmbeddedPostgresError, match="chmod 600"):
        pg.password()
    with pytest.raises(EmbeddedPostgresError, match="is missing: start the embedded cluster first"):
        EmbeddedPostgres(tmp_path / "none").password()


@pytest.fixture
def old_cluster() -> Iterator[EmbeddedPostgres]:
    # not under pytest's tmp dir: that is private to root, and the server runs as postgres
    root = Path(tempfile.mkdtemp(prefix="sliceportal-test-pgold-"))
    old = EmbeddedPostgres(root, port=free_port(), dbname="kept", durable=False)
    try:
        yield old
    finally:
        old.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_a_first_wave_trust_cluster_is_upgraded_and_keeps_its_data(old_cluster: EmbeddedPostgres) -> None:
    old = old_cluster
    # the cluster as the first wave left it: trust for everyone, a world-open socket directory
    os.chmod(old.root, 0o755)
    old._own(old.sock)
    old._own(old.data)
    os.chmod(old.sock, 0o755)
    old._run("initdb", "-D", str(old.data), "-U", old._user, "-A", "trust", "-E", "UTF8", "--no-sync")
    old._run(
        "pg_ctl",
        "-D",
        str(old.data),
        "-l",
        str(old.data / "server.log"),
        "-w",
        "-t",
        "60",
        "-o",
        f"-p {old.port} -k {old.sock} -c listen_addresses='' -c fsync=off",
        "start",
    )
    with _connect(old, None) as conn:  # anyone could
        conn.execute('CREATE DATABASE "kept"')
    with _connect(old, None, "kept") as conn:
        conn.execute("CREATE TABLE t (v int); INSERT INTO t VALUES (42)")
    old.stop()  # as `make run` leaves it at exit

    new = EmbeddedPostgres(old.root, port=old.port, dbname="kept", durable=False)
    new.start()
    _refused_without_password(new)
    with _connect(new, new.password(), "kept") as conn:
        assert conn.execute("SELECT v FROM t").fetchall() == [(42,)]
    assert stat.S_IMODE(new.sock.stat().st_mode) == 0o700
    assert stat.S_IMODE(new.password_file.stat().st_mode) == 0o600
    assert not new._trusting()
    # a second start finds nothing to upgrade and the same password
    password = new.password()
    again = EmbeddedPostgres(old.root, port=old.port, dbname="kept", durable=False)
    again.start()
    assert again.password() == password
