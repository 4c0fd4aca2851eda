"""A request's session gives its pooled connection back without a free thread of the shared
pool. Under an open-loop load every thread of that pool can be waiting for a pooled
connection; if returning one needed such a thread, nothing would move until the pool's
30 s timeout (bench api_open_loop found it: 250 requests/s, workers idle, every request
failed)."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import anyio
import anyio.to_thread
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session, sessionmaker
from starlette.requests import Request

import sliceportal.api
from sliceportal.api.deps import get_session
from sliceportal.api.main import create_app
from sliceportal.core.config import Settings
from sliceportal.core.db import autocommit_sessions, session_factory
from sliceportal.models import Role
from tests.factories import login, make_user, tenant_body

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # what uvicorn runs


@pytest.mark.parametrize("method", ["POST", "GET"])
async def test_a_session_closes_while_every_thread_is_busy(db_url: str, method: str) -> None:
    writes = session_factory(db_url)
    app = SimpleNamespace(state=SimpleNamespace(sessionmaker=writes, read_sessionmaker=autocommit_sessions(writes)))
    request = Request({"type": "http", "method": method, "app": app, "headers": []})
    dependency = get_session(request)
    session = await dependency.__anext__()
    session.execute(text("SELECT 1"))  # holds a pooled connection (in a transaction for a write)
    limiter = anyio.to_thread.current_default_thread_limiter()
    limiter.total_tokens = 1
    await limiter.acquire()  # the whole shared pool busy
    try:
        with anyio.fail_after(10), pytest.raises(StopAsyncIteration):
            await dependency.__anext__()  # the request is done: its session closes
    finally:
        limiter.release()
    assert not session.in_transaction()
    assert writes.kw["bind"].pool.checkedout() == 0


def test_answers_validated_after_the_route_hold_no_connection(
    db_url: str, settings: Settings, session: Session
) -> None:
    """One pooled connection and one thread: requests to a ``def`` route whose answer FastAPI
    validates after it (an ORM object as a response model) all complete. Were a read's
    connection held until its session closes, a request waiting for the thread to validate
    would hold the connection the request in that thread waits for (until the pool's
    timeout, then an error)."""
    app = create_app(settings, db_url)
    tiny = sessionmaker(create_engine(db_url, pool_size=1, max_overflow=0, pool_timeout=5), expire_on_commit=False)
    make_user(session, "op", Role.OPERATOR)
    with TestClient(app) as client:
        op = login(client, "op")
        tenant = client.post("/api/v1/tenants", json=tenant_body("red", 1, 1), headers=op).json()
        app.state.sessionmaker, app.state.read_sessionmaker = tiny, autocommit_sessions(tiny)
        assert client.portal is not None
        client.portal.call(_one_thread)

        def read(_: int) -> int:
            return client.get(f"/api/v1/tenants/{tenant['id']}", headers=op).status_code

        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(read, range(32)))
    assert codes == [200] * 32


def _one_thread() -> None:
    anyio.to_thread.current_default_thread_limiter().total_tokens = 1


def test_every_router_of_the_api_is_a_session_router() -> None:
    """The test above holds for every route only if every router makes its routes release."""
    api = Path(sliceportal.api.__file__).parent
    plain = [
        f"{path.relative_to(api)}:{node.lineno}"
        for path in sorted(api.rglob("*.py"))
        if path.name != "routing.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and "APIRouter" in (getattr(node.func, "id", None), getattr(node.func, "attr", None))
    ]
    assert plain == [], f"use api.routing.session_router instead of APIRouter at {plain}"
