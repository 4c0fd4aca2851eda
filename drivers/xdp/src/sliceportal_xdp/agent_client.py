"""The XDP driver's side of the agent: contract calls over HTTP, agent errors back into
the contract's error types.

Retries (tenacity) cover only what cannot have reached the agent (connection refused or
reset before a request was sent: an agent restarting) and, for reads, timeouts; an apply
that timed out is not repeated blindly: the reconciler's read-back decides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError
from tenacity import Retrying, retry, retry_if_exception_type, stop_after_delay, wait_exponential, wait_fixed

from sliceportal.drivers.contract import (
    ApplyResult,
    Capabilities,
    Counters,
    DataPlaneState,
    DriverError,
    Health,
    NativePlan,
    OptionsError,
    ProgressCallback,
    PushError,
    UnreachableError,
)

from .agent_api import API, AgentHealth, Applied, EgressBudget, Ok, Overload, Problem
from .options import XdpOptions

M = TypeVar("M", bound=BaseModel)
APPLY_TIMEOUT_S = 120.0

# an agent restarting (kill -9, new process re-adopting the pins) is back within seconds
_NOT_SENT = (httpx.ConnectError, httpx.RemoteProtocolError)
_READ_RETRY = (*_NOT_SENT, httpx.ReadTimeout)


def _error(p: Problem) -> DriverError:
    if p.kind == "push":
        return PushError(p.detail, rolled_back=bool(p.rolled_back), hint=p.hint)
    if p.kind in ("unreachable", "abi"):
        return UnreachableError(p.detail, hint=p.hint)
    if p.kind == "options":
        return OptionsError(p.detail, hint=p.hint)
    return DriverError(p.detail, hint=p.hint)


def _timeout_kind(e: httpx.TimeoutException) -> str:
    return {
        httpx.ConnectTimeout: "connecting",
        httpx.ReadTimeout: "reading",
        httpx.WriteTimeout: "sending",
        httpx.PoolTimeout: "waiting for a connection",
    }.get(type(e), "timeout")


class AgentClient:
    def __init__(self, address: str, token: str, timeout_s: float, retry_s: float = 10.0) -> None:
        """``address``: tcp:HOST:PORT, HOST:PORT, unix:/PATH.sock, or an http:// URL."""
        self._uds = address.removeprefix("unix:") if address.startswith("unix:") else None
        if self._uds is not None:
            self.url, self._base = f"unix:{self._uds}", "http://agent" + API
        else:
            hostport = address.removeprefix("tcp:")
            self.url = (hostport if "://" in hostport else f"http://{hostport}").rstrip("/")
            self._base = self.url + API
        self._token, self._timeout_s = token, timeout_s
        self._http: httpx.Client | None = None
        wait = wait_exponential(multiplier=0.1, max=1.0)
        stop = stop_after_delay(retry_s)
        self._send_read = retry(retry=retry_if_exception_type(_READ_RETRY), wait=wait, stop=stop, reraise=True)(
            self._request
        )
        self._send_write = retry(retry=retry_if_exception_type(_NOT_SENT), wait=wait, stop=stop, reraise=True)(
            self._request
        )

    def _request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        if self._http is None:  # first use, or used again after close() (as an in-process driver reloads)
            self._http = httpx.Client(
                base_url=self._base,
                transport=httpx.HTTPTransport(uds=self._uds),
                headers={"Authorization": f"Bearer {self._token}"},
                timeout=httpx.Timeout(self._timeout_s, connect=min(self._timeout_s, 3.0)),
            )
        return self._http.request(method, path, **kw)

    @classmethod
    def from_options(cls, o: XdpOptions) -> AgentClient:
        assert o.address is not None and o.agent_token is not None  # checked by XdpOptions
        return cls(o.address, o.agent_token, o.agent_timeout_s)

    def _call(
        self,
        method: str,
        path: str,
        model: type[M],
        body: BaseModel | None = None,
        read_timeout_s: float | None = None,
        retry: bool = True,
    ) -> M:
        send = self._request if not retry else self._send_read if method == "GET" else self._send_write
        content = body.model_dump_json() if body is not None else None
        headers = {"Content-Type": "application/json"} if content is not None else None
        kw: dict[str, Any] = {}
        if read_timeout_s is not None:
            kw["timeout"] = httpx.Timeout(read_timeout_s, connect=min(self._timeout_s, 3.0))
        # Errors in our words: nothing the remote side sent is quoted back (#27) -- httpx's
        # protocol errors and pydantic's carry the reply's bytes, and a backend's health would
        # tell whoever registers one what any port of the backend networks answers.
        try:
            r = send(method, path, content=content, headers=headers, **kw)
        except httpx.TimeoutException as e:
            raise UnreachableError(
                f"the XDP agent at {self.url} did not answer {method} {path} within "
                f"{read_timeout_s or self._timeout_s:g} s ({_timeout_kind(e)})",
                hint="check the agent's health; a push is confirmed by the next read-back",
            ) from e
        except httpx.ConnectError as e:
            raise UnreachableError(
                f"cannot reach the XDP agent at {self.url}: connection refused or no route",
                hint="is the agent running?",
            ) from e
        except (httpx.RemoteProtocolError, httpx.LocalProtocolError, httpx.DecodingError) as e:
            raise self._mismatch(f"{method} {path} got no HTTP reply") from e
        except httpx.HTTPError as e:
            raise UnreachableError(
                f"cannot reach the XDP agent at {self.url}: {type(e).__name__}", hint="is the agent running?"
            ) from e
        if r.status_code >= 400:
            try:
                problem = Problem.model_validate_json(r.content)
            except ValidationError:
                raise self._mismatch(f"{method} {path} got an HTTP error without the agent's problem body") from None
            if r.status_code in (401, 403):
                raise OptionsError(
                    f"the XDP agent at {self.url} refused the token", hint="set agent_token to the agent's token"
                )
            raise _error(problem)
        try:
            return model.model_validate_json(r.content)
        except ValidationError as e:
            raise self._mismatch(f"the answer to {method} {path} is not the agent's {model.__name__}") from e

    def _mismatch(self, what: str) -> UnreachableError:
        return UnreachableError(
            f"protocol mismatch: what answers at {self.url} is not an XDP agent ({what})",
            hint="check the backend's address: it must be a sliceportal XDP agent",
        )

    # ---- the contract ------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        # Not cached: an agent restarted with other options (--replace) has other capacities.
        # Not retried: it is asked while an operator registers the backend (who should hear
        # "unreachable" at once, not after 10 s) and before a push (which the reconcile and
        # the operator retry with fresh state anyway).
        return self._call("GET", "/capabilities", Capabilities, retry=False)

    def apply(self, plan: NativePlan, progress: ProgressCallback) -> ApplyResult:
        # a large push on a loaded host, or one queued behind another push, outlasts a read
        applied = self._call("POST", "/apply", Applied, plan, read_timeout_s=max(self._timeout_s, APPLY_TIMEOUT_S))
        for event in applied.events:
            progress(event)
        return applied.result

    def read_state(self) -> DataPlaneState:
        return self._call("GET", "/state", DataPlaneState)

    def counters(self) -> Counters:
        return self._call("GET", "/counters", Counters)

    def agent_health(self, retry: bool = True) -> AgentHealth:
        return self._call("GET", "/health", AgentHealth, retry=retry)

    def wait_ready(self, timeout_s: float, check: Callable[[], None] = lambda: None) -> AgentHealth:
        """Ask until the agent answers healthy (one just started binds, then loads its program);
        the last error after ``timeout_s``. ``check`` runs before each question: the caller's way
        to stop at once, e.g. by raising when the agent's process has exited."""
        for attempt in Retrying(
            retry=retry_if_exception_type(DriverError),
            stop=stop_after_delay(timeout_s),
            wait=wait_fixed(0.1),
            reraise=True,
        ):
            with attempt:
                check()
                h = self.agent_health(retry=False)
                if not h.ok:
                    raise UnreachableError(f"the XDP agent at {self.url} is not ready: {h.detail}")
                return h
        raise AssertionError("unreachable: Retrying reraises the last error")

    def health(self) -> Health:
        # One question, no retries: the health probes weigh failures themselves (down after N
        # in a row, services/health_probe.py); retrying here for 10 s turned "connection
        # refused" into "no answer within 5 s" and kept the probe (and a registering request) waiting.
        try:
            h = self.agent_health(retry=False)
        except DriverError as e:
            return Health(ok=False, detail=e.message)
        return Health(ok=h.ok, detail=f"agent {self.url}: {h.detail}", version=h.version)

    # ---- the testbed's operations -----------------------------------------------------

    def set_overloaded(self, cpus: set[int] | None) -> None:
        self._call("PUT", "/overload", Ok, Overload(cpus=sorted(cpus) if cpus is not None else None))

    def set_egress_budget(self, rate_bps: float | None, lanes: int, burst_s: float) -> None:
        self._call("PUT", "/egress-budget", Ok, EgressBudget(rate_bps=rate_bps or None, lanes=lanes, burst_s=burst_s))

    def inject_write_failure(self, after_entries: int) -> None:
        try:
            self._call("POST", f"/test/inject-write-failure?after_entries={after_entries}", Ok)
        except DriverError as e:
            raise DriverError(
                f"the XDP agent at {self.url} takes no fault injection: {e.message}",
                hint="tests only: start the agent with --test-hooks",
            ) from e

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None
