"""The collector shares each backend's driver with the other duties of the controller (health
probes every 0.5 s, reconcile, a testbed's placement check): a read that finds the driver held
for a moment waits for it, one that finds a push holding it gives up (no sample, never a stall).

Found in ``make run``: loops of 0.5, 1 and 2 s started together met at every tick, and the XDP
plane, read by the testbed's placement check and probed every 0.5 s, gave the collector one
sample in 20 intervals."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session

from sliceportal.models import Backend
from sliceportal.services.backends import COUNTERS_WAIT_S, POOL, describe, pooled_counters
from sliceportal_testbed.processes import RunningTarget


@contextmanager
def held_for(session: Session, backend: Backend, seconds: float) -> Iterator[None]:
    """Another thread holds the backend's driver for ``seconds`` from now."""
    holding = threading.Event()

    def hold() -> None:
        with POOL.use(session, backend):
            holding.set()
            time.sleep(seconds)  # the duty's own work, whose length is the point of the test

    t = threading.Thread(target=hold)
    t.start()
    assert holding.wait(10)
    try:
        yield
    finally:
        t.join()


def test_a_read_waits_out_a_short_holder_and_not_a_push(
    session: Session, start_target: Callable[..., RunningTarget]
) -> None:
    target = start_target("--priority-queues", "8")
    backend = Backend(name="p4", driver="p4rt", options={"address": target.address})
    describe(session, backend, probe=False)
    session.add(backend)
    session.commit()
    try:
        with held_for(session, backend, COUNTERS_WAIT_S / 3):  # a health probe, another reader
            assert pooled_counters(session, backend) is not None
        with held_for(session, backend, COUNTERS_WAIT_S * 4):  # a push
            started = time.monotonic()
            assert pooled_counters(session, backend) is None
            assert time.monotonic() - started < COUNTERS_WAIT_S * 2
    finally:
        POOL.discard(session, backend)
