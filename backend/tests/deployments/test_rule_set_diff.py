"""Rule-set diffs through the API against the real p4rt driver and the bundled P4Runtime target:
the preview against the rule set in force, and any two stored rule sets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.models import Role
from sliceportal_testbed.processes import RunningTarget
from tests.deployments.test_pipeline_p4rt import EIGHT_QUEUES, _setup
from tests.factories import deploy_backend, login, make_user


def _get(client: TestClient, op: dict[str, str], url: str, **params: Any) -> dict[str, Any]:
    r = client.get(url, headers=op, params=params)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_preview_diff_then_diff_between_rule_sets(
    client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    target = start_target(*EIGHT_QUEUES)
    bid, sid = _setup(client, op, target.address)
    base = f"/api/v1/backends/{bid}"
    # nothing deployed: every entry of the preview is added
    preview = _get(client, op, f"{base}/preview")
    first = _get(client, op, f"{base}/preview/diff")
    assert first["base"] == {"label": "nothing deployed", "number": None, "digest": None, "active": False}
    assert first["target"]["label"] == "preview" and first["target"]["digest"] == preview["version"]
    assert first["active_number"] is None and not first["identical"]
    entries = sum(len(v) for v in preview["tables"].values())
    assert first["added"] == entries > 0 and first["removed"] == first["changed"] == 0
    assert {t: d["added"] for t, d in first["tables"].items()} == {t: len(v) for t, v in preview["tables"].items() if v}

    deploy_backend(client, op, bid)
    same = _get(client, op, f"{base}/preview/diff")
    assert same["identical"] and same["tables"] == {} and same["active_number"] == 1
    assert same["base"]["number"] == 1 and same["base"]["active"] is True

    # move the first service to another lane: the classifier entries of that port range change
    svc = _get(client, op, f"/api/v1/slices/{sid}")["services"][0]
    r = client.patch(
        f"/api/v1/slices/{sid}/services/{svc['id']}", json={"lane": 2, "version": svc["version"]}, headers=op
    )
    assert r.status_code == 200, r.text
    pending = _get(client, op, f"{base}/preview/diff")
    assert not pending["identical"] and pending["changed"] + pending["added"] + pending["removed"] > 0
    second = deploy_backend(client, op, bid)
    assert second["rule_set_number"] == 2

    # the stored diff 1 -> 2 is what the preview said the deploy would change
    stored = _get(client, op, f"{base}/rule-sets/2/diff", against=1)
    assert stored["tables"] == pending["tables"]
    assert stored["target"] == {**stored["target"], "number": 2, "active": True}
    assert stored["base"]["number"] == 1 and stored["base"]["active"] is False
    # the other way round: what a rollback to 1 would change
    back = _get(client, op, f"{base}/rule-sets/1/diff", against=2)
    assert (back["added"], back["removed"], back["changed"]) == (stored["removed"], stored["added"], stored["changed"])
    for name, t in back["tables"].items():
        forward = stored["tables"][name]["changed_entries"]
        assert [c["before"] for c in t["changed_entries"]] == [c["after"] for c in forward]
    assert _get(client, op, f"{base}/rule-sets/2/diff", against=2)["identical"] is True

    # counts always cover every entry; the listing is bounded by `limit`
    capped = _get(client, op, f"{base}/rule-sets/2/diff", against=1, limit=0)
    assert capped["changed"] == stored["changed"]
    assert all(t["truncated"] and not t["changed_entries"] for t in capped["tables"].values())


def test_diff_refusals(
    client: TestClient, op: dict[str, str], session: Session, start_target: Callable[..., RunningTarget]
) -> None:
    target = start_target(*EIGHT_QUEUES)
    bid, _ = _setup(client, op, target.address, users=4)
    deploy_backend(client, op, bid)
    r = client.get(f"/api/v1/backends/{bid}/rule-sets/1/diff", params={"against": 9}, headers=op)
    assert r.status_code == 404 and r.json()["errors"][0]["field"] == "against"
    assert "no rule set 9" in r.json()["detail"]
    r = client.get(f"/api/v1/backends/{bid}/rule-sets/7/diff", params={"against": 1}, headers=op)
    assert r.status_code == 404 and r.json()["errors"][0]["field"] == "number"
    r = client.get(f"/api/v1/backends/{bid}/rule-sets/1/diff", headers=op)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "query.against"
    assert client.get(f"/api/v1/backends/{bid + 1000}/preview/diff", headers=op).status_code == 404
    tenant_id = client.get("/api/v1/tenants", headers=op).json()["data"][0]["id"]
    make_user(session, "viewer", Role.TENANT, tenant_id=tenant_id)
    viewer = login(client, "viewer")
    assert client.get(f"/api/v1/backends/{bid}/preview/diff", headers=viewer).status_code == 403
