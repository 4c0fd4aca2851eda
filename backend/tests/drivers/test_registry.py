"""Driver discovery through entry points, validated against the contract at load."""

from __future__ import annotations

import types
from collections.abc import Mapping
from importlib.metadata import EntryPoint
from typing import Any, ClassVar

import pytest

from sliceportal.drivers.contract import Health
from sliceportal.drivers.registry import (
    ENTRY_POINT_GROUP,
    DriverPluginError,
    UnknownDriverError,
    discover,
    validate_driver_class,
)


def ep(name: str, attr: str, module: str = "sliceportal_test_plugins") -> EntryPoint:
    return EntryPoint(name=name, value=f"{module}:{attr}", group=ENTRY_POINT_GROUP)


def variant(base: type, name: str = "memory", **members: Any) -> type:
    return type("Variant", (base,), {"name": name, **members})


def test_good_plugin_loads_and_broken_ones_are_reported(plugin_module: types.ModuleType) -> None:
    good = plugin_module.MemoryDriver

    def lower(self, rules):  # type: ignore[no-untyped-def]  # wrong parameter name
        return None

    def health(self, verbose):  # type: ignore[no-untyped-def]  # extra required parameter
        return None

    def counters(self) -> Health:  # wrong return type
        raise NotImplementedError

    plugin_module.WrongLower = variant(good, "wrong_lower", lower=lower)
    plugin_module.ExtraArg = variant(good, "extra_arg", health=health)
    plugin_module.WrongReturn = variant(good, "wrong_return", counters=counters)
    plugin_module.NoName = variant(good, "")
    plugin_module.NotAClass = good({"plane": None})
    plugin_module.Misnamed = variant(good, "something_else")
    eps = [
        ep("memory", "MemoryDriver"),
        ep("memory", "MemoryDriver"),  # registered twice
        ep("missing", "Driver", module="no_such_module_for_tests"),
        ep("wrong_lower", "WrongLower"),
        ep("extra_arg", "ExtraArg"),
        ep("wrong_return", "WrongReturn"),
        ep("no_name", "NoName"),
        ep("not_a_class", "NotAClass"),
        ep("misnamed", "Misnamed"),
    ]
    reg = discover(eps)
    assert reg.names() == ["memory"]
    reasons = {f.plugin: f.reason for f in reg.failures}
    assert "already registers" in reasons["memory"]
    assert "ModuleNotFoundError" in reasons["missing"]
    assert "lower(rules)" in reasons["wrong_lower"] and "lower(ir)" in reasons["wrong_lower"]
    assert "health(verbose)" in reasons["extra_arg"]
    assert "counters returns" in reasons["wrong_return"]
    assert "name" in reasons["no_name"]
    assert "not a class" in reasons["not_a_class"]
    assert "registered as 'misnamed'" in reasons["misnamed"]
    assert len(reg.failures) == len(eps) - 1


def test_get_and_create(plugin_module: types.ModuleType, plane: object) -> None:
    reg = discover([ep("memory", "MemoryDriver"), ep("gone", "X", module="no_such_module_for_tests")])
    d = reg.create("memory", {"plane": plane})
    assert d.health().ok
    with pytest.raises(UnknownDriverError, match="installed but unusable"):
        reg.get("gone")
    with pytest.raises(UnknownDriverError, match="installed: memory"):
        reg.get("nope")


def test_missing_method_is_named() -> None:
    class Half:
        name: ClassVar[str] = "half"

        def __init__(self, options: Mapping[str, Any]) -> None:
            pass

        def capabilities(self):  # type: ignore[no-untyped-def]  # no annotation: not checked
            pass

    with pytest.raises(DriverPluginError, match=r"'half'.*lacks the method lower\(\)"):
        validate_driver_class(Half, "half")


def test_the_installed_plugins_never_break_discovery() -> None:
    # Whatever state the real driver packages are in, each is either loaded or reported.
    from importlib.metadata import entry_points

    installed = {e.name for e in entry_points(group=ENTRY_POINT_GROUP)}
    reg = discover()
    assert set(reg.names()) | {f.plugin for f in reg.failures} == installed
