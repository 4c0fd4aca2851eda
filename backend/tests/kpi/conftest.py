"""Fixtures shared by the KPI tests that need a second portal process on the same database."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.core.config import Settings
from sliceportal.models import Backend, Role
from sliceportal_testbed.processes import free_port
from tests.factories import login, make_user, serving, slice_type_id, tenant_body

# Worker A: the same app factory under uvicorn in its own process, on the same database.
WORKER = """
import sys, uvicorn
from sliceportal.api.main import create_app
from sliceportal.core.config import Settings
app = create_app(Settings(secret_key=sys.argv[1], reconcile_interval_s=0), sys.argv[2])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[3]), log_level="warning", timeout_graceful_shutdown=1)
"""


@pytest.fixture
def op(client: TestClient, session: Session) -> dict[str, str]:
    """An operator's headers (a module may define its own)."""
    make_user(session, "op", Role.OPERATOR)
    return login(client, "op")


@pytest.fixture
def worker_a(db_url: str, settings: Settings) -> Iterator[str]:
    base = f"http://127.0.0.1:{free_port()}"
    argv = [sys.executable, "-c", WORKER, settings.secret_key, db_url, base.rsplit(":", 1)[1]]
    with serving("worker A", argv, f"{base}/api/v1/health"):
        yield base


@pytest.fixture
def tenants(client: TestClient, session: Session) -> dict[str, int]:
    """Slices of two tenants (red, blue) and one backend; ids by name."""
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    st = slice_type_id(client, op, "Dual Best Effort + Low Latency")
    ids: dict[str, int] = {}
    for name, vni, vlan in (("red", 1, 1), ("blue", 2, 2)):
        t = client.post("/api/v1/tenants", json=tenant_body(name, vni, vlan), headers=op).json()["id"]
        r = client.post(
            "/api/v1/slices",
            json={"name": f"{name}-s", "tenant_id": t, "slice_type_id": st, "sla": {"max_loss_pct": 1}},
            headers=op,
        )
        ids[name] = r.json()["id"]
        if name == "red":
            make_user(session, "red-view", Role.TENANT, tenant_id=t)
    backend = Backend(name="xdp-a", driver="xdp")
    session.add(backend)
    session.commit()
    ids["backend"] = backend.id
    return ids
