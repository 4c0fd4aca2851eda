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

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from sqlalchemy.orm import Session
from starlette._utils import get_route_path  # how Starlette's routes read the path (root_path off)
from starlette.routing import Match
from starlette.types import Scope


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


API_PREFIX = "/api/v1"


class SessionRouter(APIRouter):
    """An ``APIRouter`` of ``ConnectionReleasingRoute``s that, once ``include``d, answers a
    path outside where its routes are with "no match" before trying any of them.

    FastAPI (0.165) tries every route of every included router a request passes on its way
    to the one that matches, and the matching router's again in its handler: ~1 us a route,
    ~100 us a request for a router near the end of the list.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(route_class=ConnectionReleasingRoute, **kwargs)
        self.starts: str | None = None  # what every path of its routes starts with, once included

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if self.starts is not None and not get_route_path(scope).startswith(self.starts):
            return Match.NONE, {}
        return super().matches(scope)


def session_router(**kwargs: Any) -> SessionRouter:
    """Every router of the API is one."""
    return SessionRouter(**kwargs)


def include(app: FastAPI, router: SessionRouter, prefix: str = "") -> None:
    """``app.include_router(router, prefix=prefix)``, the router told the part of its paths
    that holds no parameter (each router is included once, at one prefix)."""
    starts = prefix + router.prefix.split("{", 1)[0]
    assert router.starts in (None, starts), f"{router.prefix} included at two prefixes"
    router.starts = starts
    app.include_router(router, prefix=prefix)
