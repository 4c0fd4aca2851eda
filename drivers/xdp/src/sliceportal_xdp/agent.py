"""The XDP data-plane agent: owns one backend's program and maps, serves the driver contract
over HTTP, and outlives the portal (#16 item 2).

    python -m sliceportal_xdp.agent --backend NAME --interface IF [--netns NS] \\
        --listen HOST:PORT|unix:/PATH.sock --token-file F [--options JSON] [--replace | --teardown]

The data plane is pinned under /sys/fs/bpf/sliceportal/NAME (``pins``); a new agent, after
a restart or a ``kill -9``, takes the pinned maps over (tables, live copy, generation and
rule-set digest as they were) while the attached program keeps forwarding. The agent runs
the same ``Driver`` as the in-process mode: one implementation of the data-plane logic.
Every request needs ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Annotated, Any

import uvicorn
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from sliceportal.drivers.contract import (
    ApplyResult,
    Capabilities,
    Counters,
    DataPlaneState,
    DriverError,
    NativePlan,
    OptionsError,
    ProgressEvent,
    PushError,
    UnreachableError,
)

from . import libbpf, pins
from .agent_api import API, AgentHealth, Applied, EgressBudget, ErrorKind, Ok, Overload, Problem
from .driver import Driver

log = logging.getLogger("sliceportal_xdp.agent")
PROBLEM = "application/problem+json"
_BEARER = HTTPBearer(auto_error=False)
# module level: FastAPI resolves the (string) annotations in the module's namespace
Creds = Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]


def _problem(
    status: int,
    title: str,
    detail: str,
    kind: ErrorKind = "driver",
    hint: str = "",
    rolled_back: bool | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = Problem(title=title, status=status, detail=detail, kind=kind, hint=hint, rolled_back=rolled_back)
    return JSONResponse(body.model_dump(exclude_none=True), status_code=status, media_type=PROBLEM, headers=headers)


def _driver_error(e: DriverError) -> JSONResponse:
    if isinstance(e, PushError):
        return _problem(409, "push failed", e.message, "push", e.hint, e.rolled_back)
    if isinstance(e, pins.PinnedAbiError):
        return _problem(503, "incompatible pinned data plane", e.message, "abi", e.hint)
    if isinstance(e, UnreachableError):
        return _problem(503, "data plane unreachable", e.message, "unreachable", e.hint)
    if isinstance(e, OptionsError):
        return _problem(422, "invalid options", e.message, "options", e.hint)
    return _problem(422, "driver error", e.message, "driver", e.hint)


def create_app(driver: Driver, token: str, backend: str, test_hooks: bool = False) -> FastAPI:
    """The agent's HTTP API over a (pinned) in-process ``driver``; ``test_hooks`` adds the
    fault injection the conformance suite needs (never on in production)."""
    started = time.monotonic()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        # a clean stop (SIGTERM, SIGINT): release the fds; a pinned data plane stays attached
        driver.close()

    # no schema, no docs: what the agent serves and how is no business of a caller without its token
    app = FastAPI(
        title="sliceportal XDP agent", version="1", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    want = token.encode()

    def authorised(creds: Creds) -> None:
        # compare_digest: the time taken does not tell how much of a guess was right
        if creds is None or not secrets.compare_digest(creds.credentials.encode(), want):
            raise _Unauthorised

    Auth = Depends(authorised)

    @app.exception_handler(DriverError)
    async def on_driver_error(_: Request, e: DriverError) -> JSONResponse:
        return _driver_error(e)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(_: Request, e: RequestValidationError) -> JSONResponse:
        where = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()[:5])
        return _problem(422, "invalid request", where, "options")

    @app.exception_handler(_UnauthorisedError)
    async def on_unauthorised(_: Request, e: _UnauthorisedError) -> JSONResponse:
        return _problem(
            401,
            "unauthorized",
            "missing or wrong bearer token",
            hint="send Authorization: Bearer <the agent's token>",
            headers={"WWW-Authenticate": "Bearer"},
        )

    @app.get(f"{API}/health", dependencies=[Auth])
    def health() -> AgentHealth:
        h = driver.health()
        dp = driver.dataplane
        generation, _ = dp.read_config()
        attached: int | None = libbpf.obj_id(dp.prog_fd) if driver.options.interface else None
        return AgentHealth(
            ok=h.ok,
            detail=h.detail,
            backend=backend,
            version=h.version,
            generation=generation,
            program_id=attached,
            adopted=dp.adopted,
            pin_dir=driver.pin_dir or "",
            uptime_s=time.monotonic() - started,
        )

    @app.get(f"{API}/capabilities", dependencies=[Auth])
    def capabilities() -> Capabilities:
        return driver.capabilities()

    @app.post(f"{API}/apply", dependencies=[Auth])
    def apply(plan: NativePlan) -> Applied:
        events: list[ProgressEvent] = []
        result: ApplyResult = driver.apply(plan, events.append)
        return Applied(result=result, events=events)

    @app.get(f"{API}/state", dependencies=[Auth])
    def state() -> DataPlaneState:
        return driver.read_state()

    @app.get(f"{API}/counters", dependencies=[Auth])
    def counters() -> Counters:
        return driver.counters()

    @app.put(f"{API}/egress-budget", dependencies=[Auth])
    def egress_budget(body: EgressBudget) -> Ok:
        driver.set_egress_budget(body.rate_bps, body.lanes, body.burst_s)
        return Ok()

    @app.put(f"{API}/overload", dependencies=[Auth])
    def overload(body: Overload) -> Ok:
        driver.set_overloaded(set(body.cpus) if body.cpus is not None else None)
        return Ok()

    registry = CollectorRegistry(auto_describe=False)
    registry.register(CountersCollector(driver.counters, backend))

    @app.get("/metrics", dependencies=[Auth])
    def metrics() -> Response:
        """Prometheus text format (a scrape config with the agent's token as its credentials)."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    if test_hooks:

        @app.post(f"{API}/test/inject-write-failure", dependencies=[Auth])
        def inject_write_failure(after_entries: int = 1) -> Ok:
            driver.inject_write_failure(after_entries)
            return Ok()

    return app


# The portal's per-lane names (sliceportal.api.routes.metrics, docs/kpis.md "Prometheus"), so a
# Prometheus that scrapes the agents directly at scale sums and rates them like the portal's.
# Labels: slice and lane are the DATA PLANE's (the IR slice id, the target lane: the agent
# does not know the portal's slice names or catalogue lanes), backend the agent's --backend,
# source always "counters".
AGENT_LABELS = ("slice", "backend", "lane", "source")
AGENT_COUNTERS: dict[str, tuple[str, str]] = {
    "sliceportal_lane_sent_packets": ("packets", "Packets classified into the slice lane (offered)"),
    "sliceportal_lane_sent_bytes": ("bytes", "Bytes classified into the slice lane (offered)"),
    "sliceportal_lane_received_packets": ("tx_packets", "Packets that left the lane towards the egress"),
    "sliceportal_lane_received_bytes": ("tx_bytes", "Bytes that left the lane towards the egress"),
    "sliceportal_lane_dropped_packets": ("drops", "Packets the data plane dropped (every cause)"),
    "sliceportal_lane_ecn_marked_packets": ("ecn_marks", "Packets ECN-marked by the lane's virtual queue"),
}


class CountersCollector(Collector):
    """Prometheus view of ``read()``'s per slice x lane counters, read at every scrape (the
    data plane's own monotonic counters: nothing is kept here). A counter the data plane does
    not count (egress, queueing delay on XDP) has no series: not measured, never 0."""

    def __init__(self, read: Callable[[], Counters], backend: str) -> None:
        self.read = read
        self.backend = backend

    def collect(self) -> list[Metric]:
        counters = self.read()
        families = {
            name: CounterMetricFamily(name, help_, labels=AGENT_LABELS) for name, (_, help_) in AGENT_COUNTERS.items()
        }
        delay = HistogramMetricFamily(
            "sliceportal_lane_queue_delay_seconds",
            "Queueing delay inside the data plane (enqueue to dequeue)",
            labels=AGENT_LABELS,
        )
        for key, lc in sorted(counters.slice_lanes.items()):
            slice_id, _, lane = key.partition("/")
            labels = [slice_id, self.backend, lane, "counters"]
            for name, (field, _) in AGENT_COUNTERS.items():
                value = sum(lc.drops.values()) if field == "drops" else getattr(lc, field)
                if value is not None:
                    families[name].add_metric(labels, value)
            if lc.delay is not None:
                h, seen = lc.delay, 0
                buckets = []
                for i, n in enumerate(h.buckets):  # bucket i: [2**i, 2**(i+1)) units
                    seen += n
                    le = "+Inf" if i == len(h.buckets) - 1 else repr(2 ** (i + 1) * h.unit_ns / 1e9)
                    buckets.append((le, seen))
                delay.add_metric(labels, buckets, h.sum * h.unit_ns / 1e9)
        return [*families.values(), delay]


class _UnauthorisedError(Exception):
    pass


_Unauthorised = _UnauthorisedError()


def _read_token(path: str) -> str:
    try:
        token = Path(path).read_text().strip()
    except OSError as e:
        raise SystemExit(f"--token-file {path}: {e.strerror}") from e
    if len(token) < 16:
        raise SystemExit(f"--token-file {path}: the token must be at least 16 characters")
    return token


def build_driver(args: argparse.Namespace) -> Driver:
    try:
        extra: dict[str, Any] = json.loads(args.options) if args.options else {}
    except json.JSONDecodeError as e:
        raise OptionsError(f"--options is not JSON: {e}") from e
    own = sorted(k for k in ("address", "agent_token", "pin_name", "interface", "netns") if k in extra)
    if own:
        # the agent drives the kernel itself (no agent behind an agent); its flags name the rest
        raise OptionsError(f"--options may not set {', '.join(own)}", hint="use --backend / --interface / --netns")
    opts = extra | {"pin_name": args.backend, "interface": args.interface, "netns": args.netns}
    return Driver(opts)


def load(driver: Driver, replace: bool, say: Callable[[str], None]) -> None:
    """Load (take over the pins, or start empty) and attach; --replace removes pins of an
    incompatible build first (the portal re-pushes its rule set)."""
    try:
        dp = driver.dataplane
    except pins.PinnedAbiError:
        if not replace:
            raise
        say(f"replacing the incompatible data plane under {driver.pin_dir}")
        driver.teardown()
        dp = driver.dataplane
    gen, _ = dp.read_config()
    what = "took over" if dp.adopted else "started"
    say(f"{what} {driver.pin_dir} (generation {gen}, version {driver.read_state().version})")


LOCK_DIR = "/run/sliceportal"


def hold_backend(backend: str) -> IO[bytes]:
    """An exclusive lock on the backend for this process's lifetime: two agents on the same
    pins would each attach their own program and write the same tables."""
    os.makedirs(LOCK_DIR, exist_ok=True)
    f = open(f"{LOCK_DIR}/xdp-agent-{backend}.lock", "a+b")  # noqa: SIM115 -- held until exit
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().decode(errors="replace").strip() or "?"
        f.close()
        raise DriverError(
            f"another agent (pid {holder}) holds backend {backend}", hint="stop it first; one agent per backend"
        ) from None
    f.truncate(0)
    f.write(str(os.getpid()).encode())
    f.flush()
    return f


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sliceportal_xdp.agent", description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", required=True, help="backend name: pins under /sys/fs/bpf/sliceportal/NAME")
    p.add_argument("--interface", help="device to attach to")
    p.add_argument("--netns", help="network namespace of the interface")
    p.add_argument("--listen", default="127.0.0.1:7700", help="HOST:PORT (or unix:/PATH.sock) to serve on")
    p.add_argument("--token-file", help="file holding the bearer token (>= 16 characters)")
    p.add_argument("--options", help="further XDP backend options as JSON (lanes, tx_peer, alt_mac, ...)")
    p.add_argument("--test-hooks", action="store_true", help="tests only: serve fault injection")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--replace", action="store_true", help="remove pins of an incompatible build, start empty")
    g.add_argument("--teardown", action="store_true", help="detach the program, remove the pins, exit")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s xdp-agent %(message)s")
    try:
        driver = build_driver(args)
        lock = hold_backend(args.backend)  # released when the process exits
        if args.teardown:
            gone = driver.teardown()
            os.unlink(lock.name)  # the backend is gone with its lock
            log.info("tore down %s (%d pins)", driver.pin_dir, len(gone))
            return 0
        if not args.token_file:
            p.error("--token-file is required")
        token = _read_token(args.token_file)
        load(driver, args.replace, log.info)
    except DriverError as e:
        print(f"xdp agent: {e.message}" + (f" ({e.hint})" if e.hint else ""), file=sys.stderr)
        return 2
    # uvicorn re-raises SIGTERM after its graceful shutdown (exit status -15): the app's
    # lifespan closes the driver before that
    app = create_app(driver, token, args.backend, args.test_hooks)
    if args.listen.startswith("unix:"):
        uvicorn.run(app, uds=args.listen.removeprefix("unix:"), log_level="warning")
    else:
        host, _, port = args.listen.removeprefix("tcp:").rpartition(":")
        uvicorn.run(app, host=host or "127.0.0.1", port=int(port), log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
