"""A request's session gives its pooled connection back without a free thread of the shared
pool. Under an open-loop load every thread of that pool can be waiting for a pooled
connection; if returning one needed such a thread, nothing would move until the pool's
30 s timeout (bench api_open_loop found it: 250 requests/s, workers idle, every request
failed)."""

from __future__ import annotations

from types import SimpleNamespace

import anyio
import anyio.to_thread
import pytest
from sqlalchemy import text
from starlette.requests import Request

from sliceportal.api.deps import get_session
from sliceportal.core.db import autocommit_sessions, session_factory

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
