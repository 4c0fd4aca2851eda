"""Scale: #28's fleet -- one slice of 10 000 subscribers deployed to 1 000 P4Runtime backends at
once, and the reconcile loop's pass over them (``scale_backends`` at ten times its size, with its
world, deploy and CPU accounting).

The backends are bundled P4Runtime targets, 25 to a process (40 processes), registered through
the API. The deploy's CPU is split between the portal (one interpreter), the targets and the
database, beside the machine's capacity: which of them bounds the fan-out on this host.

    .venv/bin/python bench/scale_fleet.py          # BENCH_QUICK=1: 30 backends, 1 000 subscribers
"""

from __future__ import annotations

import time

from _results import Results, quick
from scale_backends import SUBSCRIBERS, cpu_split, cpu_table, deploy, reconcile_pass, start_agents, world
from sqlalchemy import func, select
from stack_common import InProcessPortal

from sliceportal.models import Backend

BACKENDS = 30 if quick() else 1000
IDLE_S = 5.0


def main() -> None:
    res = Results("scale_fleet")
    started = time.perf_counter()
    fleets = start_agents(BACKENDS)
    addresses = [a for f in fleets for a in f.addresses]
    p = InProcessPortal(rate_limit_expensive="100000/minute")
    try:
        sid, ids = world(p, addresses)
        set_up_s = time.perf_counter() - started
        one_s, one = deploy(p, sid, ids[:1])
        assert [b["status"] for b in one] == ["succeeded"], one
        before = cpu_split(p, fleets)
        all_s, outcomes = deploy(p, sid, ids)
        after = cpu_split(p, fleets)
        rc_s = reconcile_pass(p)
        # what the portal spends while nothing happens, a session open to every backend
        c0, w0 = time.process_time(), time.perf_counter()
        time.sleep(IDLE_S)
        idle = (time.process_time() - c0) / (time.perf_counter() - w0)
        with p.sessions() as s:
            in_sync = s.scalar(select(func.count()).select_from(Backend).where(Backend.sync_state == "in_sync"))
    finally:
        p.close()
        for f in fleets:
            f.stop()
    new = sum(b["where"] == "new" for b in outcomes)
    res.figure(
        f"slice deploy fan-out to {BACKENDS} backends",
        all_s,
        "s",
        baseline=one_s,
        baseline_name="the same deploy to 1 backend, same run",
        goal="<= 30 s (#28)",
        met=all_s <= 30.0 and new == BACKENDS - 1,
        note=f"{SUBSCRIBERS} subscribers; {new} backends got the new rule set; set-up (targets, "
        f"registration, subscribers) {set_up_s:.0f} s",
    )
    res.figure(
        f"reconcile pass over {BACKENDS} backends",
        rc_s,
        "s",
        note=f"{in_sync} of {BACKENDS} backends in sync after the pass",
    )
    res.figure(
        f"portal CPU while idle, sessions to {BACKENDS} backends open",
        idle,
        "s/s",
        note=f"process CPU seconds per second over {IDLE_S:g} s after the reconcile pass, nothing running "
        "(docs/bmv2.md, 'One thread for every stream')",
    )
    cpu_table(res, BACKENDS, all_s, {k: after[k] - v for k, v in before.items()})
    res.write()
    res.print_tables()


if __name__ == "__main__":
    main()
