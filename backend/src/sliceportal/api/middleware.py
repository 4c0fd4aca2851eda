"""Cross-cutting protections of every response and request, as plain ASGI middleware.

- security headers (CSP, frame denial, no MIME sniffing, referrer policy) on every response;
- a size limit on request bodies (larger uploads for CSV imports), enforced while reading,
  so a client that lies about Content-Length or streams chunks is cut off too (413);
- the request's backend policy (allowed networks, run directory) for option validation;
- a 400 for a path with control characters (a NUL: ``/index.html%00.png``), which no route
  or file name holds and which the file system refuses with an exception, not an answer.
"""

from __future__ import annotations

import json
import re

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sliceportal.api.errors import PROBLEM_JSON
from sliceportal.core.config import Settings
from sliceportal.schemas.backends import BACKEND_POLICY, BackendPolicy

# The built SPA loads only its own scripts; no inline script, eval, plugin or framing.
# Inline *styles* are allowed: Mantine writes its CSS variables into a <style> element and
# uPlot positions with style attributes; style injection cannot run code.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
]
UPLOAD_SUFFIXES = ("/import",)  # endpoints that take a file (CSV) rather than a JSON body


class BodyTooLarge(HTTPException):
    """An HTTPException, so that FastAPI passes it through its body parsing as a 413 problem
    (rather than wrapping it as "error parsing the body")."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"Payload too large: the request body exceeds {limit} bytes")


class SecurityMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app, self.settings = app, settings
        self.policy = BackendPolicy.of(settings)

    def _limit(self, path: str) -> int:
        s = self.settings
        return s.max_upload_bytes if path.endswith(UPLOAD_SUFFIXES) else s.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        BACKEND_POLICY.set(self.policy)
        if _MALFORMED.search(scope["path"]):
            await _problem(scope, send, 400, "Bad request", "the path holds a control character", "path")
            return
        limit = self._limit(scope["path"])
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                present = {k.lower() for k, _ in message.get("headers", [])}
                # a route may set its own (the API docs page needs another CSP)
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._too_large(scope, send_with_headers, limit)
            return
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        try:
            await self.app(scope, counting_receive, send_with_headers)
        except BodyTooLarge:
            if not started:
                await self._too_large(scope, send_with_headers, limit)

    @staticmethod
    async def _too_large(scope: Scope, send: Send, limit: int) -> None:
        await _problem(
            scope,
            send,
            413,
            "Payload too large",
            f"the request body exceeds {limit} bytes",
            "body",
            f"at most {limit} bytes",
        )


_MALFORMED = re.compile(r"[\x00-\x1f\x7f]")


async def _problem(
    scope: Scope, send: Send, status: int, title: str, detail: str, field: str, message: str | None = None
) -> None:
    """A problem+json answer from the middleware itself (before any route ran)."""
    instance = _MALFORMED.sub("\N{REPLACEMENT CHARACTER}", scope["path"])
    body = json.dumps(
        {
            "type": "about:blank",
            "title": title,
            "status": status,
            "detail": detail,
            "instance": instance,
            "errors": [{"field": field, "message": message or detail, "line": None}],
        }
    ).encode()
    headers = [
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
        *SECURITY_HEADERS,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
