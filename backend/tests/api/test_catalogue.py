"""The slice-type catalogue is seed 000 Table 1, row by row."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.models import Role
from tests.factories import login, make_user

# Transcribed independently of the migration, from the paper's Table 1 (name, classes, lanes).
EXPECTED = [
    ("Best Effort", 1, [0]),
    ("Best Effort Reliable", 1, [1]),
    ("Low Latency", 1, [2]),
    ("Low Latency Reliable", 1, [3]),
    ("Ultra-Low Latency Reliable", 1, [4]),
    ("Ultra-Low Latency High-Reliable", 1, [5]),
    ("Critical Communications", 1, [6]),
    ("Network Control", 1, [7]),
    ("Dual Best Effort + Low Latency", 2, [0, 2]),
    ("Dual Best Effort + Low Latency Reliable", 2, [1, 3]),
    ("Dual Best Effort + Ultra-Low Latency", 2, [0, 4]),
    ("Dual Best Effort + Ultra-Low Latency Reliable", 2, [1, 5]),
    ("Dual Best Effort Reliable + Critical Communications", 2, [1, 6]),
    ("Triple Best Effort + Low-Latency + Ultra Low Latency", 3, [0, 2, 4]),
    ("Triple Best Effort + Low-Latency + Ultra Low Latency Reliable", 3, [1, 3, 5]),
    ("Flexible Slice", 4, [0, 2, 4, 6]),
    ("Reliable Flexible Slice", 4, [1, 3, 5, 6]),
]


def test_every_row_of_table_1_in_order(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    r = client.get("/api/v1/slice-types", params={"limit": 100}, headers=login(client, "op"))
    assert r.status_code == 200
    body = r.json()
    assert body["count"] == len(EXPECTED)
    assert [(t["name"], t["traffic_classes"], t["lanes"]) for t in body["data"]] == EXPECTED
    flexible = next(t for t in body["data"] if t["name"] == "Flexible Slice")
    assert flexible["use_cases"] == ["Any Communication"]
    assert all(len(t["lanes"]) == t["traffic_classes"] for t in body["data"])


def test_catalogue_is_read_only(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    headers = login(client, "op")
    assert client.post("/api/v1/slice-types", json={"name": "x"}, headers=headers).status_code == 405
    assert client.get("/api/v1/slice-types/9999", headers=headers).status_code == 404
