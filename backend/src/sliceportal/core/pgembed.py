"""A private PostgreSQL cluster in a local directory (the embedded default).

Uses the Debian postgresql server binaries the bootstrap installs. initdb and pg_ctl
refuse to run as root, so as root the cluster belongs to the ``postgres`` system user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


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

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def sock(self) -> Path:
        return self.root / "sock"

    def url(self, dbname: str | None = None) -> str:
        return f"postgresql+psycopg://{self._user}@/{dbname or self.dbname}?host={self.sock}&port={self.port}"

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
        os.chmod(self.root, 0o755)
        self._own(self.sock)
        if not (self.data / "PG_VERSION").exists():
            self._own(self.data)
            self._run("initdb", "-D", str(self.data), "-U", self._user, "-A", "trust", "-E", "UTF8",
                      *(() if self.durable else ("--no-sync",)))
        if self.running():
            return
        sync = "on" if self.durable else "off"
        opts = (f"-p {self.port} -k {self.sock} -c listen_addresses='' -c fsync={sync} "
                f"-c synchronous_commit={sync} -c full_page_writes={sync} "
                "-c max_connections=200 -c shared_buffers=256MB")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.data / "server.log"), "-o", opts,
                  "-w", "-t", "60", "start")
        self.create_database(self.dbname)

    def running(self) -> bool:
        cmd = [str(_bindir() / "pg_ctl"), "-D", str(self.data), "status"]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, check=False).returncode == 0

    def create_database(self, name: str, template: str | None = None) -> None:
        import psycopg

        with psycopg.connect(host=str(self.sock), port=self.port, user=self._user, dbname="postgres",
                             autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            if not exists:
                tmpl = f' TEMPLATE "{template}"' if template else ""
                conn.execute(f'CREATE DATABASE "{name}"{tmpl}')

    def stop(self) -> None:
        if self.running():
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
