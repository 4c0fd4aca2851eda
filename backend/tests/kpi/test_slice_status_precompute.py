"""Slice status computed ahead of the read (issue #28): a deploy stores what it put in force
and, as the wanted digests, what it compiled, keyed by the generations read before its
compile; the controller's ``FootprintRefresher`` recomputes them on the NOTIFY of a change
(migration 0018) or of a completed push. So the first read after a deploy or an edit compiles
nothing -- and an edit that lands while a deploy runs still ends ``pending``. Against the real
p4rt driver and the bundled P4Runtime target."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.drivers.contract import ProgressEvent
from sliceportal.models import Backend, BackendFootprint, DeploymentStatus, RuleSet
from sliceportal.services import footprint_state
from sliceportal.services.deployments import deploy, rollback
from sliceportal.services.footprint_refresher import FootprintRefresher
from sliceportal.services.slice_status import refresh_wanted
from sliceportal_testbed.processes import RunningTarget
from tests.api.test_query_counts import statements
from tests.factories import wait_until
from tests.kpi.test_slice_state_stored import EIGHT_QUEUES, SLA, _deploy, _edit_sla, _states, _world

DEADLINE_S = 30.0


def _row(session: Session, bid: int) -> BackendFootprint | None:
    session.rollback()  # a fresh snapshot
    return session.scalar(select(BackendFootprint).where(BackendFootprint.backend_id == bid))


def _rule_set_id(session: Session, bid: int, number: int) -> int:
    session.rollback()
    return int(session.scalar(select(RuleSet.id).where(RuleSet.backend_id == bid, RuleSet.number == number)) or 0)


def _reads_compile(client: TestClient, op: dict[str, str], db_url: str, sid: int) -> list[str]:
    """The statements of the list and read pages that only a compile issues (subscribers, IRs)."""
    with statements(db_url) as seen:
        for path in ("/api/v1/slices?limit=50", f"/api/v1/slices/{sid}"):
            assert client.get(path, headers=op).status_code == 200
    return [s for s in seen if "subscriber" in s or "rule_set.ir" in s]


@pytest.fixture
def refresher(db_url: str, session: Session) -> Iterator[FootprintRefresher]:
    r = FootprintRefresher(sessionmaker(bind=session.get_bind()), db_url, poll_s=600)  # NOTIFYs only
    r.start()
    assert r.listening.wait(10)
    yield r
    r.stop()


def _until_current(session: Session, bid: int, rule_set_id: int, wait_s: float = DEADLINE_S) -> BackendFootprint:
    """The backend's stored wanted digests once they are for ``rule_set_id`` and the
    configuration as it is now (computed by someone other than a read: no read runs meanwhile)."""

    def current() -> BackendFootprint | None:
        row = _row(session, bid)
        current_key = footprint_state.input_key(session, bid)
        return row if row is not None and (row.rule_set_id, row.input_key) == (rule_set_id, current_key) else None

    row: BackendFootprint = wait_until(
        f"stored digests of rule set {rule_set_id}, current", current, wait_s, poll_s=0.05
    )
    return row


def test_a_deploy_stores_what_it_compiled(
    client: TestClient, session: Session, op: dict[str, str], db_url: str, start_target: Callable[..., RunningTarget]
) -> None:
    bid, _, sid = _world(client, op, start_target(*EIGHT_QUEUES).address)
    _deploy(client, op, bid)
    row = _until_current(session, bid, _rule_set_id(session, bid, 1), wait_s=0)  # stored by the deploy itself
    # the first reads after the deploy compile nothing
    assert _reads_compile(client, op, db_url, sid) == []
    assert _states(client, op, sid) == ("deployed",) * 3
    stored = dict(row.wanted)
    # what the deploy stored is what a read would have computed for the rule set in force
    session.delete(row)
    session.commit()
    backend = session.get_one(Backend, bid)
    assert refresh_wanted(session, [backend]) == [bid]
    assert dict(_until_current(session, bid, _rule_set_id(session, bid, 1), wait_s=0).wanted) == stored


def test_a_slice_edited_while_a_deploy_runs_ends_pending_computed_ahead(
    client: TestClient,
    session: Session,
    op: dict[str, str],
    db_url: str,
    start_target: Callable[..., RunningTarget],
    refresher: FootprintRefresher,
) -> None:
    bid, _, sid = _world(client, op, start_target(*EIGHT_QUEUES).address)
    _deploy(client, op, bid)
    edited: list[int] = []

    def edit_mid_push(event: ProgressEvent) -> None:
        if edited:
            return
        # rule set 2 was compiled before this edit, and is being pushed
        _edit_sla(client, op, sid, SLA | {"rate_limit_mbps": 40})
        edited.append(1)

    dep = deploy(session, session.get_one(Backend, bid), "test", progress=edit_mid_push)
    assert dep.status == DeploymentStatus.SUCCEEDED and dep.rule_set_number == 2 and edited
    # the deploy stored rule set 2's digests under the key read before the edit: the refresher
    # finds them stale and computes them for the edited configuration, before any read
    _until_current(session, bid, _rule_set_id(session, bid, 2))
    assert _reads_compile(client, op, db_url, sid) == []
    assert _states(client, op, sid) == ("pending",) * 3

    # a rollback puts rule set 1 in force: computed ahead too, and still pending (edited since)
    session.rollback()
    back = rollback(session, session.get_one(Backend, bid), 1, "test")
    assert back.status == DeploymentStatus.SUCCEEDED
    _until_current(session, bid, _rule_set_id(session, bid, 1))
    assert _reads_compile(client, op, db_url, sid) == []
    assert _states(client, op, sid) == ("pending",) * 3
    _deploy(client, op, bid)
    assert _states(client, op, sid) == ("deployed",) * 3
    # an edit alone: the triggers' NOTIFY wakes the refresher (migration 0018)
    _edit_sla(client, op, sid, SLA)
    _until_current(session, bid, _rule_set_id(session, bid, 3))
    assert _reads_compile(client, op, db_url, sid) == []
    assert _states(client, op, sid) == ("pending",) * 3
