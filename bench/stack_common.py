"""The real stack for API benchmarks: a private PostgreSQL with an operator, the API served
by uvicorn in its own process, and a logged-in client's headers."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

from sliceportal.core.migrate import upgrade
from sliceportal.core.pgembed import EmbeddedPostgres
from sliceportal.core.security import hash_password
from sliceportal_testbed.processes import free_port

USER, PASSWORD = "bench", "bench-password"


@dataclass(frozen=True)
class Stack:
    pg: EmbeddedPostgres
    base: str
    headers: dict[str, str]
    server_pid: int = 0  # the uvicorn process (the parent of its workers when there are several)

    def sql(self, statement: str, params: tuple[object, ...] = ()) -> None:
        with psycopg.connect(
            host=str(self.pg.sock),
            port=self.pg.port,
            user="postgres",
            password=self.pg.password(),
            dbname=self.pg.dbname,
            autocommit=True,
        ) as conn:
            conn.execute(statement, params)  # type: ignore[arg-type]


@contextmanager
def stack(server_code: str | None = None, prepare_sql: tuple[str, ...] = ()) -> Iterator[Stack]:
    """``server_code``: Python run as the server process instead of plain uvicorn (it gets
    ``PORT`` in its environment); ``prepare_sql`` runs before the server starts."""
    with database(prepare_sql) as pg, serve(pg, server_code=server_code) as st:
        yield st


@contextmanager
def database(prepare_sql: tuple[str, ...] = ()) -> Iterator[EmbeddedPostgres]:
    """A private, migrated PostgreSQL with the bench operator; ``prepare_sql`` runs in it."""
    root = Path(tempfile.mkdtemp(prefix="sliceportal-bench-"))
    pg = EmbeddedPostgres(root, port=free_port(), dbname="bench")
    pg.start()
    try:
        upgrade(pg.url())
        with psycopg.connect(
            host=str(pg.sock), port=pg.port, user="postgres", password=pg.password(), dbname="bench", autocommit=True
        ) as c:
            c.execute(
                "INSERT INTO user_account (username, password_hash, role, full_name, is_active, version) "
                "VALUES (%s, %s, 'operator', '', true, 1)",
                (USER, hash_password(PASSWORD)),
            )
            for statement in prepare_sql:
                c.execute(statement)  # type: ignore[arg-type]
        yield pg
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def demo_database(users_per_slice: int) -> Iterator[str]:
    """``database()`` holding the demo data (``seed_demo``, ``users_per_slice`` subscribers a
    slice); its URL."""
    from sliceportal.core.db import session_factory
    from sliceportal.services.bootstrap_data import seed_demo

    with database() as pg:
        url = pg.url()
        with session_factory(url)() as session:
            seed_demo(session, users_per_slice=users_per_slice)
        yield url


@contextmanager
def serve(pg: EmbeddedPostgres, *, workers: int = 1, server_code: str | None = None) -> Iterator[Stack]:
    """The API over ``pg``: uvicorn with ``workers`` processes (or ``server_code``), logged in.
    Reconcile loops off (``RECONCILE_INTERVAL_S=0``), no testbed: the requests are all it serves."""
    port = free_port()
    argv = (
        [sys.executable, "-c", server_code]
        if server_code
        else [
            sys.executable,
            "-m",
            "uvicorn",
            "sliceportal.asgi:app",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--workers",
            str(workers),
        ]
    )
    server = subprocess.Popen(
        argv,
        env={
            **os.environ,
            "DATABASE_URL": pg.url(),
            "RECONCILE_INTERVAL_S": "0",
            "SECRET_KEY": secrets.token_urlsafe(32),
            "PORT": str(port),
        },
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/api/v1/health", timeout=30).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        # argon2 at login takes seconds on a loaded 2-core machine: more than httpx's default 5 s
        token = httpx.post(
            f"{base}/api/v1/login/access-token", timeout=60, data={"username": USER, "password": PASSWORD}
        ).json()["access_token"]
        yield Stack(pg, base, {"Authorization": f"Bearer {token}"}, server.pid)
    finally:
        server.terminate()
        server.wait(timeout=20)


# seed 000 Table 2's services as aligned port ranges: q0..q3 on lanes 0, 2, 4, 6, ports 5000-5007, ...
TABLE2_SERVICES = [
    {"name": f"q{i}", "lane": lane, "dst_ports": [{"lo": 5000 + 8 * i, "hi": 5007 + 8 * i}]}
    for i, lane in enumerate([0, 2, 4, 6])
]
# the scale benches' tenant and its subscribers (250 to a /24, as an operator imports them)
SCALE_TENANT = {"name": "scale", "vni": 3001, "vlan": 300}


def scale_subscribers(users: Iterable[int]) -> list[str]:
    return [f"00130{u:010d},10.50.{u // 250}.{u % 250 + 1},{u + 1},scale,embb" for u in users]


class InProcessPortal:
    """The whole portal in this process (its ASGI app through a TestClient, a private
    PostgreSQL, the real drivers), logged in as an operator: for benches that measure what
    a deploy does rather than HTTP (``call`` answers the JSON or raises with the problem)."""

    def __init__(self, **settings: Any) -> None:
        from fastapi.testclient import TestClient

        from sliceportal.api.main import create_app
        from sliceportal.core.config import Settings, random_secret
        from sliceportal.core.db import session_factory
        from sliceportal.models import Role, User

        self.root = Path(tempfile.mkdtemp(prefix="bench-portal-pg-"))  # its own: the server runs as postgres
        self.pg = EmbeddedPostgres(self.root, port=free_port(), dbname="bench", durable=False)
        self.pg.start()
        self.url = self.pg.url("bench")
        upgrade(self.url)
        self.sessions = session_factory(self.url)
        with self.sessions() as s:
            s.add(User(username=USER, password_hash=hash_password(PASSWORD), role=Role.OPERATOR))
            s.commit()
        app = create_app(Settings(secret_key=random_secret(), reconcile_interval_s=0, **settings), self.url)
        self.client = TestClient(app)
        self.client.__enter__()
        tok = self.client.post("/api/v1/login/access-token", data={"username": USER, "password": PASSWORD}).json()
        self.h = {"Authorization": f"Bearer {tok['access_token']}"}

    def call(self, method: str, path: str, **kw: Any) -> Any:
        r = self.client.request(method, f"/api/v1{path}", headers=self.h, **kw)
        if r.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {r.status_code} {r.text[:500]}")
        return r.json() if r.content else None

    def p4rt_backends(self, addresses: list[str], name: str, **options: Any) -> list[int]:
        """A p4rt backend per address, named ``name.format(index)``, ``options`` beside the
        address; their ids."""
        return [
            self.call(
                "POST",
                "/backends",
                json={"name": name.format(i), "driver": "p4rt", "options": {"address": a, **options}},
            )["id"]
            for i, a in enumerate(addresses)
        ]

    def embb_slice(self, tenant: dict[str, Any], sla: dict[str, float], backend_ids: list[int]) -> int:
        """The tenant ``tenant`` (name, vni, vlan) and its Flexible Slice "embb" of seed 000
        Table 2's services and ``sla`` on ``backend_ids``; the slice's id."""
        t = self.call("POST", "/tenants", json=tenant)["id"]
        types = self.call("GET", "/slice-types", params={"limit": 100})["data"]
        body = {
            "name": "embb",
            "tenant_id": t,
            "slice_type_id": next(x["id"] for x in types if x["name"] == "Flexible Slice"),
            "sla": sla,
            "services": TABLE2_SERVICES,
            "backend_ids": backend_ids,
        }
        return int(self.call("POST", "/slices", json=body)["id"])

    def import_subscribers(self, rows: Iterable[str]) -> None:
        """Import subscriber CSV ``rows`` (imsi,ue_ip,teids,tenant,slices)."""
        csv = "imsi,ue_ip,teids,tenant,slices\n" + "".join(f"{row}\n" for row in rows)
        self.call("POST", "/subscribers/import", files={"file": ("s.csv", csv.encode(), "text/csv")})

    def close(self) -> None:
        from sliceportal.services.backends import POOL

        self.client.__exit__(None, None, None)  # the app's shutdown ends its fan-out lanes
        POOL.close_all()
        self.pg.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of ``pid`` and its children that are alive (uvicorn's workers)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(c) for c in children.read_text().split()]
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def machine_busy_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, all cores (/proc/stat: idle and
    iowait are not busy); the difference of two readings says how busy the machine was."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal
    return (total - fields[3] - fields[4]) / tick, total / tick
