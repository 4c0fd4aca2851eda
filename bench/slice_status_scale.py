"""Slice status at scale (issue #28, first goal row): ``GET /slices?limit=50`` and
``GET /slices/{id}`` for a slice of 10 000 subscribers deployed on three P4Runtime backends,
with an hour of per-lane KPI samples from two sources on each (its SLA state reads the newest),
against the same requests while the same slice had 10 subscribers and no samples (same run,
same database).

The portal in this process (its ASGI app through a TestClient, a private PostgreSQL, the real
p4rt driver); the backends are bundled P4Runtime targets in one fleet process. One client, a
request at a time: the medians are the server's own time for a request. The status is read
from stored state (services/slice_status.py): a deploy stores what it compiled, and after an
edit the controller's refresher (run in this process, as the leader runs it) recomputes the
wanted digests on the triggers' NOTIFY; the time from the edit to that, and the first reads
after a deploy and after an edit, are reported on their own, as is ``GET /slices/{id}/status``,
which compiles to say what a push would change.

    .venv/bin/python bench/slice_status_scale.py       # BENCH_QUICK=1: 2 000 subscribers, fewer reads
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dataplane" / "bmv2"))

from _results import Results, quick  # noqa: E402
from bmv2_target.fleet import Fleet  # noqa: E402
from sqlalchemy import select, text  # noqa: E402
from stack_common import SCALE_TENANT, InProcessPortal, scale_subscribers  # noqa: E402

from sliceportal.models import BackendFootprint  # noqa: E402
from sliceportal.services import footprint_state  # noqa: E402
from sliceportal.services.footprint_refresher import FootprintRefresher  # noqa: E402

BACKENDS = 3
SMALL = 10
LARGE = 2_000 if quick() else 10_000
READS = 10 if quick() else 40
GOAL_MS = 20.0


def world(p: InProcessPortal, addresses: list[str]) -> int:
    ids = p.p4rt_backends(addresses, "agent-{}", trunk_ports=[1, 2], uplink_port=2)
    return p.embb_slice(SCALE_TENANT, {"rate_limit_mbps": 1, "max_delay_ms": 50}, ids)


def kpi_history(p: InProcessPortal, sid: int) -> int:
    """An hour of 1 s samples, every lane, from the collector and from probes, on each of the
    slice's backends (as a slice in service has them): a status read must not grow with it.
    The number of samples."""
    with p.sessions() as s:
        n = s.execute(
            text(
                "INSERT INTO kpi_sample (slice_id, backend_id, lane, source, ts, interval_s, tx_packets, rx_packets,"
                " tx_bytes, rx_bytes, throughput_bps, loss_pct, drops, ecn_marks)"
                " SELECT :sid, sb.backend_id, lane, src, ts, 1.0, 100, 100, 80000, 80000, 640000, 0, '{}', 0"
                " FROM slice_backend sb, generate_series(now() - interval '1 hour', now(), interval '1 second') ts,"
                " generate_series(0, 7) lane, unnest(ARRAY['counters', 'probe']) src WHERE sb.slice_id = :sid"
            ),
            {"sid": sid},
        ).rowcount
        s.execute(text("ANALYZE kpi_sample"))
        s.commit()
    return n


def deploy(p: InProcessPortal, sid: int) -> None:
    out = p.call("POST", f"/slices/{sid}/deploy")["backends"]
    assert {b["status"] for b in out} == {"succeeded"}, out


def timed(p: InProcessPortal, path: str, expect: str) -> float:
    t0 = time.perf_counter()
    body = p.call("GET", path)
    dt = time.perf_counter() - t0
    state = body["data"][0]["state"] if "data" in body else body["state"]
    assert state == expect, (path, state)
    return dt * 1e3


def until_refreshed(p: InProcessPortal, backends: int, timeout_s: float = 120.0) -> float:
    """When every backend's stored wanted digests are for its configuration as it is now."""
    deadline = time.monotonic() + timeout_s
    with p.sessions() as session:
        while time.monotonic() < deadline:
            session.rollback()
            rows = session.scalars(select(BackendFootprint)).all()
            current = [r for r in rows if r.input_key == footprint_state.input_key(session, r.backend_id)]
            if len(current) == backends:
                return time.perf_counter()
            time.sleep(0.01)
    raise TimeoutError("the refresher did not recompute the wanted digests")


