"""Conventions of the OpenAPI document that client generators and integrators rely on (#31)."""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Any

import pytest
from pydantic import BaseModel

from sliceportal import schemas
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


# a password is no example anyone should copy
NO_EXAMPLE = {"create_user"}


def _models() -> dict[str, type[BaseModel]]:
    """The API's models by name, as the spec names its components."""
    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(schemas.__path__):
        module = importlib.import_module(f"{schemas.__name__}.{info.name}")
        found.update({n: c for n, c in vars(module).items() if isinstance(c, type) and issubclass(c, BaseModel)})
    return found


def test_every_post_body_has_an_example_the_api_accepts(spec: dict[str, Any]) -> None:
    components, models = spec["components"]["schemas"], _models()
    missing, checked = [], 0
    for path, method, op in _operations(spec):
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
        if "$ref" not in body:
            continue
        name = body["$ref"].rsplit("/", 1)[1]
        examples = components[name].get("examples", [])
        if method == "post" and not examples and op["operationId"] not in NO_EXAMPLE:
            missing.append((method.upper(), path, name))
        for example in examples:  # the spec's examples are requests the API validates, not prose
            models[name].model_validate(example)
            checked += 1
    assert not missing, missing
    assert checked >= 10
