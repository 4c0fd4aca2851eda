"""Scale: one slice of 10 000 subscribers deployed to 100 P4Runtime backends at once, and
the reconcile loop's pass over all of them (issue #16 item 5).

The portal in this process (its ASGI app, a private PostgreSQL, the real p4rt driver); the
backends are bundled P4Runtime targets standing in for per-host agents, K to a process
(``bmv2_target/fleet.py``), each a switch of its own on its own gRPC port, registered through the
API like any remote backend. Measured in the same run:

* fan-out: ``POST /slices/{id}/deploy`` with the slice on all N backends, against the same
  deploy with the slice on 1 backend (the ratio is the cost of N over 1; N x the baseline is
  what a serial deploy would take; #28's goal: 5 s and 10 x at 100 backends);
* reconcile: one pass of the reconciler (read back and compare every backend) over N backends
  in sync, against its pass over 1 (#28's goal: 2 s at 100 backends).

    .venv/bin/python bench/scale_backends.py          # BENCH_QUICK=1: 10 backends, 1 000 subscribers
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dataplane" / "bmv2"))

from _results import Results, quick  # noqa: E402
from bmv2_target.fleet import Fleet  # noqa: E402
from sqlalchemy import func, select  # noqa: E402
from stack_common import SCALE_TENANT, InProcessPortal, cpu_seconds, machine_busy_s, scale_subscribers  # noqa: E402

from sliceportal.core.config import Settings  # noqa: E402
from sliceportal.models import Backend  # noqa: E402
from sliceportal.services import fanout_pool  # noqa: E402
from sliceportal.services.reconciler import Reconciler  # noqa: E402

BACKENDS = 10 if quick() else 100
SUBSCRIBERS = 1_000 if quick() else 10_000
PER_HOST = 25  # targets per fleet process


def start_agents(n: int) -> list[Fleet]:
    return [Fleet(min(PER_HOST, n - start)) for start in range(0, n, PER_HOST)]


def world(p: InProcessPortal, addresses: list[str]) -> tuple[int, list[int]]:
    """A tenant, one Flexible Slice of SUBSCRIBERS subscribers, and a backend per address; (slice, backends)."""
    ids = p.p4rt_backends(addresses, "agent-{:03d}", trunk_ports=[1, 2], uplink_port=2)
    sid = p.embb_slice(SCALE_TENANT, {"rate_limit_mbps": 1, "max_delay_ms": 50}, ids[:1])
    p.import_subscribers(scale_subscribers(range(SUBSCRIBERS)))
    return sid, ids


def deploy(p: InProcessPortal, sid: int, backend_ids: list[int]) -> tuple[float, list[dict[str, Any]]]:
    version = p.call("GET", f"/slices/{sid}")["version"]
    p.call("PATCH", f"/slices/{sid}", json={"backend_ids": backend_ids, "version": version})
    t0 = time.perf_counter()
    out = p.call("POST", f"/slices/{sid}/deploy")
    return time.perf_counter() - t0, out["backends"]


def lanes_cpu() -> float:
    return sum(cpu_seconds(pid) for pid in fanout_pool.running_pids())


def portal_cpu() -> float:
    """CPU seconds so far of this process and its fan-out lanes (services/fanout_pool.py)."""
    return time.process_time() + lanes_cpu()


def cpu_split(p: InProcessPortal, fleets: list[Fleet]) -> dict[str, float]:
    """CPU seconds so far of the portal (this process and its fan-out lanes), the targets, the
    database, and the machine (busy, and all of its cores' time): two readings around a deploy
    say what its wall time was spent on, and whether the machine had any left."""
    postmaster = int((p.pg.data / "postmaster.pid").read_text().split()[0])
    busy, total = machine_busy_s()
    lanes = lanes_cpu()
    return {
        "portal": time.process_time() + lanes,  # portal_cpu(), the lanes read once
        "lanes": lanes,
        "targets": sum(cpu_seconds(f.proc.pid) for f in fleets),
        "database": cpu_seconds(postmaster),
        "machine busy": busy,
        "machine": total,
    }


def cpu_table(res: Results, n: int, deploys: list[tuple[str, float, dict[str, float]]]) -> None:
    """Where each deploy's CPU went (``cpu_split`` before and after it: (which, wall s, spent)),
    and the machine's share."""
    cpu = res.table(
        f"CPU seconds spent during the deploys to {n} backends (all on this machine)",
        [
            "deploy",
            "wall s",
            "portal",
            "of it lanes",
            "targets",
            "database",
            "machine busy",
            "machine capacity",
            "busy share",
        ],
        note="portal: this process (API, compile, the drivers' pushes) and its fan-out lanes "
        "(services/fanout_pool.py: processes of their own, used from "
        f"{Settings.model_fields['fanout_min_backends'].default} backends on); targets: the bundled P4Runtime "
        "targets standing in for agents, which in a deployment run on their own hosts; capacity: wall x cores",
    )
    for which, wall_s, spent in deploys:
        cpu.rows.append(
            [which, round(wall_s, 2)]
            + [round(spent[k], 2) for k in ("portal", "lanes", "targets", "database", "machine busy", "machine")]
            + [round(spent["machine busy"] / spent["machine"], 2)]
        )


def measured_deploy(
    p: InProcessPortal, sid: int, backend_ids: list[int], fleets: list[Fleet]
) -> tuple[float, list[dict[str, Any]], dict[str, float]]:
    """``deploy``, and where its CPU went (``cpu_split``'s keys, spent during it)."""
    before = cpu_split(p, fleets)
    wall_s, outcomes = deploy(p, sid, backend_ids)
    after = cpu_split(p, fleets)
    return wall_s, outcomes, {k: after[k] - v for k, v in before.items()}


def reconcile_pass(p: InProcessPortal) -> float:
    t0 = time.perf_counter()
    Reconciler(p.sessions, 1.0).run_once()
    return time.perf_counter() - t0


@dataclass(frozen=True)
class FanOut:
    """The world at N backends, measured: one slice deployed to 1 backend then to all N, a
    reconcile pass after each, and where the N-backend deploy's CPU went."""

    set_up_s: float  # targets, registration, subscribers
    one_s: float
    one_rc_s: float
    all_s: float
    all_rc_s: float
    outcomes: list[dict[str, Any]]
    spent: dict[str, float]  # cpu_split's keys, during the deploy to all N
    in_sync: int
    entries: int  # native entries a backend holds
    idle_cpu: float | None  # the portal's CPU s/s while nothing runs, when asked for
    again_s: float  # the deploy to all N after an edit (one more subscriber)
    again_outcomes: list[dict[str, Any]]
    spent_again: dict[str, float]

    @property
    def new(self) -> int:
        return _new(self.outcomes)

    @property
    def cpu_rows(self) -> list[tuple[str, float, dict[str, float]]]:
        return [("first", self.all_s, self.spent), ("after an edit", self.again_s, self.spent_again)]


def _new(outcomes: list[dict[str, Any]]) -> int:
    """Backends a slice deploy's outcomes put on the new rule set."""
    return sum(b["where"] == "new" for b in outcomes)


def redeploy_figure(res: Results, n: int, m: FanOut) -> None:
    res.figure(
        f"slice deploy fan-out to {n} backends after an edit",
        m.again_s,
        "s",
        baseline=m.one_s,
        baseline_name="the first deploy to 1 backend, same run",
        note="one more subscriber, then the same deploy: every driver session (and lane, when used) is up, "
        f"as for every deploy after a portal process's first; "
        f"{_new(m.again_outcomes)} backends got the new rule set",
    )


def fan_out(n: int, idle_s: float | None = None) -> FanOut:
    """Start ``n`` targets, build the world and measure (``idle_s``: then the portal's CPU over
    that many seconds of nothing, a session open to every backend)."""
    started = time.perf_counter()
    fleets = start_agents(n)
    addresses = [a for f in fleets for a in f.addresses]
    p = InProcessPortal(rate_limit_expensive="100000/minute")
    try:
        sid, ids = world(p, addresses)
        set_up_s = time.perf_counter() - started
        one_s, one = deploy(p, sid, ids[:1])
        assert [b["status"] for b in one] == ["succeeded"], one
        one_rc = reconcile_pass(p)
        all_s, outcomes, spent = measured_deploy(p, sid, ids, fleets)
        all_rc = reconcile_pass(p)
        # an edit, then the same fan-out again: the lanes (services/fanout_pool.py) and every
        # driver session are up, as for every deploy after a portal process's first
        p.import_subscribers(scale_subscribers(range(SUBSCRIBERS, SUBSCRIBERS + 1)))
        again_s, again, spent_again = measured_deploy(p, sid, ids, fleets)
        idle = None
        if idle_s is not None:
            c0, w0 = portal_cpu(), time.perf_counter()
            time.sleep(idle_s)
            idle = (portal_cpu() - c0) / (time.perf_counter() - w0)
        with p.sessions() as s:
            in_sync = s.scalar(select(func.count()).select_from(Backend).where(Backend.sync_state == "in_sync")) or 0
        entries = sum(len(v) for v in p.call("GET", f"/backends/{ids[0]}/rule-sets/1")["plan"]["tables"].values())
    finally:
        p.close()
        for f in fleets:
            f.stop()
    return FanOut(
        set_up_s, one_s, one_rc, all_s, all_rc, outcomes, spent, in_sync, entries, idle, again_s, again, spent_again
    )


def main() -> None:
    res = Results("scale_backends")
    m = fan_out(BACKENDS)
    statuses = {b["status"] for b in m.outcomes}
    note = f"{SUBSCRIBERS} subscribers, {m.entries} native entries a backend; outcomes {sorted(statuses)}"
    res.figure(
        f"slice deploy fan-out to {BACKENDS} backends",
        m.all_s,
        "s",
        baseline=m.one_s,
        baseline_name="the same deploy to 1 backend, same run",
        goal="<= 5 s and <= 10 x baseline (#28)",
        met=m.all_s <= 5.0 and m.all_s <= 10 * m.one_s and m.new == BACKENDS - 1,
        note=note,
    )
    res.figure(
        f"reconcile pass over {BACKENDS} backends",
        m.all_rc_s,
        "s",
        baseline=m.one_rc_s,
        baseline_name="the same pass over 1 backend, same run",
        goal="<= 2 s (#28)",
        met=m.all_rc_s <= 2.0 and m.in_sync == BACKENDS,
        note=f"{m.in_sync} of {BACKENDS} backends in sync after the pass",
    )
    table = res.table(
        "Scale: one slice on N P4Runtime backends (bundled targets as agents)",
        [
            "backends",
            "subscribers",
            "entries a backend",
            "deploy s",
            "reconcile pass s",
            "deploy s a backend",
            "reconcile ms a backend",
        ],
    )
    for n, d, r in ((1, m.one_s, m.one_rc_s), (BACKENDS, m.all_s, m.all_rc_s)):
        table.rows.append([n, SUBSCRIBERS, m.entries, round(d, 2), round(r, 2), round(d / n, 3), round(1e3 * r / n, 1)])
    redeploy_figure(res, BACKENDS, m)
    cpu_table(res, BACKENDS, m.cpu_rows)
    res.write()
    res.print_tables()


if __name__ == "__main__":
    main()
