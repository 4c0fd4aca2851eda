"""The controller's extension point: what a package outside the product runs with the leader's term.

The emulated testbed of ``make run`` (the ``sliceportal-testbed`` workspace package) is such an
extension: the product never imports it (an import-linter contract holds that), it finds it
through the entry point group ``sliceportal.controller_extensions``. With the setting
``testbed`` (``sliceportal run``; ``--no-testbed`` / ``TESTBED=false`` turn it off) the leading
controller creates the extension when it leads, reports its state every beat, hands it the
congestion scenarios the API recorded, keeps it across a lease lost with the database (issue
#26) and stops it when another controller leads or it stops.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable

from sqlalchemy.orm import Session, sessionmaker

from sliceportal.core.config import Settings
from sliceportal.kpi.hub import KpiHub
from sliceportal.schemas.testbed import TestbedState

log = logging.getLogger(__name__)

GROUP = "sliceportal.controller_extensions"
NAME = "testbed"  # the one extension the controller runs today: the emulated testbed


class BackendDown(RuntimeError):
    """A congestion scenario for a backend whose data plane is down (the API answers 409)."""


class ScenarioRefused(RuntimeError):
    """A congestion scenario the extension cannot apply on that backend (no rate to lower)."""


@dataclass(frozen=True)
class ExtensionContext:
    """What the controller hands an extension it creates."""

    sessions: sessionmaker[Session]
    hub: KpiHub
    settings: Settings


@runtime_checkable
class ControllerExtension(Protocol):
    """What the leading controller calls on its extension (see the module's docstring)."""

    @property
    def running(self) -> bool:
        """False once it stopped or failed for good: such an extension is not kept across a blip."""
        ...

    def start(self) -> None:
        """Start (when the controller leads); never raises: a failure is told in ``state()``."""
        ...

    def stop(self) -> None:
        """Stop and clean up (the controller stops, or another controller leads)."""
        ...

    def state(self) -> TestbedState:
        """What the API shows (``GET /testbed``); called every beat."""
        ...

    def base_pps(self) -> dict[int, float]:
        """Per backend id, the packets/s it is offered (what a congestion factor divides)."""
        ...

    def congest_until(self, backend_id: int, until: datetime, factor: float) -> object:
        """Overload a backend until ``until``. Raises ``KeyError`` (not one of its backends),
        ``BackendDown`` or ``ScenarioRefused``."""
        ...

    def end_congestion(self, backend_id: int) -> bool:
        """End a backend's running scenario now; False when none ran there."""
        ...


class ExtensionFactory(Protocol):
    def __call__(self, context: ExtensionContext) -> ControllerExtension: ...


def find_factory(name: str = NAME) -> ExtensionFactory | None:
    """The installed extension called ``name``, or None when no installed package provides it."""
    found = entry_points(group=GROUP, name=name)
    if not found:
        return None
    ep = next(iter(found))
    factory: ExtensionFactory = ep.load()
    log.info("controller extension %r from %s", name, ep.value)
    return factory
