"""Background health probes of every backend, bounded in time, with hysteresis.

A probe asks the backend's pooled driver for ``health()`` in a thread of its own. One failed
probe (an error, a ``not ok`` answer, or no answer within the policy's ``timeout_s``) turns
the backend ``degraded``; ``down_after`` consecutive ones turn it ``down``; one good answer
turns it ``ok`` again. On a host at load 20 a healthy data plane may take seconds to answer
(issue #26 measured 0.03-4.2 s for the NetFPGA model), so one miss is doubt, not an outage.
A probe that hangs keeps its thread; every further ``timeout_s`` without an answer counts as
one more failed probe, so a frozen data plane is ``down`` after ``down_after x timeout_s``.
Those seconds are the controller's running time: the stalls of the controller process itself
(``core/stall_clock.py``: starved of a CPU or of the GIL) are subtracted, because an answer
waiting in our own socket is not the data plane's silence.
The detail names what failed: the driver's error (connection refused ...), the data plane's
own answer, or "no answer within Y s".

A backend whose driver a push (or a compile) holds is not probed this time: the push reports
on it itself. A probe does wait behind a read of the data plane (a reconcile's read-back, a
counters read), its time running.
Health is written with a plain UPDATE (no audit row, no version bump): it is a fact the portal
observes, not a change an operator made.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.core.config import Settings, get_settings
from sliceportal.core.loops import LoopRegistry, PeriodicDuty
from sliceportal.core.stall_clock import STALLS
from sliceportal.drivers.contract import DriverError
from sliceportal.models import Backend
from sliceportal.models.slicing import HEALTH_DOWN
from sliceportal.services.backends import POOL

PROBE_INTERVAL_S = 0.5
FAILED = "failed"
DEGRADED = "degraded"


@dataclass(frozen=True)
class HealthPolicy:
    """How long a probe may take and how many failures in a row mean ``down``."""

    timeout_s: float = 5.0
    down_after: int = 3


def policy_for(driver: str, settings: Settings | None = None) -> HealthPolicy:
    """The policy of a driver: the settings' defaults, overridden per driver (``HEALTH_OVERRIDES``)."""
    s = settings or get_settings()
    o = s.health_overrides.get(driver)
    return HealthPolicy(
        timeout_s=o.timeout_s if o and o.timeout_s else s.health_probe_timeout_s,
        down_after=o.down_after if o and o.down_after else s.health_down_after,
    )


@dataclass
class _Probe:
    backend_id: int
    started: float = field(default_factory=time.monotonic)
    health: str | None = None  # None: not probed (busy, or no answer yet)
    detail: str = ""
    done: threading.Event = field(default_factory=threading.Event)
    counted_at: float = 0.0  # the last time its lack of an answer counted as a failure


def _ask(sessions: sessionmaker[Session], backend: Backend, probe: _Probe) -> None:
    """Thread body: one ``health()`` call through the pool (a detached copy of the backend row).
    Its time runs from the question, including the wait behind a read-back of the same driver:
    a read-back hung on a dead data plane is the data plane's silence (CI saw one keep a dead
    plane ``degraded`` for 15 s while every probe found the driver busy and counted nothing)."""
    try:
        with sessions() as session, POOL.probe_use(session, backend) as drv:
            if drv is None:
                return
            h = drv.health()
            probe.health, probe.detail = ("ok" if h.ok else "down"), h.detail
    except DriverError as exc:
        probe.health, probe.detail = "down", exc.message
    except Exception as exc:  # a driver bug is a backend we cannot vouch for
        probe.health, probe.detail = "down", f"{type(exc).__name__}: {exc}"
    finally:
        probe.done.set()


def _detached(b: Backend) -> Backend:
    # what the pool keys a driver by; a copy so that the probe thread never touches the pass's session
    return Backend(id=b.id, name=b.name, driver=b.driver, options=dict(b.options or {}))


def _start(sessions: sessionmaker[Session], b: Backend) -> _Probe:
    probe = _Probe(b.id)
    threading.Thread(target=_ask, args=(sessions, _detached(b), probe), name=f"probe-{b.id}", daemon=True).start()
    return probe


def probe_backend(sessions: sessionmaker[Session], backend_id: int, timeout_s: float | None = None) -> None:
    """One bounded probe of one backend (the API runs it right after registering the backend):
    its first health, with no history to weigh it against."""
    with sessions() as session:
        b = session.get(Backend, backend_id)
        if b is None or b.health == FAILED:
            return
        probe = _start(sessions, b)
        wait = timeout_s if timeout_s is not None else policy_for(b.driver).timeout_s
        if not probe.done.wait(wait):
            probe.health, probe.detail = "down", f"no answer to the health probe within {wait:g} s"
        if probe.health is not None:
            session.execute(
                update(Backend).where(Backend.id == backend_id).values(health=probe.health, health_detail=probe.detail)
            )
            session.commit()


