"""Factories: users with known passwords, and API helpers that log them in."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any

import httpx
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.core.security import hash_password
from sliceportal.models import Backend, Role, User
from sliceportal_testbed.processes import free_port

if TYPE_CHECKING:
    from sliceportal.control.controller import Controller
    from sliceportal.core.config import Settings

PASSWORD = "correct horse battery"


@cache
def _password_hash() -> str:
    # one real argon2 hash for every test user: hashing takes 0.2 s here, and the suite makes
    # hundreds of users (logging in still verifies against it, as in production)
    return hash_password(PASSWORD)


def make_user(session: Session, username: str, role: Role, tenant_id: int | None = None) -> User:
    user = User(username=username, password_hash=_password_hash(), role=role, tenant_id=tenant_id)
    session.add(user)
    session.commit()
    return user


def login(client: TestClient, username: str, password: str = PASSWORD) -> dict[str, str]:
    r = client.post("/api/v1/login/access-token", data={"username": username, "password": password})
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


def tenant_body(name: str = "mvno-a", vni: int = 5001, vlan: int | None = 100, **extra: Any) -> dict[str, Any]:
    # UE pools may not overlap across tenants: only the default tenant gets the 10.45/16 pool
    pool = {"ue_pool": "10.45.0.0/16"} if vni == 5001 else {}
    return {"name": name, "vni": vni, "vlan": vlan, **pool, **extra}


def slice_type_id(client: TestClient, headers: dict[str, str], name: str) -> int:
    r = client.get("/api/v1/slice-types", params={"q": name, "limit": 100}, headers=headers)
    return next(t["id"] for t in r.json()["data"] if t["name"] == name)


def integrator_key(
    client: TestClient,
    session: Session,
    headers: dict[str, str],
    scopes: list[str],
    tenant_id: int | None = None,
    username: str = "integrator",
) -> dict[str, str]:
    """A new integrator's API key of ``scopes`` (bound to ``tenant_id`` if given), granted by
    the operator of ``headers``; the request headers that present it."""
    integ = make_user(session, username, Role.INTEGRATOR)
    body = {"name": f"{username}-key", "scopes": scopes, "user_id": integ.id, "tenant_id": tenant_id}
    r = client.post("/api/v1/api-keys", json=body, headers=headers)
    assert r.status_code == 201, r.text
    return {"X-API-Key": r.json()["secret"]}


# ---- the API calls that set a world up (each asserts its answer) ----------------------------

SUBSCRIBERS_HEADER = "imsi,ue_ip,teids,tenant,slices\n"


def add_backend(
    client: TestClient, headers: dict[str, str], name: str, options: dict[str, Any], driver: str = "p4rt", **fields: Any
) -> dict[str, Any]:
    """Register a backend (``fields``: link_bps, port_bps, accept_unenforced, ...); its JSON."""
    r = client.post(
        "/api/v1/backends", json={"name": name, "driver": driver, "options": options, **fields}, headers=headers
    )
    assert r.status_code == 201, r.text
    return dict(r.json())


def idle_backend(
    client: TestClient, headers: dict[str, str], options: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    """A p4rt backend whose data plane is not running (registering it, admission control and
    previews need none): a name of its own, an address nothing listens on; its JSON."""
    address = f"127.0.0.1:{free_port()}"
    return add_backend(client, headers, f"bmv2-{free_port()}", {"address": address, **(options or {})}, **fields)


def add_tenant(client: TestClient, headers: dict[str, str], *args: Any, **kwargs: Any) -> int:
    """A tenant of ``tenant_body(*args, **kwargs)``; its id."""
    r = client.post("/api/v1/tenants", json=tenant_body(*args, **kwargs), headers=headers)
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def add_slice(
    client: TestClient,
    headers: dict[str, str],
    tenant_id: int,
    name: str = "embb",
    slice_type: str = "Flexible Slice",
    **fields: Any,
) -> int:
    """A slice of the catalogue's ``slice_type`` (``fields``: sla, services, backend_ids, ...); its id."""
    body = {"name": name, "tenant_id": tenant_id, "slice_type_id": slice_type_id(client, headers, slice_type)}
    r = client.post("/api/v1/slices", json=body | fields, headers=headers)
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def table2_services() -> list[dict[str, Any]]:
    """Seed 000 Table 2's services as aligned port ranges: q0..q3 on lanes 0, 2, 4, 6, ports
    5000-5007, 5008-5015, 5016-5023, 5024-5031."""
    return [
        {"name": f"q{i}", "lane": lane, "dst_ports": [{"lo": 5000 + 8 * i, "hi": 5007 + 8 * i}]}
        for i, lane in enumerate([0, 2, 4, 6])
    ]


def ue_rows(users: Iterable[int], slice_name: str = "embb", tenant: str = "mvno-a") -> list[str]:
    """Subscriber CSV rows: UE ``u`` is IMSI 00101<u, 10 digits>, address 10.45.0.<u>, TEID u + 1."""
    return [f"00101{u:010d},10.45.0.{u},{u + 1},{tenant},{slice_name}" for u in users]


EMBB_SLA = {"rate_limit_mbps": 48, "max_delay_ms": 20, "ecn_delay_ms": 5}


def embb_slice(client: TestClient, headers: dict[str, str], backend_ids: list[int], users: int) -> int:
    """Tenant mvno-a and its Flexible Slice "embb" (EMBB_SLA, seed 000 Table 2's services) on
    ``backend_ids``, with ``users`` UEs (``ue_rows``); the slice's id."""
    t = add_tenant(client, headers)
    sid = add_slice(client, headers, t, sla=EMBB_SLA, services=table2_services(), backend_ids=backend_ids)
    import_subscribers(client, headers, ue_rows(range(users)))
    return sid


DUAL = "Dual Best Effort + Low Latency"


