"""Time to slice: "deploy" clicked -> the slice's rules enforced, observed by traffic; and the
write count of a one-rule change (issue #14, "Done when").

The whole portal in this process (API through its ASGI app, a private PostgreSQL, the real
p4rt driver) against the bundled P4Runtime target over gRPC. A tenant, one Flexible Slice with
the seed 000 Table 2 services and N subscribers (10 000; 1 000 quick) imported by CSV. The
clock starts at ``POST /backends/{id}/deployments`` and stops when a frame of the last
subscriber's flow, replayed through the target, is counted by the data plane's per-slice
counters (before the deploy the same frame misses: the default path). The baseline is the
same measurement with one subscriber, in the same run (the fixed cost of a deploy).

Then two changes, each deployed: a per-flow intent for one subscriber (one rule added above
the slice's rules: the "one-rule change"), and one service's port range (one IR rule per
subscriber block: every one of them changes its match). Each deployment's diff says how many
entries were written (added + removed + modified); with stable priorities (docs/rules.md) that
is the change itself, not the entries below it.

    .venv/bin/python bench/time_to_slice.py       # BENCH_QUICK=1 for the short form
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "dataplane" / "bmv2"), str(ROOT / "drivers" / "p4rt" / "tests")]

from _results import Results, quick  # noqa: E402
from bmv2_target.testing import Target  # noqa: E402
from stack_common import InProcessPortal  # noqa: E402
from traffic import frame, run_pcaps, write_pcap  # noqa: E402

from sliceportal.models import Backend  # noqa: E402
from sliceportal.services.backends import POOL  # noqa: E402
from sliceportal.traffic.packets import Encap, Flow  # noqa: E402

SUBSCRIBERS = 1_000 if quick() else 10_000
VNI, VLAN = 1001, 100
OBSERVE_TIMEOUT_S = 60.0


def ue_ip(u: int, net: int) -> str:
    return f"10.{net}.{u // 250}.{u % 250 + 1}"


def world(p: InProcessPortal, target: Target, name: str, users: int, net: int) -> tuple[int, int]:
    """A backend on ``target`` and a slice of ``users`` subscribers on it; (backend id, slice id)."""
    options = {"access_ports": {"1": VLAN + net}, "trunk_ports": [2], "uplink_port": 2}
    [bid] = p.p4rt_backends([target.address], name, **options)
    tenant = {"name": f"t-{name}", "vni": VNI + net, "vlan": VLAN + net}
    sid = p.embb_slice(tenant, {"rate_limit_mbps": 100, "max_delay_ms": 20, "ecn_delay_ms": 5}, [bid])
    p.import_subscribers(
        f"001{net:02d}{u:010d},{ue_ip(u, net)},{net * 100_000 + u + 1},t-{name},embb" for u in range(users)
    )
    return bid, sid


def slice_packets(p: InProcessPortal, bid: int) -> int:
    with p.sessions() as s:
        backend = s.get_one(Backend, bid)
        with POOL.use(s, backend) as drv:  # the portal's own driver: no second P4Runtime controller
            return sum(c.packets for c in drv.counters().slices.values())


def send_last_ue(target: Target, users: int, net: int, tmp: Path) -> None:
    u = users - 1
    flow = Flow(ue_ip(u, net), "10.2.0.1", 5000, vni=VNI + net, teid=net * 100_000 + u + 1, encap=Encap.VXLAN_GTP)
    data, _ = frame(flow, 200)
    write_pcap(tmp / "in.pcap", [(10**9, data)])
    run_pcaps(target.address, {1: tmp / "in.pcap"}, tmp / "out")


def diff_counts(deployment: dict[str, Any]) -> tuple[dict[str, dict[str, int]], int]:
    """A deployment's diff as {table: {added/removed/modified: n}} and the entries it wrote."""
    assert deployment["status"] == "succeeded", deployment
    d = {name: {k: len(v) for k, v in t.items()} for name, t in deployment["diff"].get("tables", {}).items()}
    return d, sum(sum(t.values()) for t in d.values())


