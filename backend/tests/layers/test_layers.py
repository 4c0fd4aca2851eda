"""Layering (docs/architecture.md, issue #16): no layer imports a higher one, only ``api`` knows HTTP.

The contracts are in ``contracts.ini`` (import-linter): direct and indirect imports, lazy ones
inside functions included.
"""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

import sliceportal
from sliceportal.control import extensions

CONTRACTS = Path(__file__).with_name("contracts.ini")
# the packages the contracts leave free, each for a reason: entry points and process supervision
# sit on top (cli and its p4rt_cli, asgi, control), schemas are the API's shapes, migrations
# only read models.
# The testbed is no package of the product at all (sliceportal_testbed, #25): two contracts of
# its own keep it a user of the product.
OUTSIDE = {"cli", "p4rt_cli", "asgi", "control", "schemas", "migrations"}


def test_the_layers_hold(capsys: pytest.CaptureFixture[str]) -> None:
    code = lint_imports(config_filename=str(CONTRACTS), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out


def test_every_package_is_placed() -> None:
    """A new package is put in a layer (or knowingly left out), not silently unchecked."""
    ini = configparser.ConfigParser()
    ini.read(CONTRACTS)
    layered = {
        part.strip()
        for line in ini["importlinter:contract:layers"]["layers"].split("\n")
        for part in line.replace(":", "|").split("|")
        if part.strip()
    }
    root = Path(sliceportal.__file__).parent
    packages = {p.name for p in root.iterdir() if (p / "__init__.py").exists()} | {
        p.stem for p in root.glob("*.py") if p.stem != "__init__"
    }
    assert packages - layered - OUTSIDE == set()
    assert layered & OUTSIDE == set()


def test_the_testbed_stays_a_user_of_the_product() -> None:
    """The testbed's contracts are kept in the file (the product never imports it; it uses no API
    internals nor controller machinery), and the product finds it only through its entry point."""
    ini = configparser.ConfigParser()
    ini.read(CONTRACTS)
    outside = ini["importlinter:contract:testbed-outside"]
    assert (outside["source_modules"].split(), outside["forbidden_modules"].split()) == (
        ["sliceportal"],
        ["sliceportal_testbed"],
    )
    assert "sliceportal_testbed" in ini["importlinter:contract:testbed-user"]["source_modules"].split()
    assert not (Path(sliceportal.__file__).parent / "testbed").exists()
    factory = extensions.find_factory()
    assert factory is not None and factory.__module__ == "sliceportal_testbed.extension"
    assert extensions.find_factory("no-such-extension") is None
