"""Driver discovery: classes registered under the entry-point group ``sliceportal.drivers``.

Each plugin is loaded and validated on its own (napalm / pluggy style): a plugin that does
not import, or whose class does not satisfy ``contract.Driver`` (signatures included), is
reported in ``DriverRegistry.failures`` with the reason, and every other plugin still
loads. Nothing here touches a data plane: classes are inspected, never instantiated.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from sliceportal.drivers.contract import Driver, DriverError

ENTRY_POINT_GROUP = "sliceportal.drivers"

# The protocol's members, read from the contract itself so a new method is checked too.
PROTOCOL_METHODS: tuple[str, ...] = tuple(
    name
    for name, member in vars(Driver).items()
    if callable(member) and (not name.startswith("_") or name == "__init__")
)


class DriverPluginError(DriverError):
    """A plugin cannot be used; the message names the plugin and what is wrong."""

    def __init__(self, plugin: str, reason: str) -> None:
        super().__init__(
            f"driver plugin {plugin!r}: {reason}",
            hint=f"fix the package that registers {plugin!r} under the {ENTRY_POINT_GROUP!r} entry points",
        )
        self.plugin = plugin
        self.reason = reason


class UnknownDriverError(DriverError):
    pass


@dataclass(frozen=True, slots=True)
class PluginFailure:
    plugin: str
    target: str  # the entry point's "module:attr"
    reason: str


@dataclass(frozen=True, slots=True)
class DriverRegistry:
    drivers: Mapping[str, type[Driver]] = field(default_factory=dict)
    failures: tuple[PluginFailure, ...] = ()

    def names(self) -> list[str]:
        return sorted(self.drivers)

    def get(self, name: str) -> type[Driver]:
        cls = self.drivers.get(name)
        if cls is not None:
            return cls
        for f in self.failures:
            if f.plugin == name:
                raise UnknownDriverError(f"driver {name!r} is installed but unusable: {f.reason}")
        raise UnknownDriverError(
            f"no driver named {name!r}; installed: {', '.join(self.names()) or 'none'}",
            hint=f"install a package registering {name!r} under {ENTRY_POINT_GROUP!r}",
        )

    def create(self, name: str, options: Mapping[str, Any]) -> Driver:
        return self.get(name)(options)


def _params(fn: Any) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]


def _return_hint(owner: type, name: str) -> Any:
    try:
        return typing.get_type_hints(getattr(owner, name)).get("return", inspect.Signature.empty)
    except Exception:  # unresolvable annotations are reported by the caller
        return None


def _check_method(cls: type, name: str, plugin: str) -> None:
    impl = inspect.getattr_static(cls, name, None)
    if impl is None or (name == "__init__" and impl is object.__init__):
        raise DriverPluginError(plugin, f"{cls.__qualname__} lacks the method {name}()")
    if isinstance(impl, staticmethod | classmethod) or not callable(impl):
        raise DriverPluginError(plugin, f"{cls.__qualname__}.{name} must be a plain method")
    want = _params(getattr(Driver, name))
    try:
        have = _params(getattr(cls, name))
    except (TypeError, ValueError) as e:
        raise DriverPluginError(plugin, f"{cls.__qualname__}.{name} has no inspectable signature: {e}") from e
    required_extra = [p.name for p in have[len(want) :] if p.default is inspect.Parameter.empty]
    mismatch = len(have) < len(want) or any(
        h.name != w.name or h.kind != w.kind for h, w in zip(have, want, strict=False)
    )
    if mismatch or required_extra:
        sig_want = ", ".join(p.name for p in want)
        sig_have = ", ".join(p.name for p in have)
        raise DriverPluginError(
            plugin,
            f"{cls.__qualname__}.{name}({sig_have}) does not match the contract's {name}({sig_want})",
        )
    if name == "__init__":
        return
    expected = _return_hint(Driver, name)
    got = _return_hint(cls, name)
    if got is None:
        raise DriverPluginError(plugin, f"the annotations of {cls.__qualname__}.{name} do not resolve")
    if got is inspect.Signature.empty or expected in (None, inspect.Signature.empty):
        return
    ok = got == expected or (inspect.isclass(got) and inspect.isclass(expected) and issubclass(got, expected))
    if not ok:
        raise DriverPluginError(plugin, f"{cls.__qualname__}.{name} returns {got!r}, the contract says {expected!r}")


def validate_driver_class(obj: object, plugin: str) -> type[Driver]:
    """Check that ``obj`` is a usable driver class; raise ``DriverPluginError`` if not."""
    if not inspect.isclass(obj):
        raise DriverPluginError(plugin, f"the entry point loads {type(obj).__name__} {obj!r}, not a class")
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        raise DriverPluginError(plugin, f"{obj.__qualname__} lacks a non-empty `name: ClassVar[str]`")
    if name != plugin:
        raise DriverPluginError(plugin, f"{obj.__qualname__}.name is {name!r}, but it is registered as {plugin!r}")
    if inspect.isabstract(obj):
        missing = ", ".join(sorted(getattr(obj, "__abstractmethods__", ())))
        raise DriverPluginError(plugin, f"{obj.__qualname__} is abstract (unimplemented: {missing})")
    for method in PROTOCOL_METHODS:
        _check_method(obj, method, plugin)
    return typing.cast(type[Driver], obj)


def discover(eps: Iterable[EntryPoint] | None = None) -> DriverRegistry:
    """Load and validate every registered driver; one broken plugin never hides the others."""
    found = list(entry_points(group=ENTRY_POINT_GROUP) if eps is None else eps)
    drivers: dict[str, type[Driver]] = {}
    failures: list[PluginFailure] = []
    for ep in sorted(found, key=lambda e: (e.name, e.value)):
        if ep.name in drivers or any(f.plugin == ep.name for f in failures):
            failures.append(PluginFailure(ep.name, ep.value, "another plugin already registers this name"))
            continue
        try:
            obj = ep.load()
        except Exception as e:  # a plugin's import error must not break discovery
            failures.append(PluginFailure(ep.name, ep.value, f"import failed: {type(e).__name__}: {e}"))
            continue
        try:
            drivers[ep.name] = validate_driver_class(obj, ep.name)
        except DriverPluginError as e:
            failures.append(PluginFailure(ep.name, ep.value, e.reason))
    return DriverRegistry(drivers=drivers, failures=tuple(failures))