def medians(p: InProcessPortal, sid: int) -> dict[str, float]:
    paths = {"list": "/slices?limit=50", "read": f"/slices/{sid}"}
    samples: dict[str, list[float]] = {k: [] for k in paths}
    for _ in range(READS):  # interleaved: a drift of the machine's load hits both alike
        for k, path in paths.items():
            samples[k].append(timed(p, path, "deployed"))
    return {k: statistics.median(v) for k, v in samples.items()}


def main() -> None:
    res = Results("slice_status_scale")
    fleet = Fleet(BACKENDS)
    p: InProcessPortal | None = None
    try:
        p = InProcessPortal(rate_limit_expensive="10000/minute")
        sid = world(p, fleet.addresses)
        p.import_subscribers(scale_subscribers(range(SMALL)))
        deploy(p, sid)
        small_cold = timed(p, "/slices?limit=50", "deployed")
        small = medians(p, sid)
        p.import_subscribers(scale_subscribers(range(SMALL, LARGE)))
        samples = kpi_history(p, sid)
        deploy(p, sid)
        large_cold = timed(p, "/slices?limit=50", "deployed")
        large = medians(p, sid)
        # an edit leaves the slice pending: the controller's refresher (run here as the leader
        # runs it) recomputes the wanted digests on the triggers' NOTIFY, before any read
        refresher = FootprintRefresher(p.sessions, p.url)
        refresher.start()
        refresher.listening.wait(10)
        version = p.call("GET", f"/slices/{sid}")["version"]
        t0 = time.perf_counter()
        p.call("PATCH", f"/slices/{sid}", json={"sla": {"rate_limit_mbps": 2, "max_delay_ms": 50}, "version": version})
        refreshed = until_refreshed(p, BACKENDS) - t0
        refresher.stop()
        edit_cold = timed(p, "/slices?limit=50", "pending")
        # /status then compiles each backend to list what changed
        pending = statistics.median(timed(p, f"/slices/{sid}", "pending") for _ in range(READS))
        detail = statistics.median(timed(p, f"/slices/{sid}/status", "pending") for _ in range(3))
    finally:
        if p is not None:
            p.close()
        fleet.stop()
    setup = (
        f"one slice on {BACKENDS} p4rt backends (bundled targets), one client, median of {READS}; "
        f"the large slice also has an hour of 1 s samples per lane and source ({samples:,} rows)"
    )
    for k, name in (("list", "GET /slices?limit=50"), ("read", "GET /slices/{id}")):
        res.figure(
            f"{name}, slice of {LARGE} subscribers",
            large[k],
            "ms",
            baseline=small[k],
            baseline_name=f"the same request with the slice at {SMALL} subscribers, same run",
            goal=f"median <= {GOAL_MS:g} ms and <= 2 x baseline",
            met=large[k] <= GOAL_MS and large[k] <= 2 * small[k],
            note=setup,
        )
    res.figure(
        f"first GET /slices?limit=50 after a deploy, slice of {LARGE} subscribers",
        large_cold,
        "ms",
        baseline=small_cold,
        baseline_name=f"the same at {SMALL} subscribers",
        note="the deploy stored what it compiled (services/footprint_push.py): nothing compiled by the read",
    )
    res.figure(
        f"edit to wanted digests recomputed by the controller's refresher, {BACKENDS} backends, {LARGE} subscribers",
        refreshed * 1e3,
        "ms",
        baseline=large["list"],
        baseline_name="GET /slices?limit=50 (median), same run",
        note="PATCH sent to every backend's wanted digests current: NOTIFY + one compile per backend",
    )
    res.figure(
        f"first GET /slices?limit=50 after an edit, once refreshed, {LARGE} subscribers",
        edit_cold,
        "ms",
        baseline=large["list"],
        baseline_name="GET /slices?limit=50 (median), same run",
        note="pending, read from stored state: nothing compiled by the read",
    )
    res.figure(
        f"GET /slices/{{id}}/status of the pending slice (with what changed), {LARGE} subscribers",
        detail,
        "ms",
        baseline=pending,
        baseline_name=f"GET /slices/{{id}} of the same pending slice (median of {READS})",
        note=f"compiles the slice's {BACKENDS} backends to work out 'changes'; median of 3",
    )
    table = res.table(
        "Slice status from stored state: one slice on 3 backends, one client (ms, median)",
        ["subscribers", "GET /slices?limit=50", "GET /slices/{id}", "first list after deploy"],
    )
    table.rows.append([SMALL, round(small["list"], 2), round(small["read"], 2), round(small_cold, 1)])
    table.rows.append([LARGE, round(large["list"], 2), round(large["read"], 2), round(large_cold, 1)])
    res.write()
    for row in table.rows:
        print(row)


if __name__ == "__main__":
    main()
