"""An API worker sets the collector's thresholds when it starts (core/gc_policy.py: a full
collection walked every compiled rule set; bench/scale_backends.py measures the effect)."""

from __future__ import annotations

import gc

from fastapi.testclient import TestClient

from sliceportal.api.main import create_app
from sliceportal.core import gc_policy
from sliceportal.core.config import Settings


def test_a_worker_starting_sets_the_thresholds(db_url: str, settings: Settings) -> None:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's default, whatever an earlier test left
    try:
        with TestClient(create_app(settings, db_url)):
            assert gc.get_threshold() == gc_policy.THRESHOLDS
    finally:
        gc.set_threshold(*before)
