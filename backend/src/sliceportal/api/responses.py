"""Every operation's error answers, documented as what they are: RFC 9457 problem+json.

FastAPI documents only 422 and as ``application/json`` with its own shape; clients (and
schemathesis' conformance checks) would then find our real answers — 401, 404, 409, 412,
429 … as ``application/problem+json`` — contradicting the document. ``problem_openapi``
adds the statuses any operation may answer (an operation's own description wins) and gives
every 4xx/5xx the Problem schema and media type.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Response
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from pydantic_core import to_json

from sliceportal.api.errors import PROBLEM_JSON, Problem

COMMON_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "malformed request (e.g. an If-Match that is not an ETag of this API)"},
    401: {"description": "not authenticated: log in or send an API key"},
    403: {"description": "authenticated, but the role or key may not do this"},
    404: {"description": "no such object (or not visible to this principal)"},
    409: {"description": "conflicts with existing objects"},
    412: {"description": "the object changed since the version named (If-Match / version)"},
    413: {"description": "request body too large"},
    422: {"description": "validation failed; `errors` names each field"},
    428: {"description": "an update must name the version it is based on"},
    429: {"description": "too many requests; see Retry-After"},
}


def problem_openapi(app: FastAPI) -> dict[str, Any]:
    if app.openapi_schema:
        return app.openapi_schema
    spec = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    problem = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(problem.pop("$defs", {}))
    schemas["Problem"] = problem
    ref = {"schema": {"$ref": "#/components/schemas/Problem"}}
    for operations in spec.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for status, common in COMMON_ERRORS.items():
                responses.setdefault(str(status), dict(common))
            for status, response in responses.items():
                if str(status)[0] in "45":
                    response["content"] = {PROBLEM_JSON: ref}
    used = repr(spec["paths"])
    for name in ("HTTPValidationError", "ValidationError"):
        if f"/{name}'" not in used and name in schemas:
            del schemas[name]
    app.openapi_schema = spec
    return spec


def plain_json(content: Any) -> Response:
    """An answer written as JSON straight from plain data (dicts of the columns read) by
    pydantic's core, for hot reads whose rows have their response model's types already:
    the same JSON as the model's (its serializers are the same), without building and
    validating a model per row, which was most of such a request's CPU. The route keeps its
    ``response_model`` for the OpenAPI document; a test compares the two answers' bytes."""
    return Response(to_json(content), media_type="application/json")


def model_json(model: BaseModel, status_code: int = 200) -> Response:
    """A route's answer, built and validated as its response model inside the route's thread,
    written as JSON there too. FastAPI validates a ``def`` route's returned value again in the
    shared thread pool, after the route's thread is given back and while the request's session
    still holds its pooled connection: under load every thread could end up waiting for a
    connection held by a request waiting for a thread (docs/scale.md, open-loop load). A write's
    answer, validated once here, is not validated a second time (a tenth of a create's CPU)."""
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")
