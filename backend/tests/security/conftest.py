"""Security findings of issue #18, each reproduced as the request an attacker would send."""

from __future__ import annotations

import pytest

from sliceportal.core.config import Settings, random_secret


@pytest.fixture
def settings() -> Settings:
    # The numbers: 5 failures per (user, address) before lock-out; a secret of its own.
    return Settings(secret_key=random_secret(), login_max_failures=5, reconcile_interval_s=0)
