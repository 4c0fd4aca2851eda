"""The statements a request costs do not grow with the page: no N+1 loads, no object graphs
loaded for ids. Counted on the app's own engine (SQLAlchemy events), not timed: the
latency figures are bench/api_latency.py's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, select
from sqlalchemy.orm import Session

from sliceportal.api.routes.subscribers import to_public
from sliceportal.core.db import engine_for
from sliceportal.models import Role, Subscriber
from sliceportal.schemas.common import Page
from sliceportal.schemas.subscribers import SubscriberPublic
from tests.factories import login, make_user, slice_type_id, tenant_body


@contextmanager
def statements(db_url: str) -> Iterator[list[str]]:
    seen: list[str] = []

    def log(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    engine = engine_for(db_url)
    event.listen(engine, "before_cursor_execute", log)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", log)


@pytest.fixture
def world(client: TestClient, session: Session) -> dict[str, Any]:
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    t = client.post("/api/v1/tenants", json=tenant_body("red", 1, 1, ue_pool="10.45.0.0/16"), headers=op).json()
    slices = [
        client.post(
            "/api/v1/slices",
            headers=op,
            json={"name": name, "tenant_id": t["id"], "slice_type_id": slice_type_id(client, op, "Best Effort")},
        ).json()
        for name in ("iot", "video")
    ]
    # 60 UEs: every one in "iot", the even ones in "video" too
    csv = "imsi,ue_ip,teids,tenant,slices\n" + "".join(
        f'00101{u:010d},10.45.1.{u + 1},{u + 1},red,"iot{";video" if u % 2 == 0 else ""}"\n' for u in range(60)
    )
    r = client.post("/api/v1/subscribers/import", files={"file": ("s.csv", csv.encode(), "text/csv")}, headers=op)
    assert r.status_code == 201, r.text
    return {"op": op, "tenant": t["id"], "iot": slices[0]["id"], "video": slices[1]["id"]}


def test_list_page_costs_the_same_statements_for_5_and_50_rows(
    client: TestClient, db_url: str, world: dict[str, Any]
) -> None:
    counts = []
    for limit in (5, 50):
        with statements(db_url) as seen:
            r = client.get(f"/api/v1/subscribers?limit={limit}&sort=imsi", headers=world["op"])
        assert r.status_code == 200
        assert len(r.json()["data"]) == limit
        counts.append(len([s for s in seen if s.lstrip().upper().startswith("SELECT")]))
    assert counts[0] == counts[1]
    # authentication (unless remembered), the count, the page with its memberships: no slice,
    # backend or service rows
    assert counts[1] <= 3, counts


def test_reads_answer_the_response_models_json(
    client: TestClient, session: Session, db_url: str, world: dict[str, Any]
) -> None:
    """List and read write their JSON from the rows (api/responses.plain_json): byte for byte
    what the response model makes of the stored subscribers, addresses and memberships included."""
    subscribers = session.scalars(select(Subscriber).order_by(Subscriber.imsi, Subscriber.id).limit(50)).all()
    expected = Page[SubscriberPublic](data=[to_public(s) for s in subscribers], count=60)
    r = client.get("/api/v1/subscribers?limit=50&sort=imsi", headers=world["op"])
    assert r.content == expected.model_dump_json().encode()
    one = client.get(f"/api/v1/subscribers/{subscribers[1].id}", headers=world["op"])
    assert one.content == expected.data[1].model_dump_json().encode()
    assert one.headers["ETag"] == f'"{subscribers[1].version}"'


def test_list_and_read_answer_memberships_without_loading_slices(
    client: TestClient, db_url: str, world: dict[str, Any]
) -> None:
    with statements(db_url) as seen:
        page = client.get(
            f"/api/v1/subscribers?limit=50&sort=imsi&slice_id={world['video']}", headers=world["op"]
        ).json()
        one = client.get(f"/api/v1/subscribers/{page['data'][0]['id']}", headers=world["op"])
    assert page["count"] == 30
    assert all(s["slice_ids"] == sorted([world["iot"], world["video"]]) for s in page["data"])
    assert one.json()["slice_ids"] == sorted([world["iot"], world["video"]])
    assert not [s for s in seen if "FROM slice" in s or "FROM backend" in s or "service_class" in s]
    odd = client.get(
        f"/api/v1/subscribers?limit=50&offset=30&sort=imsi&tenant_id={world['tenant']}", headers=world["op"]
    ).json()
    assert [len(s["slice_ids"]) for s in odd["data"]] == [2 if int(s["imsi"]) % 2 == 0 else 1 for s in odd["data"]]


def test_create_with_slices_answers_their_ids(client: TestClient, db_url: str, world: dict[str, Any]) -> None:
    body = {
        "tenant_id": world["tenant"],
        "imsi": "001019999999999",
        "ue_ip": "10.45.9.9",
        "teids": [999],
        "slice_ids": [world["video"], world["iot"]],
    }
    r = client.post("/api/v1/subscribers", json=body, headers=world["op"])
    assert r.status_code == 201, r.text
    assert sorted(r.json()["slice_ids"]) == sorted([world["iot"], world["video"]])
    assert client.get(f"/api/v1/subscribers/{r.json()['id']}", headers=world["op"]).json()["slice_ids"] == sorted(
        [world["iot"], world["video"]]
    )
