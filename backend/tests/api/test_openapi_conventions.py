"""Conventions of the OpenAPI document that client generators and integrators rely on (#31)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings

# what anyone may call without a credential
PUBLIC = {"health", "login", "refresh", "logout", "metrics"}


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return create_app(Settings(), "postgresql+psycopg://unused@/unused").openapi()


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, ops in spec["paths"].items() for method, op in ops.items()]


def test_operation_ids_are_unique_snake_case_verbs(spec: dict[str, Any]) -> None:
    ids = [op["operationId"] for _, _, op in _operations(spec)]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    # the handler's name, never FastAPI's path-derived default (list_keys_api_v1_api_keys_get)
    bad = [i for i in ids if not re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", i) or "_api_v1_" in i]
    assert not bad, bad


def test_credentials_are_security_schemes_on_every_protected_operation(spec: dict[str, Any]) -> None:
    schemes = spec["components"]["securitySchemes"]
    assert schemes["APIKeyHeader"] == {**schemes["APIKeyHeader"], "type": "apiKey", "in": "header", "name": "X-API-Key"}
    assert schemes["OAuth2PasswordBearer"]["type"] == "oauth2"
    unguarded = []
    for path, method, op in _operations(spec):
        names = {name for requirement in op.get("security", []) for name in requirement}
        # the key is a scheme, not a header parameter each operation repeats
        assert not [p for p in op.get("parameters", []) if p["name"].lower() == "x-api-key"], (method, path)
        if op["operationId"] not in PUBLIC and names != {"APIKeyHeader", "OAuth2PasswordBearer"}:
            unguarded.append((method.upper(), path, sorted(names)))
    assert not unguarded, unguarded
