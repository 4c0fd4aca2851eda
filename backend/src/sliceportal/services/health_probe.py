"""Background health probes of every backend, each bounded in time.

A probe asks the backend's pooled driver for ``health()`` in its own thread and waits at
most ``timeout_s`` (1 s): a data plane that died or hangs turns ``down`` within one
probe interval, and one slow backend never delays the others. A backend whose driver is
busy (a push in flight) is not probed this time: the push reports on it itself.
Health is written with a plain UPDATE (no audit row, no version bump): it is a fact the
portal observes, not a change an operator made.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.core.loops import LoopRegistry, SupervisedLoop
from sliceportal.drivers.contract import DriverError
from sliceportal.models import Backend
from sliceportal.services.backends import POOL

# interval + timeout bound how long a dead data plane still shows ``ok``: 1.5 s (< 2 s)
PROBE_INTERVAL_S = 0.5
PROBE_TIMEOUT_S = 1.0
FAILED = "failed"


def probe_backend(sessions: sessionmaker[Session], backend_id: int, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """One bounded probe of one backend (the API runs it right after registering the backend)."""
    with sessions() as session:
        probe_backends(session, timeout_s, only=backend_id)


@dataclass
class _Probe:
    backend_id: int
    health: str | None = None  # None: not probed (busy, or no answer yet)
    detail: str = ""


def probe_backends(session: Session, timeout_s: float = PROBE_TIMEOUT_S,
                   only: int | None = None) -> dict[int, tuple[str, str]]:
    """Probe every backend (or backend ``only``) in parallel; returns id -> the (health, detail) it changed to.

    ``failed`` is left alone: it records that the backend refused its rule set (set by the
    testbed's start-up, cleared by the next successful push), which liveness does not undo.
    """
    query = select(Backend).where(Backend.health != FAILED).order_by(Backend.id)
    backends = list(session.scalars(query if only is None else query.where(Backend.id == only)))
    probes = [_Probe(b.id) for b in backends]

    def run(backend: Backend, probe: _Probe) -> None:
        try:
            with POOL.try_use(session, backend) as drv:
                if drv is None:
                    return
                h = drv.health()
                probe.health, probe.detail = ("ok" if h.ok else "down"), h.detail
        except DriverError as exc:
            probe.health, probe.detail = "down", exc.message
        except Exception as exc:  # a driver bug is a backend we cannot vouch for
            probe.health, probe.detail = "down", f"{type(exc).__name__}: {exc}"

    threads = [threading.Thread(target=run, args=(b, p), name=f"probe-{b.id}", daemon=True)
               for b, p in zip(backends, probes, strict=True)]
    for t in threads:
        t.start()
    changed: dict[int, tuple[str, str]] = {}
    for b, p, t in zip(backends, probes, threads, strict=True):
        t.join(timeout=max(0.0, timeout_s))
        if t.is_alive():
            p.health, p.detail = "down", f"no answer to the health probe within {timeout_s:g} s"
        if p.health is not None and (p.health, p.detail) != (b.health, b.health_detail):
            changed[b.id] = (p.health, p.detail)
    for backend_id, (health, detail) in changed.items():
        session.execute(update(Backend).where(Backend.id == backend_id).values(health=health, health_detail=detail))
    session.commit()
    return changed


class HealthProber:
    def __init__(self, sessions: sessionmaker[Session], interval_s: float = PROBE_INTERVAL_S,
                 timeout_s: float = PROBE_TIMEOUT_S, registry: LoopRegistry | None = None) -> None:
        self._sessions, self._interval, self._timeout, self._registry = sessions, interval_s, timeout_s, registry
        self._loop: SupervisedLoop | None = None

    def run_once(self) -> None:
        with self._sessions() as session:
            probe_backends(session, self._timeout)

    def start(self) -> None:
        self._loop = SupervisedLoop("health-probes", self._interval, self.run_once, self._registry)
        self._loop.start()

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.stop()
