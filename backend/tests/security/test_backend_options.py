"""Backend options never name server files and point only at allowed networks (finding 2)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings, random_secret
from sliceportal.models import Backend, Role
from tests.factories import login, make_user

_names = itertools.count()


def _create(client: TestClient, op: dict[str, str], driver: str, **options: Any) -> tuple[int, list[str], str]:
    body = {"name": f"b-{driver}-{next(_names)}", "driver": driver, "options": options}
    r = client.post("/api/v1/backends", json=body, headers=op)
    body = r.json()
    return r.status_code, [e["field"] for e in body.get("errors", [])], body.get("detail", "")


@pytest.mark.parametrize(
    ("driver", "options", "field"),
    [
        (
            "p4rt",
            {"address": "127.0.0.1:9662", "device_config": "/work/main/var/operator-password.txt"},
            "options.device_config",
        ),
        ("p4rt", {"address": "127.0.0.1:9662", "p4info": "/etc/shadow"}, "options.p4info"),
        ("p4rt", {"address": "127.0.0.1:9662", "p4info": "../../etc/passwd"}, "options.p4info"),
        ("p4rt", {"address": "127.0.0.1:9662", "p4info": "file:///etc/passwd"}, "options.p4info"),
        ("xdp", {"object": "/etc/shadow"}, "options.object"),
        ("xdp", {"interface": "eth0", "tx_peer": "~/x"}, "options.tx_peer"),
        # the PostgreSQL socket, and any socket outside the portal's run directory
        ("netfpga", {"address": "/tmp/.s.PGSQL.5432"}, "options.address"),
        ("netfpga", {"address": "unix:/var/run/docker.sock"}, "options.address"),
        ("netfpga", {"address": "unix:/work/main/var/run/../secret_key"}, "options.address"),
    ],
)
def test_server_paths_in_options_are_refused_naming_the_field(
    client: TestClient, session: Session, op: dict[str, str], driver: str, options: dict[str, Any], field: str
) -> None:
    status, fields, detail = _create(client, op, driver, **options)
    assert status == 422 and field in fields, detail
    assert session.scalar(select(func.count()).select_from(Backend)) == 0  # nothing stored


@pytest.mark.parametrize(
    "address",
    [
        "192.0.2.1:9559",
        "tcp:8.8.8.8:53",
        "[2001:db8::1]:9559",
        "metadata.internal:80",
        "127.0.0.1:0",
        "127.0.0.1:70000",
        "127.0.0.1",
    ],
)
def test_addresses_outside_the_allow_list_or_malformed_are_refused(
    client: TestClient, session: Session, op: dict[str, str], address: str
) -> None:
    status, fields, _ = _create(client, op, "p4rt", address=address)
    assert status == 422 and fields == ["options.address"]


def test_loopback_is_allowed_and_an_operator_widens_the_allow_list(db_url: str, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    for networks, expected in ((None, 422), (["192.0.2.0/24"], 201)):
        extra = {} if networks is None else {"backend_networks": networks}
        settings = Settings(secret_key=random_secret(), reconcile_interval_s=0, **extra)
        with TestClient(create_app(settings, db_url)) as c:
            op = login(c, "op")
            # an address nobody listens on: registered (health unreachable), not refused
            status, _, detail = _create(c, op, "netfpga", address="tcp:192.0.2.1:8100", timeout_s=0.2)
            assert status == expected, detail
            if networks is None:
                assert _create(c, op, "netfpga", address="tcp:127.0.0.1:1", timeout_s=0.2)[0] == 201


def test_unix_sockets_only_under_the_run_directory(db_url: str, session: Session, tmp_path: Path) -> None:
    make_user(session, "op", Role.OPERATOR)
    settings = Settings(secret_key=random_secret(), reconcile_interval_s=0, run_dir=tmp_path / "run")
    with TestClient(create_app(settings, db_url)) as c:
        op = login(c, "op")
        assert _create(c, op, "netfpga", address=f"unix:{tmp_path}/run/card.sock", timeout_s=0.2)[0] == 201
        assert _create(c, op, "netfpga", address=f"{tmp_path}/elsewhere.sock", timeout_s=0.2)[0] == 422


def test_driver_schemas_are_typed(client: TestClient, op: dict[str, str]) -> None:
    # no bool-as-int, no unbounded timeouts, no unknown fields
    for options in (
        {"address": "tcp:127.0.0.1:1", "paths": True},
        {"address": "tcp:127.0.0.1:1", "timeout_s": -1},
        {"address": "tcp:127.0.0.1:1", "timeout_s": 1e9},
        {"address": "tcp:127.0.0.1:1", "bogus": 1},
    ):
        status, fields, detail = _create(client, op, "netfpga", **options)
        # each refused option is named on its own field (options.paths, options.timeout_s ...)
        assert status == 422 and any(f.startswith("options.") for f in fields), (options, fields, detail)
