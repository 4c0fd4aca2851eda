"""The run command's live testbed end to end: namespaces, XDP and P4Runtime backends
deployed through the pipeline, the demo subscribers' traffic measured into per-lane KPIs
that the API serves and the SLA checks see."""

from __future__ import annotations

import os
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings
from sliceportal.models import Role, Slice
from sliceportal.services.bootstrap_data import seed_demo
from sliceportal.testbed.netns_testbed import namespaces
from tests.factories import login, make_user

pytestmark = pytest.mark.needs_root


def test_live_kpis_per_lane(db_url: str, session: Session) -> None:
    seed_demo(session, users_per_slice=8)
    # one slice limited far below what its subscribers send: the data plane drops the excess
    limited = session.scalar(select(Slice).where(Slice.name == "red-iot"))
    assert limited is not None
    limited.rate_limit_mbps, limited.guaranteed_mbps = 0.2, None
    session.commit()
    make_user(session, "op", Role.OPERATOR)
    prefix = f"t{os.getpid() % 10000}-"
    settings = Settings(secret_key="t" * 40, reconcile_interval_s=0, testbed=True, testbed_rate_pps=1500,
                        testbed_prefix=prefix)
    with TestClient(create_app(settings, db_url)) as client:
        op = login(client, "op")
        backends = client.get("/api/v1/backends", headers=op).json()["data"]
        assert {b["driver"] for b in backends} == {"xdp", "p4rt", "netfpga"}
        assert all(b["health"] == "ok" for b in backends), backends
        slices = client.get("/api/v1/slices", headers=op).json()["data"]
        assert {s["state"] for s in slices} == {"deployed"}
        flexible = next(s for s in slices if s["slice_type_name"] == "Flexible Slice")
        deadline = time.monotonic() + 30
        current: list[dict[str, object]] = []
        while time.monotonic() < deadline:
            current = client.get(f"/api/v1/slices/{flexible['id']}/kpis/current", headers=op).json()
            if len(current) == 4 and all(int(p["rx_packets"]) > 0 for p in current):  # type: ignore[call-overload]
                break
            time.sleep(1)
        assert sorted(int(p["lane"]) for p in current) == [0, 2, 4, 6]  # type: ignore[call-overload]
        for p in current:
            assert p["delay_p99_ms"] is not None and 0 < float(p["delay_p99_ms"]) < 1000  # type: ignore[arg-type]
            assert float(p["throughput_bps"]) > 0  # type: ignore[arg-type]
        series = client.get(f"/api/v1/slices/{flexible['id']}/kpis", headers=op).json()
        assert len(series) >= 4
        # the rate limiter's drops, counted per rule by the data plane, reach the slice's samples
        deadline = time.monotonic() + 20
        dropped = 0
        while time.monotonic() < deadline and not dropped:
            samples = client.get(f"/api/v1/slices/{limited.id}/kpis", headers=op).json()
            dropped = sum(int(p["drops"].get("rate_limit", 0)) for p in samples)
            time.sleep(1)
        assert dropped > 0
        assert all(not p["drops"] for p in series)  # the unlimited slice lost nothing to the limiter

        # a slice created while the testbed runs gets traffic too, once it has subscribers
        red = client.get("/api/v1/tenants", params={"q": "mvno-red"}, headers=op).json()["data"][0]
        st = next(t["id"] for t in client.get("/api/v1/slice-types", params={"q": "Low Latency"}, headers=op)
                  .json()["data"] if t["name"] == "Low Latency")
        new = client.post("/api/v1/slices", json={"name": "late", "tenant_id": red["id"], "slice_type_id": st,
                                                  "services": [{"name": "ll", "lane": 2,
                                                                "dst_ports": [{"lo": 7000, "hi": 7000}]}]},
                          headers=op).json()
        r = client.post("/api/v1/subscribers", json={"tenant_id": red["id"], "imsi": "001019999999999",
                                                     "ue_ip": "10.45.9.1", "teids": [999999],
                                                     "slice_ids": [new["id"]]}, headers=op)
        assert r.status_code == 201, r.text
        deadline = time.monotonic() + 30
        late: list[dict[str, object]] = []
        while time.monotonic() < deadline and not late:
            late = client.get(f"/api/v1/slices/{new['id']}/kpis/current", headers=op).json()
            time.sleep(1)
        assert late and int(late[0]["rx_packets"]) > 0 and late[0]["lane"] == 2  # type: ignore[call-overload]
    # the namespaces are gone with the app
    assert not set(namespaces(prefix)) & set(os.popen("ip netns list").read().split())
