"""A private PostgreSQL cluster in a local directory (the embedded default).

Uses the Debian postgresql server binaries the bootstrap installs. initdb and pg_ctl
refuse to run as root, so as root the cluster belongs to the ``postgres`` system user.

Other users of the host must not reach it (docs/security.md "The host"): every connection
authenticates with SCRAM (``scram-sha-256``, local socket and TCP alike) with a random
password kept in ``<root>/password`` (mode 0600, the portal's user), and the socket
directory is private to the cluster's user (0700). A cluster an older version initialised
with ``trust`` is upgraded on start: its role gets a password, pg_hba.conf is rewritten,
the server reloads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

PASSWORD_FILE = "password"
AUTH = "scram-sha-256"
# What start() writes over a trust cluster's pg_hba.conf (initdb writes the same for a new one).
HBA = f"""# sliceportal (core/pgembed.py): every connection proves the password kept beside the
# cluster's data directory; no trust, no peer (the portal may run as another OS user)
local   all   all                  {AUTH}
host    all   all   127.0.0.1/32   {AUTH}
host    all   all   ::1/128        {AUTH}
"""


class EmbeddedPostgresError(RuntimeError):
    pass


def _bindir() -> Path:
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), reverse=True)
    if candidates:
        return candidates[0].parent
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    raise EmbeddedPostgresError(
        "no PostgreSQL server binaries found: run `make bootstrap` (installs Debian's postgresql) "
        "or set DATABASE_URL to an existing server"
    )


@dataclass
class EmbeddedPostgres:
    root: Path  # holds data/, sock/ and the log
    port: int = 54329
    dbname: str = "sliceportal"
    # fsync + synchronous_commit: a committed deployment survives a power cut. Only a
    # throw-away cluster (a test run's) may trade that for speed.
    durable: bool = True
    _password: str | None = field(default=None, init=False, repr=False)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def sock(self) -> Path:
        return self.root / "sock"

    @property
    def password_file(self) -> Path:
        return self.root / PASSWORD_FILE

    def url(self, dbname: str | None = None) -> str:
        # token_urlsafe: nothing in the password needs quoting in a URL
        return (
            f"postgresql+psycopg://{self._user}:{self.password()}@/{dbname or self.dbname}"
            f"?host={self.sock}&port={self.port}"
        )

    def password(self) -> str:
        """The cluster's password, from its 0600 file (refused when others could read it)."""
        if self._password is None:
            try:
                fd = os.open(self.password_file, os.O_RDONLY | os.O_NOFOLLOW)
            except FileNotFoundError:
                raise EmbeddedPostgresError(
                    f"{self.password_file} is missing: start the embedded cluster first (sliceportal run, or "
                    "sliceportal db migrate); if the cluster exists, restore the file from a backup, or stop the "
                    f"cluster and remove {self.root} to start afresh (its data is lost)"
                ) from None
            except OSError as e:
                raise EmbeddedPostgresError(f"{self.password_file}: {e.strerror}") from e
            with os.fdopen(fd) as f:
                st = os.fstat(f.fileno())
                if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
                    raise EmbeddedPostgresError(
                        f"{self.password_file} must belong to uid {os.geteuid()} and be readable by it alone "
                        f"(it is uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}); "
                        f"run: chown {os.geteuid()} {self.password_file} && chmod 600 {self.password_file}"
                    )
                self._password = f.read().strip()
        return self._password

    def _create_password(self) -> str:
        """A new random password in a new 0600 file (O_EXCL|O_NOFOLLOW: never through a link,
        never over a file someone else put there)."""
        password = secrets.token_urlsafe(32)
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(password + "\n")
        self._password = password
        return password

    @contextlib.contextmanager
    def _pwfile(self, password: str) -> Iterator[Path]:
        """The password where initdb (the cluster's user) reads it: in the private socket directory."""
        path = self.sock / f".initdb-pw-{secrets.token_hex(4)}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(password + "\n")
            if os.geteuid() == 0:
                pg = pwd.getpwnam("postgres")
                os.chown(path, pg.pw_uid, pg.pw_gid)
            yield path
        finally:
            path.unlink(missing_ok=True)

    @property
    def _user(self) -> str:
        return "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(_bindir() / args[0]), *args[1:]]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode:
            raise EmbeddedPostgresError(f"{args[0]} failed: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc

    def _own(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            pg = pwd.getpwnam("postgres")
            os.chown(path, pg.pw_uid, pg.pw_gid)

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        # traversable (the cluster's user reaches data/ and sock/ through it), not listable
        os.chmod(self.root, 0o711)
        self._own(self.sock)
        os.chmod(self.sock, 0o700)  # a first-wave cluster left it 0755, its socket 0777
        if not (self.data / "PG_VERSION").exists():
            self._own(self.data)
            password = self.password() if self.password_file.exists() else self._create_password()
            with self._pwfile(password) as pwfile:
                self._run(
                    "initdb",
                    "-D",
                    str(self.data),
                    "-U",
                    self._user,
                    "--auth-local",
                    AUTH,
                    "--auth-host",
                    AUTH,
                    "--pwfile",
                    str(pwfile),
                    "-E",
                    "UTF8",
                    *(() if self.durable else ("--no-sync",)),
                )
        if not self.running():
            sync = "on" if self.durable else "off"
            opts = (
                f"-p {self.port} -k {self.sock} -c listen_addresses='' -c unix_socket_permissions=0700 "
                f"-c fsync={sync} -c synchronous_commit={sync} -c full_page_writes={sync} "
                "-c max_connections=200 -c shared_buffers=256MB"
            )
            self._run(
                "pg_ctl",
                "-D",
                str(self.data),
                "-l",
                str(self.data / "server.log"),
                "-o",
                opts,
                "-w",
                "-t",
                "60",
                "start",
            )
        if self._trusting():
            self._upgrade_from_trust()
        self.create_database(self.dbname)

    def _trusting(self) -> bool:
        hba = (self.data / "pg_hba.conf").read_text()
        return any(line.split()[-1:] == ["trust"] for line in hba.splitlines() if not line.lstrip().startswith("#"))

    def _upgrade_from_trust(self) -> None:
        """A cluster an older version initialised with ``-A trust``: its role gets the password
        (a new one unless the file exists), pg_hba.conf asks every connection for it, reload."""
        import psycopg
        from psycopg import sql

        password = self.password() if self.password_file.exists() else self._create_password()
        with psycopg.connect(
            host=str(self.sock), port=self.port, user=self._user, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute("SET password_encryption = 'scram-sha-256'")
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(self._user), sql.Literal(password)))
            # rewritten in place: the file keeps its owner (the cluster's user) and mode
            (self.data / "pg_hba.conf").write_text(HBA)
            conn.execute("SELECT pg_reload_conf()")
        # the reload is a signal: start() returns once a wrong password is refused (trust takes
        # any; a wrong one, not none, so that PGPASSWORD or ~/.pgpass cannot stand in for it)
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(
                    host=str(self.sock),
                    port=self.port,
                    user=self._user,
                    dbname="postgres",
                    password=f"not-{password}",
                    connect_timeout=5,
                ).close()
            except psycopg.OperationalError:
                break
            if time.monotonic() > deadline:
                raise EmbeddedPostgresError(f"{self.data}: the server did not apply the new pg_hba.conf; restart it")
            time.sleep(0.05)
        log.warning(
            "embedded PostgreSQL in %s: trust authentication replaced by %s (password in %s)",
            self.data,
            AUTH,
            self.password_file,
        )

    def running(self) -> bool:
        cmd = [str(_bindir() / "pg_ctl"), "-D", str(self.data), "status"]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, check=False).returncode == 0

    def create_database(self, name: str, template: str | None = None) -> None:
        import psycopg

        with psycopg.connect(
            host=str(self.sock),
            port=self.port,
            user=self._user,
            password=self.password(),
            dbname="postgres",
            autocommit=True,
        ) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            if not exists:
                tmpl = f' TEMPLATE "{template}"' if template else ""
                conn.execute(f'CREATE DATABASE "{name}"{tmpl}')

    def stop(self) -> None:
        if self.running():
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