def recheck(sessions: sessionmaker[Session], backend: Backend, settings: Settings | None = None) -> tuple[bool, str]:
    """Probe a backend the probes doubt, up to ``down_after`` times; (answered ok, what failed last).

    A deploy runs it before refusing with 503 "X is down" (issue #26: a live NetFPGA model
    was refused four times in a row after single missed probes). An ok answer is written.
    """
    policy = policy_for(backend.driver, settings)
    detail = backend.health_detail
    # the whole recheck within one probe timeout: a refusal must not keep the client waiting
    # down_after x timeout (a hung plane); quick failures are asked again within it
    deadline = time.monotonic() + policy.timeout_s
    for attempt in range(policy.down_after):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        probe = _start(sessions, backend)
        if not probe.done.wait(left):
            detail = f"no answer to the health probe within {policy.timeout_s:g} s"
            continue  # the probe thread still holds the driver: the next one finds it busy
        if probe.health == "ok":
            with sessions() as session:
                session.execute(
                    update(Backend).where(Backend.id == backend.id).values(health="ok", health_detail=probe.detail)
                )
                session.commit()
            return True, probe.detail
        if probe.health is not None:
            detail = probe.detail
        if attempt + 1 < policy.down_after:
            time.sleep(min(0.5, policy.timeout_s / 4))  # a data plane coming back gets a moment
    return False, detail


class HealthProber(PeriodicDuty):
    """The controller's probe loop: per backend, at most one probe in flight, and its count
    of failed probes in a row (the hysteresis)."""

    loop_name = "health-probes"

    def __init__(
        self,
        sessions: sessionmaker[Session],
        interval_s: float = PROBE_INTERVAL_S,
        settings: Settings | None = None,
        registry: LoopRegistry | None = None,
    ) -> None:
        super().__init__(interval_s, registry)
        self._sessions = sessions
        self._settings = settings
        self._inflight: dict[int, _Probe] = {}
        self.failures: dict[int, int] = {}  # backend id -> failed probes in a row

    def run_once(self) -> None:
        with self._sessions() as session:
            backends = list(session.scalars(select(Backend).where(Backend.health != FAILED).order_by(Backend.id)))
            policies = {b.id: policy_for(b.driver, self._settings) for b in backends}
            for b in backends:
                p = self._inflight.get(b.id)
                if p is None or p.done.is_set():
                    self._inflight[b.id] = _start(self._sessions, b)
            # quick answers count in this pass; a slow one is looked at again next pass
            deadline = time.monotonic() + min(
                self._period_s, max((p.timeout_s for p in policies.values()), default=0.0)
            )
            for b in backends:
                self._inflight[b.id].done.wait(max(0.0, deadline - time.monotonic()))
            for b in backends:
                change = self._judge(b, self._inflight[b.id], policies[b.id])
                if change is not None:
                    session.execute(
                        update(Backend)
                        .where(Backend.id == b.id)
                        .values(health=change[0], health_detail=change[1][:2000])
                    )
            for gone in set(self._inflight) - {b.id for b in backends}:
                self._inflight.pop(gone, None)
                self.failures.pop(gone, None)
            session.commit()

    def _judge(self, b: Backend, p: _Probe, policy: HealthPolicy) -> tuple[str, str] | None:
        """The (health, detail) the backend changes to after this pass's look at its probe, if any."""
        now = time.monotonic()
        if p.done.is_set():
            if p.health is None:
                return None  # busy: not probed
            if p.health == "ok":
                self.failures[b.id] = 0
                return None if (b.health, b.health_detail) == ("ok", p.detail) else ("ok", p.detail)
            if p.counted_at:  # its hang was counted already: its late error is the same failure
                self._inflight.pop(b.id, None)
                return None
            self._inflight.pop(b.id, None)  # counted once; the next pass asks again
            detail = p.detail
        else:
            # its time is the time this process could have read an answer in: a stall of our
            # own (a CPU or the GIL out of reach) is not the data plane's silence
            since = max(p.started, p.counted_at)
            stalled = STALLS.stalled(since, now)
            if now - since - stalled < policy.timeout_s:
                return None  # still within its time
            p.counted_at = now
            detail = f"no answer to the health probe within {policy.timeout_s:g} s (timeout)"
            if stalled >= 0.1:
                detail += f"; this controller's own stalls meanwhile ({stalled:.1f} s) not counted"
        # a backend already down (a previous leader's verdict, the testbed's watchdog) stays down
        start = policy.down_after - 1 if b.health in HEALTH_DOWN else 0
        n = self.failures[b.id] = self.failures.get(b.id, start) + 1
        if n >= policy.down_after:  # the count shown stops there: the detail stays put while down
            health, why = "down", f"{policy.down_after} failed probes in a row; last: {detail}"
        else:
            health, why = DEGRADED, f"{n} failed probe(s) of {policy.down_after} before down: {detail}"
        return None if (b.health, b.health_detail) == (health, why) else (health, why)

    def start(self) -> None:
        STALLS.start()
        super().start()
