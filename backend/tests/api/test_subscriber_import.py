"""CSV import: all or nothing, every bad row reported with its line."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import Subscriber
from tests.factories import add_slice, add_tenant, slice_type_id, tenant_body

HEADER = "imsi,ue_ip,teids,tenant,slices\n"


@pytest.fixture
def op(op: dict[str, str], client: TestClient) -> dict[str, str]:
    """The operator, and tenant red's Best Effort slice iot to import into."""
    add_slice(client, op, add_tenant(client, op, "red", 1, 1), "iot", "Best Effort")
    return op


def _upload(client: TestClient, headers: dict[str, str], text: str) -> object:
    return client.post(
        "/api/v1/subscribers/import", files={"file": ("subs.csv", text.encode(), "text/csv")}, headers=headers
    )


def _rows(n: int, start: int = 0) -> str:
    return "".join(
        f"{1010000000000 + i:015d},10.45.{i // 250}.{i % 250 + 1},{i + 1};{100000 + i},red,iot\n"
        for i in range(start, start + n)
    )


def test_import_good_file(client: TestClient, session: Session, op: dict[str, str]) -> None:
    r = _upload(client, op, HEADER + _rows(600))
    assert r.status_code == 201, r.text  # type: ignore[attr-defined]
    assert r.json()["imported"] == 600  # type: ignore[attr-defined]
    assert session.scalar(select(func.count()).select_from(Subscriber)) == 600
    listed = client.get("/api/v1/subscribers", params={"limit": 1, "sort": "imsi"}, headers=op).json()
    assert listed["count"] == 600 and listed["data"][0]["teids"] == [1, 100000]
    assert len(listed["data"][0]["slice_ids"]) == 1


def test_import_bad_rows_import_nothing(client: TestClient, session: Session, op: dict[str, str]) -> None:
    text = (
        HEADER
        + _rows(3)
        + (
            "12,10.45.9.1,,red,\n"  # line 5: bad IMSI
            "001010000000099,10.45.0.1,,red,\n"  # line 6: UE IP used on line 2
            "001010000000098,10.45.9.2,1,red,\n"  # line 7: TEID 1 used on line 2
            "001010000000097,10.45.9.3,,blue,\n"  # line 8: unknown tenant
            "001010000000096,10.45.9.4,,red,nope\n"  # line 9: unknown slice
            "001010000000095,300.1.1.1,,red,\n"  # line 10: bad address
        )
    )
    r = _upload(client, op, text)
    assert r.status_code == 422  # type: ignore[attr-defined]
    errors = [(e["line"], e["field"]) for e in r.json()["errors"]]  # type: ignore[attr-defined]
    assert errors == [(5, "imsi"), (6, "ue_ip"), (7, "teids"), (8, "tenant"), (9, "slices"), (10, "ue_ip")]
    assert session.scalar(select(func.count()).select_from(Subscriber)) == 0


def test_import_short_row_says_so(client: TestClient, op: dict[str, str]) -> None:
    # a row cut short names what is missing, never "unknown tenant None" (#29)
    r = _upload(client, op, HEADER + "001010000000001,10.45.0.1\n")
    assert r.status_code == 422  # type: ignore[attr-defined]
    errors = [(e["line"], e["field"], e["message"]) for e in r.json()["errors"]]  # type: ignore[attr-defined]
    assert errors == [(2, "tenant", "no tenant: the row has 2 of the header's 5 columns")]


def test_import_conflicts_with_existing_rows(client: TestClient, session: Session, op: dict[str, str]) -> None:
    assert _upload(client, op, HEADER + _rows(5)).status_code == 201  # type: ignore[attr-defined]
    r = _upload(client, op, HEADER + _rows(3, start=4))  # row of i=4 exists already
    assert r.status_code == 422  # type: ignore[attr-defined]
    assert [e["line"] for e in r.json()["errors"]] == [2]  # type: ignore[attr-defined]
    assert session.scalar(select(func.count()).select_from(Subscriber)) == 5


def test_import_bad_header_and_encoding(client: TestClient, op: dict[str, str]) -> None:
    # every missing and every unknown column named in one answer, each on its own field (#29)
    r = _upload(client, op, "imsi,who,what,teid\n1,2,3,4\n")
    body = r.json()  # type: ignore[attr-defined]
    assert r.status_code == 422, body  # type: ignore[attr-defined]
    assert [(e["field"], e["message"], e["line"]) for e in body["errors"]] == [
        ("ue_ip", "missing column", 1),
        ("tenant", "missing column", 1),
        ("who", "unknown column", 1),
        ("what", "unknown column", 1),
        ("teid", "unknown column", 1),
    ]
    assert "missing column(s) ue_ip, tenant" in body["detail"] and "'teid'" in body["detail"]
    # an empty header cell is named by its place, not as a column called "" or "file"
    r = _upload(client, op, "imsi,,ue_ip,tenant\n1,2,3,4\n")
    assert [(e["field"], e["message"]) for e in r.json()["errors"]] == [  # type: ignore[attr-defined]
        ("column 2", "column without a name")
    ]
    assert "no name in column 2" in r.json()["detail"]  # type: ignore[attr-defined]
    for empty in ("", "\n1,2\n"):
        r = _upload(client, op, empty)
        assert r.status_code == 422 and [e["field"] for e in r.json()["errors"]] == ["file"]  # type: ignore[attr-defined]
        assert "no header row" in r.json()["detail"]  # type: ignore[attr-defined]
    r = client.post("/api/v1/subscribers/import", files={"file": ("x.csv", b"\xff\xfe\x00bad", "text/csv")}, headers=op)
    assert r.status_code == 422


def test_an_export_neutralised_against_formulas_imports_again(client: TestClient, op: dict[str, str]) -> None:
    # the export writes '=calc for a tenant named =calc (CSV injection, #27); the import reads the name
    t = client.post("/api/v1/tenants", json=tenant_body("=calc", 2, 2), headers=op).json()["id"]
    st = slice_type_id(client, op, "Best Effort")
    assert (
        client.post("/api/v1/slices", json={"name": "+s", "tenant_id": t, "slice_type_id": st}, headers=op).status_code
        == 201
    )
    r = _upload(client, op, HEADER + "001010000000777,10.9.0.1,,'=calc,'+s\n")
    assert r.status_code == 201, r.text  # type: ignore[attr-defined]
    listed = client.get("/api/v1/subscribers", params={"tenant_id": t}, headers=op).json()
    assert listed["count"] == 1 and len(listed["data"][0]["slice_ids"]) == 1