def red_and_blue(
    client: TestClient, session: Session, headers: dict[str, str], sla: dict[str, float]
) -> dict[str, tuple[int, int]]:
    """Tenants red (VNI 1, VLAN 1) and blue (2, 2), each with a DUAL slice "<tenant>-s" of
    ``sla``, and user red-view of tenant red; (tenant id, slice id) by tenant name."""
    ids = {}
    for name, vni, vlan in (("red", 1, 1), ("blue", 2, 2)):
        t = add_tenant(client, headers, name, vni, vlan)
        ids[name] = (t, add_slice(client, headers, t, f"{name}-s", DUAL, sla=sla))
    make_user(session, "red-view", Role.TENANT, tenant_id=ids["red"][0])
    return ids


def backend_row(session: Session, name: str = "xdp-a", driver: str = "xdp") -> int:
    """A backend written straight to the database, no data plane behind it (stored KPIs and
    SLA checks need none); its id."""
    backend = Backend(name=name, driver=driver)
    session.add(backend)
    session.commit()
    return backend.id


def import_subscribers(client: TestClient, headers: dict[str, str], rows: Iterable[str]) -> dict[str, Any]:
    """Import CSV ``rows`` (below SUBSCRIBERS_HEADER); the import's JSON."""
    csv = SUBSCRIBERS_HEADER + "".join(f"{row}\n" for row in rows)
    r = client.post("/api/v1/subscribers/import", files={"file": ("s.csv", csv.encode(), "text/csv")}, headers=headers)
    assert r.status_code == 201, r.text
    return dict(r.json())


def deploy_backend(client: TestClient, headers: dict[str, str], backend_id: int) -> dict[str, Any]:
    """Deploy a backend's rule set (answered 201: the push ran, whatever its outcome); the deployment."""
    r = client.post(f"/api/v1/backends/{backend_id}/deployments", headers=headers)
    assert r.status_code == 201, r.text
    return dict(r.json())


def wait_until(what: str, check: Callable[[], Any], timeout_s: float = 30.0, poll_s: float = 0.2) -> Any:
    """Poll ``check`` until it returns something truthy (returned); fail naming ``what``.
    ``check`` runs at least once, and once more after the deadline (``timeout_s=0``: now)."""
    deadline = time.monotonic() + timeout_s
    while not (last := check()):
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} within {timeout_s:g} s (last: {last!r})")
        time.sleep(poll_s)
    return last


def seconds_until(what: str, check: Callable[[], Any], timeout_s: float, poll_s: float = 0.05) -> float:
    """``wait_until``, answering how long it waited."""
    started = time.monotonic()
    wait_until(what, check, timeout_s, poll_s)
    return time.monotonic() - started


def live_testbed_settings(tag: str, rate_pps: int, **more: Any) -> Settings:
    """A portal's settings with the live testbed at ``rate_pps``, its kernel objects named
    ``<tag><pid>-`` (``.testbed_prefix``), the reconcile loop off unless ``more`` says."""
    from sliceportal.core.config import Settings, random_secret

    fields: dict[str, Any] = {"reconcile_interval_s": 0, **more}
    prefix = f"{tag}{os.getpid() % 10000}-"
    return Settings(
        secret_key=random_secret(), testbed=True, testbed_rate_pps=rate_pps, testbed_prefix=prefix, **fields
    )


@contextmanager
def running_controller(
    settings: Settings, db_url: str, ready_timeout_s: float = 300.0, period_s: float | None = None
) -> Iterator[Controller]:
    """A controller beside the app under test, as ``sliceportal run`` starts one beside the
    API workers (the app starts no loop and no testbed itself): it takes the lease of the
    test's own database at once, and is ready when its loops and (``settings.testbed``) the
    testbed run; on exit it stops them (the testbed leaves no namespace)."""
    from sliceportal.control.controller import Controller

    controller = Controller(settings, db_url, period_s=period_s)
    with controller:
        if not controller.wait_ready(ready_timeout_s):
            raise AssertionError(f"the controller did not lead with its duties started within {ready_timeout_s:.0f} s")
        yield controller


@contextmanager
def serving(what: str, argv: list[str], ready_url: str, timeout_s: float = 60) -> Iterator[subprocess.Popen[bytes]]:
    """A server process, once ``ready_url`` answers 200; terminated on exit. Its stderr goes to
    a file (a pipe nobody reads would stall a server that logs much), quoted if it exits early."""
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)

        def ready() -> bool:
            if proc.poll() is not None:
                stderr.seek(0)
                err = stderr.read().decode(errors="replace")
                raise AssertionError(f"{what} exited with {proc.returncode}: {err[-2000:]}")
            try:
                return httpx.get(ready_url, timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        try:
            wait_until(f"{what} serves", ready, timeout_s=timeout_s)
            yield proc
        finally:
            proc.terminate()
            proc.wait(timeout=20)


# An API worker: the same app factory under uvicorn in a process of its own, on the test's database.
API_WORKER = """
import sys, uvicorn
from sliceportal.api.main import create_app
from sliceportal.core.config import Settings
app = create_app(Settings(secret_key=sys.argv[1], reconcile_interval_s=0), sys.argv[2])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[3]), log_level="warning", timeout_graceful_shutdown=1)
"""


@contextmanager
def api_worker(db_url: str, settings: Settings) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A real API worker process serving ``db_url``, as ``sliceportal run`` starts N of them:
    (the process, its base URL) once it serves; terminated on exit (if still alive)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-c", API_WORKER, settings.secret_key, db_url, str(port)]
    # its imports alone take ~7 s at load 7 on 2 cores; 60 s was once not enough under a full run
    with serving("the API worker", argv, f"{base}/api/v1/health", timeout_s=120) as proc:
        yield proc, base
