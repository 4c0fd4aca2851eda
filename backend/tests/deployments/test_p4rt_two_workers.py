"""Two API worker processes deploy to one P4Runtime backend in turn (#16: N stateless
workers): worker A is a second uvicorn process on the same database (tests/kpi/conftest.py),
B the app under test. Each push takes over the primary role on the switch, diffs against what
the switch holds (the other worker's push), and reconcile on either worker finds the switch in
sync with the rule set in force -- no spurious "restarted empty" repair."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.models import Deployment
from sliceportal_testbed.processes import RunningTarget
from tests.deployments.test_pipeline_p4rt import EIGHT_QUEUES, _setup
from tests.factories import import_subscribers
from tests.kpi.conftest import worker_a as worker_a


def _add_users(client: TestClient, op: dict[str, str], first: int, n: int) -> None:
    import_subscribers(
        client, op, (f"00101{u:010d},10.45.{u // 100}.{u % 100},{u + 1},mvno-a,embb" for u in range(first, first + n))
    )


@pytest.mark.timeout(300)
def test_two_workers_deploy_in_turn_and_reconcile_finds_them_in_sync(
    client: TestClient, session: Session, op: dict[str, str], worker_a: str, start_target: Callable[..., RunningTarget]
) -> None:
    target = start_target(*EIGHT_QUEUES)
    bid, _ = _setup(client, op, target.address)
    with httpx.Client(base_url=worker_a, headers=op, timeout=60) as a:
        for n, deploy in enumerate(
            [
                lambda: client.post(f"/api/v1/backends/{bid}/deployments", headers=op),
                lambda: a.post(f"/api/v1/backends/{bid}/deployments"),
                lambda: client.post(f"/api/v1/backends/{bid}/deployments", headers=op),
                lambda: a.post(f"/api/v1/backends/{bid}/deployments"),
            ]
        ):
            if n:
                _add_users(client, op, 1000 * n, 3)  # a new rule set each time
            r = deploy()
            assert r.status_code == 201, r.text
            assert r.json()["status"] == "succeeded", r.json()
            for reconcile in (
                lambda: client.post(f"/api/v1/backends/{bid}/reconcile", headers=op),
                lambda: a.post(f"/api/v1/backends/{bid}/reconcile"),
            ):
                rec = reconcile()
                assert rec.status_code == 200, rec.text
                assert rec.json()["in_sync"] is True, rec.json()
        session.expire_all()
        kinds = [str(d.kind) for d in session.scalars(select(Deployment).where(Deployment.backend_id == bid))]
        assert kinds == ["deploy"] * 4  # no repair was needed, none recorded
