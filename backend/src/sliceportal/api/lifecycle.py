"""What the portal does around serving requests: end what a dead process left running,
run the supervised control loops, and restart any loop that died.

Kept apart from ``api/main.py`` so that the app factory stays a list of routers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from fastapi import FastAPI
from sqlalchemy.exc import DBAPIError

from sliceportal.core.loops import LOOPS
from sliceportal.services.deployments import interrupt_all_orphans
from sliceportal.services.health_probe import HealthProber
from sliceportal.services.reconciler import Reconciler

log = logging.getLogger(__name__)

SUPERVISE_EVERY_S = 1.0


def end_interrupted(app: FastAPI) -> None:
    """Deployments a dead process left ``running`` end as failed (interrupted) before anything else."""
    try:
        n = interrupt_all_orphans(app.state.sessionmaker)
    except DBAPIError as exc:  # the database is not up yet: the first lock holder ends them instead
        log.warning("could not check for interrupted deployments at start-up: %s", str(exc).splitlines()[0])
        return
    if n:
        log.warning("%d deployment(s) left running by an earlier process marked failed (interrupted)", n)


async def _supervise() -> None:
    # on the event loop, not a thread: nothing a loop's thread does can take its supervisor down
    while True:
        await asyncio.sleep(SUPERVISE_EVERY_S)
        try:
            LOOPS.check()
        except Exception:
            log.exception("loop supervisor check failed")


@asynccontextmanager
async def control_loops(app: FastAPI) -> AsyncIterator[None]:
    """Reconcile and health-probe loops (when the reconcile interval is > 0), supervised."""
    settings = app.state.settings
    started: list[Reconciler | HealthProber] = []
    if settings.reconcile_interval_s > 0:
        started = [Reconciler(app.state.sessionmaker, settings.reconcile_interval_s),
                   HealthProber(app.state.sessionmaker)]
        for loop in started:
            loop.start()
    supervisor = asyncio.create_task(_supervise(), name="loop-supervisor")
    try:
        yield
    finally:
        supervisor.cancel()
        with suppress(asyncio.CancelledError):
            await supervisor
        for loop in started:
            await asyncio.to_thread(loop.stop)
