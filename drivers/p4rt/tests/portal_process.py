"""One portal process's P4Runtime driver, in a process of its own, for test_multiprocess.py:
``python portal_process.py ADDRESS`` answers one JSON line per JSON command on stdin.

Commands: {"op": "push", "k": N} lowers ``versioned_ir(N)`` and pushes it as a deploy does
(push.push, read-back included); {"op": "lower", "k": N}; {"op": "read"};
{"op": "reconcile", "plan": <NativePlan JSON>} as the controller does, with the plan stored
at deploy time (never lowered here); {"op": "quit"}.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

from irs import two_tenants

from sliceportal.drivers.contract import NativePlan
from sliceportal.drivers.push import plan_for, push, reconcile_once
from sliceportal.rules.ir import Action, Match, Rule, RuleIR, Ternary
from sliceportal_p4rt.driver import Driver


def versioned_ir(k: int) -> RuleIR:
    """Version ``k``: two_tenants with ``k`` more rules, each new one on top, so a lowering
    that did not keep the switch's priorities would renumber every rule below it."""
    base = two_tenants()
    extra = tuple(
        Rule(Match(vni=Ternary.exact(1001, 24), dst_port=Ternary.exact(7000 + j, 16)), Action(1, 6, 0), f"v{j}")
        for j in reversed(range(k))
    )
    return dataclasses.replace(base, rules=extra + base.rules)


def serve(address: str) -> None:
    driver = Driver({"address": address})  # every process with the same options, as workers have
    for line in sys.stdin:
        cmd = json.loads(line)
        out: dict[str, Any] = {}
        if cmd["op"] == "push":
            plan = plan_for(driver, versioned_ir(cmd["k"]))
            outcome = push(driver, plan)
            out = {
                "ok": outcome.ok,
                "verified": outcome.verified,
                "version": outcome.version_after,
                "diff": outcome.diff,
                "error": outcome.error,
                "plan": plan.model_dump(mode="json"),
            }
        elif cmd["op"] == "lower":
            out = {"version": driver.lower(versioned_ir(cmd["k"])).version}
        elif cmd["op"] == "read":
            out = {"version": driver.read_state().version}
        elif cmd["op"] == "reconcile":
            report = reconcile_once(driver, NativePlan.model_validate(cmd["plan"]))
            out = {
                "in_sync": report.in_sync,
                "found": report.found_version,
                "pushed": report.outcome is not None,
                "error": report.error,
            }
        elif cmd["op"] == "quit":
            break
        print(json.dumps(out), flush=True)
    driver.close()


if __name__ == "__main__":
    serve(sys.argv[1])
