"""Slice status as stored state (issue #28): the list and read pages compare the stored
digest of a slice as the rule set in force holds it with its stored digest as compiled now,
and the second is recomputed exactly when what the slice compiles from changed (footprint
generations bumped by migration 0015's triggers). Against the real p4rt driver and the
bundled P4Runtime target: an edit while a deploy is pushing, subscriber add / remove /
import, a reconcile that finds drift it cannot repair, and the list page's statement count."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from sliceportal.drivers.contract import ProgressEvent
from sliceportal.models import Backend, BackendFootprint, DeploymentStatus
from sliceportal.services.deployments import deploy
from sliceportal_testbed.processes import RunningTarget, free_port
from tests.api.test_query_counts import statements
from tests.factories import add_backend, add_slice, add_tenant, deploy_backend, import_subscribers, slice_type_id

EIGHT_QUEUES = ("--priority-queues", "8")
SLA = {"rate_limit_mbps": 48, "max_delay_ms": 20, "max_loss_pct": 1}


def _world(client: TestClient, op: dict[str, str], address: str, users: int = 4) -> tuple[int, int, int]:
    """A p4rt backend, a tenant and one slice of ``users`` subscribers on it: (backend, tenant, slice)."""
    bid = int(add_backend(client, op, "bmv2", {"address": address})["id"])
    tenant = add_tenant(client, op)
    services = [{"name": "video", "lane": 4, "dst_ports": [{"lo": 5000, "hi": 5007}]}]
    sid = add_slice(client, op, tenant, "a", sla=SLA, services=services, backend_ids=[bid])
    _import(client, op, range(users))
    return bid, tenant, sid


def _import(client: TestClient, op: dict[str, str], users: range) -> None:
    import_subscribers(client, op, (f"00101{u:010d},10.45.{u // 250}.{u % 250 + 1},{u + 1},mvno-a,a" for u in users))


def _deploy(client: TestClient, op: dict[str, str], bid: int) -> None:
    dep = deploy_backend(client, op, bid)
    assert dep["status"] == "succeeded", dep


def _edit_sla(client: TestClient, op: dict[str, str], sid: int, sla: dict[str, float]) -> None:
    """The slice's SLA set to ``sla`` (at its current version)."""
    version = client.get(f"/api/v1/slices/{sid}", headers=op).json()["version"]
    r = client.patch(f"/api/v1/slices/{sid}", json={"sla": sla, "version": version}, headers=op)
    assert r.status_code == 200, r.text


def _states(client: TestClient, op: dict[str, str], sid: int) -> tuple[str, str, str]:
    """The slice's state as the list page, the read and the status page each say it."""
    listed = client.get("/api/v1/slices?limit=50", headers=op).json()["data"]
    read = client.get(f"/api/v1/slices/{sid}", headers=op).json()
    status = client.get(f"/api/v1/slices/{sid}/status", headers=op).json()
    return next(s["state"] for s in listed if s["id"] == sid), read["state"], status["state"]


def _wanted(session: Session, bid: int, sid: int) -> str:
    session.expire_all()
    row = session.scalar(select(BackendFootprint).where(BackendFootprint.backend_id == bid))
    assert row is not None
    return row.wanted[str(sid)]