def time_to_slice(p: InProcessPortal, users: int, net: int, tmp: Path) -> dict[str, Any]:
    target = Target("--priority-queues", "8")
    try:
        bid, sid = world(p, target, f"bmv2-{users}", users, net)
        p.call("GET", f"/backends/{bid}")  # the health probe after registration
        before = slice_packets(p, bid)
        send_last_ue(target, users, net, tmp)
        missed = slice_packets(p, bid) == before  # not classified into the slice before the deploy
        t0 = time.perf_counter()
        dep = p.call("POST", f"/backends/{bid}/deployments")
        t_api = time.perf_counter() - t0
        while True:
            send_last_ue(target, users, net, tmp)
            if slice_packets(p, bid) > before:
                break
            if time.perf_counter() - t0 > OBSERVE_TIMEOUT_S:
                raise RuntimeError("the deployed slice never classified the last subscriber's frame")
        t_seen = time.perf_counter() - t0
        entries = sum(
            len(v)
            for v in p.call("GET", f"/backends/{bid}/rule-sets/{dep['rule_set_number']}")["plan"]["tables"].values()
        )
        # one rule: a per-flow intent for one subscriber, deployed by the intents API itself
        u = users // 2
        intent = p.call(
            "POST",
            "/intents",
            json={"operation": "insert", "imsi": [f"001{net:02d}{u:010d}"], "dst_ports": [[5000, 5007]], "lane": 6},
        )
        (dep_one,) = [d for d in intent["deployments"] if d["backend_id"] == bid]
        one_diff, one_writes = diff_counts(dep_one)
        # one service: the slice's first service moves to another port range
        svc = p.call("GET", f"/slices/{sid}")["services"][0]
        p.call(
            "PATCH",
            f"/slices/{sid}/services/{svc['id']}",
            json={"dst_ports": [{"lo": 6000, "hi": 6007}], "version": svc["version"]},
        )
        service_diff, service_writes = diff_counts(p.call("POST", f"/backends/{bid}/deployments"))
        return {
            "deploy_api_s": t_api,
            "time_to_slice_s": t_seen,
            "entries": entries,
            "missed_before": missed,
            "one_rule_writes": one_writes,
            "one_rule_diff": one_diff,
            "service_writes": service_writes,
            "service_diff": service_diff,
        }
    finally:
        target.stop()


def main() -> int:
    results = Results("time_to_slice")
    tmp = Path(tempfile.mkdtemp(prefix="bench-tts-"))
    p = InProcessPortal()
    try:
        base = time_to_slice(p, 1, 46, tmp)
        big = time_to_slice(p, SUBSCRIBERS, 47, tmp)
    finally:
        p.close()
        shutil.rmtree(tmp, ignore_errors=True)
    results.figure(
        "time to slice",
        big["time_to_slice_s"],
        "s",
        baseline=base["time_to_slice_s"],
        baseline_name="the same with 1 subscriber",
        goal="",
        note=f"{SUBSCRIBERS} subscribers, {big['entries']} native entries; deploy clicked -> a frame of "
        "the last subscriber counted in the slice by the bundled P4Runtime target",
    )
    results.figure(
        "one-rule change writes",
        big["one_rule_writes"],
        "entries",
        baseline=base["one_rule_writes"],
        baseline_name="the same change with 1 subscriber",
        goal="= the diff size (1: one rule added above the slice's rules)",
        met=big["one_rule_writes"] == 1,
        note=f"a per-flow intent for one subscriber; diff {big['one_rule_diff']}",
    )
    results.figure(
        "one-service change writes",
        big["service_writes"],
        "entries",
        baseline=base["service_writes"],
        baseline_name="the same change with 1 subscriber",
        note=f"one service's port range: one IR rule per subscriber block changes its match "
        f"(delete + insert each); diff {big['service_diff']}",
    )
    table = results.table(
        "Time to slice (p4rt, bundled target)",
        ["subscribers", "entries", "deploy API s", "observed by traffic s", "one-rule writes", "one-service writes"],
    )
    for users, r in ((1, base), (SUBSCRIBERS, big)):
        assert r["missed_before"], "the frame was classified into the slice before its deploy"
        table.rows.append(
            [
                users,
                r["entries"],
                round(r["deploy_api_s"], 3),
                round(r["time_to_slice_s"], 3),
                r["one_rule_writes"],
                r["service_writes"],
            ]
        )
    results.write()
    for row in table.rows:
        print(*row, sep="\t")
    return 0


if __name__ == "__main__":
    sys.exit(main())
