"""Backend records ↔ driver plugins: construct a backend's driver and learn its geometry."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from sliceportal.api.errors import ApiError
from sliceportal.drivers.contract import Driver, DriverError
from sliceportal.models import Backend


def driver_names() -> list[str]:
    return sorted(ep.name for ep in entry_points(group="sliceportal.drivers"))


def driver_class(name: str) -> type[Driver]:
    for ep in entry_points(group="sliceportal.drivers"):
        if ep.name == name:
            cls: Any = ep.load()
            return cls  # type: ignore[no-any-return]
    raise ApiError(422, "Validation failed", f"no driver {name!r} is installed; installed: {driver_names()}",
                   field="driver")


def open_driver(backend: Backend) -> Driver:
    return driver_class(backend.driver)(backend.options)


def describe(backend: Backend) -> None:
    """Fill geometry, capacity and health from the driver; refuse an unknown driver."""
    cls = driver_class(backend.driver)
    try:
        driver = cls(backend.options)
        try:
            caps = driver.capabilities()
            health = driver.health()
        finally:
            driver.close()
    except DriverError as exc:
        backend.health, backend.health_detail = "unreachable", exc.message
        return
    except (TypeError, ValueError, KeyError) as exc:
        raise ApiError(422, "Validation failed", f"options rejected by the {backend.driver} driver: {exc}",
                       field="options") from exc
    backend.paths, backend.lanes, backend.capacity = caps.paths, caps.lanes, dict(caps.capacity)
    backend.health = "ok" if health.ok else "down"
    backend.health_detail = health.detail
