"""What an API worker does around serving requests: end what a dead process left running.

The control loops (reconciler, health prober) and the live testbed are not the API's: one
controller process in the cluster runs them (``control/controller.py``), so that any
number of API workers can serve the same database.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI
from sqlalchemy.exc import DBAPIError

from sliceportal.services.deployments import interrupt_all_orphans

log = logging.getLogger(__name__)


def end_interrupted(app: FastAPI) -> None:
    """Deployments a dead process left ``running`` end as failed (interrupted) before anything
    else; a deployment another worker is pushing holds its backend's lock and is left alone."""
    try:
        n = interrupt_all_orphans(app.state.sessionmaker)
    except DBAPIError as exc:  # the database is not up yet: the first lock holder ends them instead
        log.warning("could not check for interrupted deployments at start-up: %s", str(exc).splitlines()[0])
        return
    if n:
        log.warning("%d deployment(s) left running by an earlier process marked failed (interrupted)", n)
