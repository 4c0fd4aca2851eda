"""A slice deploy compiles each backend once (#31 item 4): the preflight's compile, made to
refuse before any push, is what each backend's deploy pushes -- unless something it was
compiled from changed in between, and then that backend compiles again. Against bundled
P4Runtime targets over gRPC."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker

from sliceportal.core.process_metrics import REGISTRY
from sliceportal.models import Slice
from sliceportal.models.audit import Actor
from sliceportal.services import slice_deploy
from sliceportal_testbed.processes import RunningTarget
from tests.factories import add_backend, add_slice, add_tenant, import_subscribers, ue_rows

EIGHT_QUEUES = ("--priority-queues", "8")


def _compiles() -> float:
    """Compiles this process ran (its ``sliceportal_compile_duration_seconds`` count, p4rt)."""
    return REGISTRY.get_sample_value("sliceportal_compile_duration_seconds_count", {"driver": "p4rt"}) or 0.0


def _slice_on(client: TestClient, op: dict[str, str], addresses: list[str]) -> tuple[int, list[int]]:
    backends = [int(add_backend(client, op, f"p4-{i}", {"address": a})["id"]) for i, a in enumerate(addresses)]
    sid = add_slice(
        client,
        op,
        add_tenant(client, op),
        sla={"rate_limit_mbps": 48},
        services=[{"name": "video", "lane": 0, "dst_ports": [{"lo": 5000, "hi": 5007}]}],
        backend_ids=backends,
    )
    import_subscribers(client, op, ue_rows((1, 2)))
    return sid, backends


def _in_force_digest(client: TestClient, op: dict[str, str], bid: int) -> Any:
    history = client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json()["data"]
    number = history[0]["rule_set_number"]
    return client.get(f"/api/v1/backends/{bid}/rule-sets/{number}", headers=op).json()["digest"]


def test_each_slice_set_compiles_once(
    client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    """Three backends, two carrying only the slice and one carrying another slice too: two
    distinct slice sets, two compiles (was two per backend: preflight, then the push; then one
    per backend, #28 item 2)."""
    targets = [start_target(*EIGHT_QUEUES) for _ in range(3)]
    sid, backends = _slice_on(client, op, [t.address for t in targets])
    add_slice(
        client,
        op,
        add_tenant(client, op, name="other", vni=5002, vlan=101),
        name="other",
        sla={"rate_limit_mbps": 8},
        services=[{"name": "web", "lane": 0, "dst_ports": [{"lo": 80, "hi": 80}]}],
        backend_ids=backends[2:],
    )
    before = _compiles()
    r = client.post(f"/api/v1/slices/{sid}/deploy", headers=op)
    assert r.status_code == 200, r.text
    assert {b["status"] for b in r.json()["backends"]} == {"succeeded"}
    assert _compiles() - before == 2
    # what each backend was given is what it compiles to alone
    for bid in backends:
        alone = client.get(f"/api/v1/backends/{bid}/preview", headers=op).json()
        assert alone["version"] == _in_force_digest(client, op, bid)
    assert _in_force_digest(client, op, backends[0]) == _in_force_digest(client, op, backends[1])
    assert _in_force_digest(client, op, backends[2]) != _in_force_digest(client, op, backends[0])


def test_an_edit_after_the_preflight_is_compiled_again(
    client: TestClient, op: dict[str, str], db_url: str, start_target: Callable[..., RunningTarget]
) -> None:
    target = start_target(*EIGHT_QUEUES)
    sid, (bid,) = _slice_on(client, op, [target.address])
    engine = create_engine(db_url)
    sessions = sessionmaker(engine, expire_on_commit=False)
    try:
        with sessions() as session:
            prepared = slice_deploy.preflight(session, session.get_one(Slice, sid), None)
        # the edit lands between the preflight and the push (another user, another request)
        svc = client.get(f"/api/v1/slices/{sid}", headers=op).json()["services"][0]
        r = client.patch(
            f"/api/v1/slices/{sid}/services/{svc['id']}", json={"lane": 2, "version": svc["version"]}, headers=op
        )
        assert r.status_code == 200, r.text
        before = _compiles()
        (outcome,) = slice_deploy.deploy_slice(sessions, Actor(None, "op"), prepared)
    finally:
        engine.dispose()
    assert outcome.status == "succeeded"
    assert _compiles() - before == 1  # the prepared compile no longer held
    # what is in force is the edited slice, as a preview compiles it now
    now = client.get(f"/api/v1/backends/{bid}/preview", headers=op).json()["version"]
    assert _in_force_digest(client, op, bid) == now != prepared[0].preview.plan.version
