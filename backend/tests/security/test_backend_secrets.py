"""A backend's secret options (an XDP agent's bearer token) are stored for the driver and never
shown back: not in API answers, not in the audit log, not echoed by an options error."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.core.redaction import REDACTED
from sliceportal.models import AuditLog, Backend, Role
from tests.factories import login, make_user

TOKEN = "s3cret-agent-token-0123456789"


def _op(client: TestClient, session: Session) -> dict[str, str]:
    make_user(session, "op", Role.OPERATOR)
    return login(client, "op")


def test_an_agent_token_is_stored_but_never_shown(client: TestClient, session: Session) -> None:
    op = _op(client, session)
    r = client.post(
        "/api/v1/backends",
        headers=op,
        json={"name": "xdp-remote", "driver": "xdp", "options": {"address": "tcp:127.0.0.1:9", "agent_token": TOKEN}},
    )
    assert r.status_code == 201, r.text
    b = r.json()
    assert b["options"]["agent_token"] == REDACTED
    assert TOKEN not in client.get(f"/api/v1/backends/{b['id']}", headers=op).text
    assert TOKEN not in client.get("/api/v1/backends", headers=op).text
    # a client PATCHes the options it read back, redacted token and all: the stored token stays
    r = client.patch(
        f"/api/v1/backends/{b['id']}",
        headers=op,
        json={"options": {**b["options"], "agent_timeout_s": 20}, "version": b["version"]},
    )
    assert r.status_code == 200, r.text
    session.expire_all()
    stored = session.scalar(select(Backend).where(Backend.id == b["id"]))
    assert stored is not None and stored.options["agent_token"] == TOKEN
    assert stored.options["agent_timeout_s"] == 20
    # a new token replaces it, and the audit trail of all three changes never holds a token
    r = client.patch(
        f"/api/v1/backends/{b['id']}",
        headers=op,
        json={"options": {**b["options"], "agent_token": TOKEN[::-1]}, "version": r.json()["version"]},
    )
    assert r.status_code == 200, r.text
    session.expire_all()
    assert session.scalar(select(Backend.options).where(Backend.id == b["id"]))["agent_token"] == TOKEN[::-1]
    rows = list(session.scalars(select(AuditLog).where(AuditLog.object_type == "backend")))
    assert len(rows) >= 3  # the create, both edits (and the health probes' updates)
    for row in rows:
        for snap in (row.before, row.after):
            assert snap is None or snap["options"]["agent_token"] == REDACTED
    audit = client.get("/api/v1/audit", headers=op, params={"object_type": "backend"}).text
    assert TOKEN not in audit and TOKEN[::-1] not in audit


def test_an_options_error_names_fields_not_values(client: TestClient, session: Session) -> None:
    op = _op(client, session)
    # refused by the driver's own model check (an agent address beside a local interface)
    r = client.post(
        "/api/v1/backends",
        headers=op,
        json={
            "name": "xdp-bad",
            "driver": "xdp",
            "options": {"address": "tcp:127.0.0.1:9", "agent_token": TOKEN, "interface": "eth0"},
        },
    )
    assert r.status_code == 422, r.text
    assert "interface" in r.text and TOKEN not in r.text
    assert session.scalar(select(Backend).where(Backend.name == "xdp-bad")) is None
