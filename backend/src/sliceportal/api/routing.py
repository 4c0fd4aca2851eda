"""The API's routers: a ``def`` route gives its read session's pooled connection back before
its thread is, so that no request holds a connection while it waits for a thread.

FastAPI runs a ``def`` route in the shared thread pool, then validates what it returned in
that pool again (a second hop), and closes the request's session only after that. Between
the two hops the request holds its connection and no thread. Under an open-loop load every
thread could then wait for a connection that only a request waiting for a thread would give
back: nothing moves until the pool's timeout (docs/scale.md; bench api_open_loop found it).
A read's session (autocommit, ``core/db.autocommit_sessions``) has nothing to commit or roll
back, so it can give its connection back the moment the route returns; what the answer
loads lazily while it is validated takes a connection again, from a thread that holds one.
A write's session gives its connection back when the route commits.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute
from sqlalchemy.orm import Session


def release_read_sessions(values: dict[str, Any]) -> None:
    """Give the pooled connection of every read session among a route's arguments back
    (objects it loaded stay usable: these sessions do not expire them)."""
    for value in values.values():
        if isinstance(value, Session) and value.info.get("autocommit") and value.in_transaction():
            value.commit()  # AUTOCOMMIT: nothing is sent; the connection returns to the pool


def _releasing(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(endpoint)  # FastAPI reads the signature and annotations through __wrapped__
    def call(*args: Any, **kwargs: Any) -> Any:
        answer = endpoint(*args, **kwargs)
        # not after an error: the request's end closes the session then, and a commit of a
        # failed session would hide the error behind its own
        release_read_sessions(kwargs)
        return answer

    return call


class ConnectionReleasingRoute(APIRoute):
    """A route whose ``def`` endpoint releases its read session's connection in its own thread."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint):
            endpoint = _releasing(endpoint)
        super().__init__(path, endpoint, **kwargs)


def session_router(**kwargs: Any) -> APIRouter:
    """An ``APIRouter`` of ``ConnectionReleasingRoute``s: every router of the API is one."""
    return APIRouter(route_class=ConnectionReleasingRoute, **kwargs)
