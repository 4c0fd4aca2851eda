"""The controller finds the testbed only through its entry point (#25 item 4): an install
without the ``sliceportal-testbed`` package runs the portal without one and says why."""

from __future__ import annotations

from importlib.metadata import EntryPoints

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.control import extensions
from sliceportal.control.controller import Controller
from sliceportal.core.config import Settings
from sliceportal.models import Role
from tests.factories import login, make_user


def test_without_the_testbed_package_the_controller_runs_and_says_so(
    client: TestClient, session: Session, db_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the Python environment of an install without the package: no entry point in the group
    monkeypatch.setattr(extensions, "entry_points", lambda **_: EntryPoints(()))
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    ctl = Controller(settings.model_copy(update={"testbed": True, "reconcile_interval_s": 0}), db_url, period_s=1.0)
    with ctl:
        assert ctl.wait_ready(10)
        assert ctl.testbed is None and ctl.testbed_starts == 0
        r = client.get("/api/v1/testbed", headers=op)
        assert r.status_code == 409 and "sliceportal-testbed) is not installed" in r.json()["detail"], r.text


def test_the_installed_testbed_is_found_only_when_enabled(db_url: str, settings: Settings) -> None:
    on = Controller(settings.model_copy(update={"testbed": True}), db_url)
    off = Controller(settings.model_copy(update={"testbed": False}), db_url)
    assert on._testbed_factory is extensions.find_factory() is not None
    assert off._testbed_factory is None
