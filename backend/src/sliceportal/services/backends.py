"""Backend records ↔ driver plugins: one long-lived driver per backend, used one at a time.

A driver holds a session with its data plane (a P4Runtime stream with mastership, a CSR
connection, loaded BPF maps) and what it last applied, as a controller does; so drivers are
kept in a pool rather than opened per request. A driver object is used by one thread at a
time (its slot's mutex: driver sessions are not thread-safe); a health probe waits only behind
a read of the data plane, never behind a push (``probe_use``). Deployments, rollbacks and
reconciles of one backend exclude each other across all portal workers through the
backend's PostgreSQL advisory lock (``backend_lock``), held for the whole push or
reconcile. A driver that failed is dropped and reopened on next use.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from sqlalchemy.orm import Session

from sliceportal.core.db import advisory_lock
from sliceportal.drivers.contract import Counters, Driver, DriverError, OptionsError
from sliceportal.drivers.registry import DriverRegistry, UnknownDriverError, discover
from sliceportal.models import Backend
from sliceportal.models.slicing import DEFAULT_LINK_BPS
from sliceportal.services.errors import FieldIssue, InvalidError


@lru_cache(maxsize=1)
def registry() -> DriverRegistry:
    """The installed driver plugins, each checked against the contract once per process."""
    return discover()


def driver_class(name: str) -> type[Driver]:
    try:
        return registry().get(name)
    except UnknownDriverError as exc:
        raise InvalidError(exc.message, field="driver") from exc


def _construct(backend: Backend) -> Driver:
    try:
        return driver_class(backend.driver)(backend.options)
    except OptionsError as exc:
        raise InvalidError(
            f"options rejected by the {backend.driver} driver: {exc.message}",
            issues=[FieldIssue(f"options.{loc}" if loc else "options", msg) for loc, msg in exc.issues] or None,
            field="options",
        ) from exc


@dataclass
class _Slot:
    key: str
    driver: Driver
    lock: threading.Lock = field(default_factory=threading.Lock)
    reading_back: bool = False  # its holder reads the data plane (a reconcile, counters)


class DriverPool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[tuple[str, int], _Slot] = {}

    @staticmethod
    def _ident(session: Session, backend: Backend) -> tuple[tuple[str, int], str]:
        # keyed by database too: one process may serve several databases (tests do)
        bind = session.get_bind()
        where = (str(bind.engine.url), backend.id)
        return where, json.dumps([backend.driver, backend.options], sort_keys=True, default=str)

    def _slot(self, session: Session, backend: Backend) -> _Slot:
        where, key = self._ident(session, backend)
        with self._lock:
            slot = self._slots.get(where)
            if slot is None or slot.key != key:
                if slot is not None:
                    slot.driver.close()
                slot = self._slots[where] = _Slot(key, _construct(backend))
            return slot

    @contextmanager
    def use(self, session: Session, backend: Backend, *, read_back: bool = False) -> Iterator[Driver]:
        """The backend's driver, once no other thread uses it. ``read_back``: for a read of the
        data plane (a reconcile, counters), which a health probe waits behind (``probe_use``)."""
        slot = self._slot(session, backend)
        slot.lock.acquire()
        with self._holding(session, backend, slot, read_back) as driver:
            yield driver

    @contextmanager
    def try_use(
        self, session: Session, backend: Backend, *, read_back: bool = False, wait_s: float = 0.0
    ) -> Iterator[Driver | None]:
        """Like ``use``, but yields None while another thread uses the driver (a push) for longer
        than ``wait_s`` (0: at once)."""
        slot = self._slot(session, backend)
        if not (slot.lock.acquire(timeout=wait_s) if wait_s > 0 else slot.lock.acquire(blocking=False)):
            yield None
            return
        with self._holding(session, backend, slot, read_back) as driver:
            yield driver

    @contextmanager
    def probe_use(self, session: Session, backend: Backend, poll_s: float = 0.05) -> Iterator[Driver | None]:
        """For a health probe: the driver, waiting behind a read of the data plane (one hung on a
        dead plane then delays the probe's answer, and counts, instead of hiding it); None at
        once while anything else holds it (a push reports on the data plane itself; a compile
        is no data plane's silence)."""
        slot = self._slot(session, backend)
        while not slot.lock.acquire(timeout=poll_s):
            if not slot.reading_back:
                yield None
                return
        with self._holding(session, backend, slot, False) as driver:
            yield driver

    @contextmanager
    def _holding(self, session: Session, backend: Backend, slot: _Slot, read_back: bool) -> Iterator[Driver]:
        """The driver of a slot whose lock the caller acquired; released here."""
        slot.reading_back = read_back
        try:
            yield slot.driver
        except DriverError:
            self.discard(session, backend)
            raise
        finally:
            slot.reading_back = False
            slot.lock.release()

    def discard(self, session: Session, backend: Backend) -> None:
        where, _ = self._ident(session, backend)
        with self._lock:
            slot = self._slots.pop(where, None)
        if slot is not None:
            slot.driver.close()

    def close_all(self) -> None:
        with self._lock:
            slots, self._slots = list(self._slots.values()), {}
        for slot in slots:
            slot.driver.close()


POOL = DriverPool()


@contextmanager
def backend_lock(session: Session, backend_id: int, *, wait_s: float) -> Iterator[bool]:
    """The backend's advisory lock (deploy / rollback / reconcile exclude each other); yields got-it."""
    with advisory_lock(session.get_bind().engine, backend_id, wait_s=wait_s) as got:
        yield got


PROBING = "probing"  # health of a backend registered a moment ago, before its first probe answered


def describe(session: Session, backend: Backend, *, probe: bool = True) -> None:
    """Fill geometry and capacity (and health, when ``probe``) from the driver; refuse an unknown
    driver or bad options.

    Geometry and capacity are local to the driver (its options, its P4Info); only the health
    probe talks to the data plane, so the API registers a backend with ``probe=False``
    (health ``probing``) and answers at once; a background probe fills in the health.
    """
    try:
        drv = _construct(backend)  # not pooled: the record may not be saved
    except DriverError as exc:
        backend.health, backend.health_detail = "unreachable", exc.message
        return
    try:
        caps = drv.capabilities()
        health = drv.health() if probe else None
    except DriverError as exc:
        backend.health, backend.health_detail = "unreachable", exc.message
        return
    finally:
        drv.close()
    backend.paths, backend.lanes, backend.capacity = caps.paths, caps.lanes, dict(caps.capacity)
    if health is None:
        backend.health, backend.health_detail = PROBING, "the first health probe is under way"
    else:
        backend.health = "ok" if health.ok else "down"
        backend.health_detail = health.detail


def register(
    session: Session,
    *,
    name: str,
    driver: str,
    options: Mapping[str, Any],
    link_bps: int | None = None,
    port_bps: Mapping[str, int] | None = None,
    accept_unenforced: Iterable[str] = (),
) -> Backend:
    """A new backend, as ``POST /backends`` registers one (and any script that is not the API,
    such as the emulated testbed): the driver and its options checked, geometry and capacity
    learned without touching the data plane (health ``probing`` until a probe answers). Added
    to ``session``, not committed."""
    b = Backend(
        name=name,
        driver=driver,
        options=dict(options),
        port_bps=dict(port_bps or {}),
        link_bps=link_bps or DEFAULT_LINK_BPS,
        accept_unenforced=sorted(set(accept_unenforced)),
    )
    describe(session, b, probe=False)
    session.add(b)
    return b


# How long a counters read waits for a driver another duty holds: a health probe or another
# reader holds it for milliseconds, a push for seconds. Loops of 0.5, 1 and 2 s started
# together meet at every tick: without the wait the XDP plane of ``make run``, read by the
# testbed's placement check and probed every 0.5 s, gave the KPI collector one sample in 20.
COUNTERS_WAIT_S = 0.25


def pooled_counters(session: Session, backend: Backend) -> Counters | None:
    """A data plane's counters through the shared driver pool (the KPI collector's read, and any
    other reader in the process); None while a push holds the driver."""
    with POOL.try_use(session, backend, read_back=True, wait_s=COUNTERS_WAIT_S) as driver:
        return None if driver is None else driver.counters()