def test_a_slice_edited_while_its_deploy_pushes_ends_pending(
    client: TestClient, session: Session, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    bid, _, sid = _world(client, op, start_target(*EIGHT_QUEUES).address)
    _deploy(client, op, bid)
    assert _states(client, op, sid) == ("deployed",) * 3  # the stored digests filled for rule set 1

    seen: list[tuple[str, ...]] = []

    def edit_mid_push(event: ProgressEvent) -> None:
        if seen:
            return
        # the rule set being pushed was compiled before this edit
        _edit_sla(client, op, sid, SLA | {"rate_limit_mbps": 40})
        seen.append(_states(client, op, sid))  # rule set 1 still in force, the edit already stored

    dep = deploy(session, session.get_one(Backend, bid), "test", progress=edit_mid_push)
    assert dep.status == DeploymentStatus.SUCCEEDED and dep.rule_set_number == 2
    assert seen == [("pending",) * 3]
    # rule set 2 is in force now, compiled without the edit: still pending, never a stale "deployed"
    assert _states(client, op, sid) == ("pending",) * 3
    st = client.get(f"/api/v1/slices/{sid}/status", headers=op).json()["backends"][0]
    assert st["rule_set_number"] == 2 and any("48000000 → 40000000" in c for c in st["changes"]), st
    _deploy(client, op, bid)
    assert _states(client, op, sid) == ("deployed",) * 3


def test_subscriber_add_remove_and_import_change_the_wanted_digest(
    client: TestClient, session: Session, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    bid, tenant, sid = _world(client, op, start_target(*EIGHT_QUEUES).address)
    _deploy(client, op, bid)
    assert _states(client, op, sid) == ("deployed",) * 3
    first = _wanted(session, bid, sid)

    r = client.post(
        "/api/v1/subscribers",
        json={"tenant_id": tenant, "imsi": "001019999999999", "ue_ip": "10.45.9.9", "teids": [999], "slice_ids": [sid]},
        headers=op,
    )
    assert r.status_code == 201, r.text
    assert _states(client, op, sid) == ("pending",) * 3
    added = _wanted(session, bid, sid)
    assert added != first
    _deploy(client, op, bid)
    assert _states(client, op, sid) == ("deployed",) * 3

    assert client.delete(f"/api/v1/subscribers/{r.json()['id']}", headers=op).status_code == 204
    assert _states(client, op, sid) == ("pending",) * 3
    assert _wanted(session, bid, sid) == first  # a digest of the content: back to the first configuration
    _deploy(client, op, bid)
    assert _states(client, op, sid) == ("deployed",) * 3

    _import(client, op, range(4, 6))
    assert _states(client, op, sid) == ("pending",) * 3
    assert _wanted(session, bid, sid) not in (first, added)


def test_a_reconcile_that_finds_drift_flips_the_state(
    client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    port = free_port()
    target = start_target(*EIGHT_QUEUES, "--grpc-port", str(port))
    bid, _, sid = _world(client, op, target.address)
    _deploy(client, op, bid)
    assert _states(client, op, sid) == ("deployed",) * 3
    target.stop()
    # back empty, and failing the repair's first write: drift found and not repaired
    start_target(*EIGHT_QUEUES, "--grpc-port", str(port), "--fail-write", "1")
    r = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op)
    assert r.status_code == 200 and r.json()["in_sync"] is False and r.json()["repaired"] is False, r.text
    assert _states(client, op, sid) == ("out_of_sync",) * 3
    r = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op)  # this time the repair writes
    assert r.status_code == 200 and r.json()["repaired"] is True, r.text
    assert _states(client, op, sid) == ("deployed",) * 3


def _list_statements(client: TestClient, op: dict[str, str], db_url: str) -> list[str]:
    client.get("/api/v1/slices?limit=50", headers=op)  # fills what a change left stale
    with statements(db_url) as seen:
        r = client.get("/api/v1/slices?limit=50", headers=op)
    assert r.status_code == 200 and {s["state"] for s in r.json()["data"]} == {"deployed"}
    return [s for s in seen if s.lstrip().upper().startswith("SELECT")]


def test_list_page_statements_do_not_grow_with_subscribers(
    client: TestClient, op: dict[str, str], db_url: str, start_target: Callable[..., RunningTarget]
) -> None:
    bid, _, _ = _world(client, op, start_target(*EIGHT_QUEUES).address, users=10)
    _deploy(client, op, bid)
    few = _list_statements(client, op, db_url)
    _import(client, op, range(10, 510))
    _deploy(client, op, bid)
    many = _list_statements(client, op, db_url)
    assert len(many) == len(few), many
    # nothing compiled: no subscriber (nor rule-set IR) read for a page of slices
    assert not [s for s in many if "subscriber" in s or "rule_set.ir" in s], many


def test_every_input_of_a_compile_bumps_the_slice_generation(
    client: TestClient, session: Session, op: dict[str, str]
) -> None:
    """The triggers of migration 0015 cover each thing a slice compiles from, and only those:
    checked on the database, with no backend (what the compiler reads: services/deployments.py
    domain_specs and services/intent_specs.py)."""
    tenant = add_tenant(client, op)
    st = slice_type_id(client, op, "Flexible Slice")
    sid = add_slice(client, op, tenant, "a", sla=SLA)
    _import(client, op, range(2))
    other = add_slice(client, op, tenant, "b")

    def gen() -> int:
        session.rollback()
        return int(
            session.scalar(
                text("SELECT coalesce((SELECT gen FROM slice_footprint_gen WHERE slice_id = :s), 0)"), {"s": sid}
            )
        )

    def bumps(sql: str, **binds: Any) -> bool:
        before = gen()
        session.execute(text(sql), {"s": sid, **binds})
        session.commit()
        return gen() != before

    assert bumps(
        "INSERT INTO service_class (slice_id, name, lane, dst_ports, dscp, protocol, version) "
        "VALUES (:s, 'x', 4, '[]', '{}', 'any', 1)"
    )
    assert bumps("UPDATE service_class SET lane = 2 WHERE slice_id = :s")
    assert bumps("DELETE FROM service_class WHERE slice_id = :s")
    assert bumps("UPDATE slice SET rate_limit_mbps = 40 WHERE id = :s")
    assert bumps(
        "UPDATE subscriber SET ue_ip = '10.45.7.7' WHERE id = (SELECT min(subscriber_id) "
        "FROM subscriber_slice WHERE slice_id = :s)"
    )
    assert bumps(
        "DELETE FROM subscriber_slice WHERE slice_id = :s AND subscriber_id = (SELECT min(subscriber_id) "
        "FROM subscriber_slice WHERE slice_id = :s)"
    )
    assert bumps("INSERT INTO subscriber_slice (subscriber_id, slice_id) SELECT min(id), :s FROM subscriber")
    assert bumps("UPDATE tenant SET vlan = 101 WHERE id = :t", t=tenant)
    assert not bumps("UPDATE slice_type SET lanes = lanes WHERE id = :st", st=st)  # written, not changed
    assert bumps("UPDATE slice_type SET lanes = array_append(lanes, 7) WHERE id = :st", st=st)
    # what a deploy writes, and what the compiler never reads, leave it alone
    assert not bumps("UPDATE slice SET state = 'deployed', description = 'x' WHERE id = :s")
    assert not bumps("UPDATE slice SET rate_limit_mbps = 8 WHERE id = :o", o=other)
