"""Secrets among a backend's driver options (an agent's bearer token, ...).

A driver option whose name ends in ``_token``, ``_secret`` or ``_password`` holds a secret (the
driver contract states the convention). The portal stores it, because the driver needs it, and
never shows it back: API answers and audit snapshots carry ``REDACTED`` in its place, and an
update that sends ``REDACTED`` back (a client that read the backend and PATCHes its options
whole) keeps the stored value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REDACTED = "<redacted>"
SECRET_SUFFIXES = ("_token", "_secret", "_password")


def is_secret(key: str) -> bool:
    return key.endswith(SECRET_SUFFIXES)


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options as they may be shown: secret values replaced (top-level keys: driver options are flat
    at their secrets)."""
    return {k: (REDACTED if is_secret(k) and v is not None else v) for k, v in options.items()}


def keep_secrets(new: Mapping[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    """``new`` with every secret sent back as ``REDACTED`` replaced by the stored value."""
    return {k: (stored.get(k) if is_secret(k) and v == REDACTED else v) for k, v in new.items()}
