"""Scale: #28's fleet -- one slice of 10 000 subscribers deployed to 1 000 P4Runtime backends at
once, and the reconcile loop's pass over them (``scale_backends`` at ten times its size, with its
world, deploy and CPU accounting).

The backends are bundled P4Runtime targets, 25 to a process (40 processes), registered through
the API. The deploy's CPU is split between the portal (one interpreter), the targets and the
database, beside the machine's capacity: which of them bounds the fan-out on this host.

    .venv/bin/python bench/scale_fleet.py          # BENCH_QUICK=1: 30 backends, 1 000 subscribers
"""

from __future__ import annotations

from _results import Results, quick
from scale_backends import SUBSCRIBERS, cpu_table, fan_out, redeploy_figure

BACKENDS = 30 if quick() else 1000
IDLE_S = 5.0


def main() -> None:
    res = Results("scale_fleet")
    m = fan_out(BACKENDS, idle_s=IDLE_S)
    res.figure(
        f"slice deploy fan-out to {BACKENDS} backends",
        m.all_s,
        "s",
        baseline=m.one_s,
        baseline_name="the same deploy to 1 backend, same run",
        goal="<= 30 s (#28)",
        met=m.all_s <= 30.0 and m.new == BACKENDS - 1,
        note=f"{SUBSCRIBERS} subscribers; {m.new} backends got the new rule set; set-up (targets, "
        f"registration, subscribers) {m.set_up_s:.0f} s",
    )
    res.figure(
        f"reconcile pass over {BACKENDS} backends",
        m.all_rc_s,
        "s",
        baseline=m.one_rc_s,
        baseline_name="the same pass over 1 backend, same run",
        note=f"{m.in_sync} of {BACKENDS} backends in sync after the pass",
    )
    assert m.idle_cpu is not None
    res.figure(
        f"portal CPU while idle, sessions to {BACKENDS} backends open",
        m.idle_cpu,
        "s/s",
        note=f"CPU seconds per second of the portal process and its lanes over {IDLE_S:g} s after the "
        "reconcile pass, nothing running "
        "(docs/bmv2.md, 'One thread for every stream')",
    )
    redeploy_figure(res, BACKENDS, m)
    cpu_table(res, BACKENDS, m.cpu_rows)
    res.write()
    res.print_tables()


if __name__ == "__main__":
    main()
