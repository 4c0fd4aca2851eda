"""Factories: users with known passwords, and API helpers that log them in."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any

import httpx
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.core.security import hash_password
from sliceportal.models import Role, User

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


def wait_until(what: str, check: Callable[[], Any], timeout_s: float = 30.0, poll_s: float = 0.2) -> Any:
    """Poll ``check`` until it returns something truthy (returned); fail naming ``what``.
    ``check`` runs at least once, and once more after the deadline (``timeout_s=0``: now)."""
    deadline = time.monotonic() + timeout_s
    while not (last := check()):
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} within {timeout_s:.0f} s (last: {last!r})")
        time.sleep(poll_s)
    return last


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
    """A server process, once ``ready_url`` answers 200; terminated on exit."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def ready() -> bool:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
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
