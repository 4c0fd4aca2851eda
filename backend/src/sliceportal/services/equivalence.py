"""The equivalence check every deploy preview carries (issue #20 item 4).

Asks the backend's driver for the ternary view of the plan it lowered (the entries it
would write) and proves it equal to the compiled IR over the whole key space
(``rules.equivalence``). Bounded, so a preview never waits long: past the budget, or when
the driver gives no view, the answer is ``unchecked`` with the reason. The same result is
stored with the rule set at deploy time (``RuleSet.explanation["equivalence"]``).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from sliceportal.drivers.contract import NativePlan, ternary_view_of
from sliceportal.rules.equivalence import (
    MAX_CUBES,
    MAX_SECONDS,
    EquivalenceResult,
    ViewError,
    check,
    unchecked,
)
from sliceportal.rules.ir import RuleIR

# The preview's budget: a fraction of a second on the largest seed 000 Table 3 case, so
# these leave a wide margin (docs/packets.md "Rule-set equivalence" has the figures).
PREVIEW_MAX_CUBES = MAX_CUBES
PREVIEW_MAX_SECONDS = MAX_SECONDS


def check_plan(
    ir: RuleIR,
    plan: NativePlan,
    driver: object,
    *,
    max_cubes: int = PREVIEW_MAX_CUBES,
    max_seconds: float = PREVIEW_MAX_SECONDS,
) -> EquivalenceResult:
    """Is ``plan`` (lowered by ``driver`` from ``ir``) the IR's classifier on every key?"""
    started = time.monotonic()
    try:
        view = ternary_view_of(driver, plan)
    except ViewError as e:
        return unchecked(f"{plan.driver}: {e}", (time.monotonic() - started) * 1000)
    result = check(
        ir,
        view,
        max_cubes=max_cubes,
        max_seconds=max_seconds,
        reason=f"the {plan.driver} driver gives no ternary view of its plan",
    )
    # the reported time includes deriving the view from the plan's entries
    return dataclasses.replace(result, elapsed_ms=round((time.monotonic() - started) * 1000, 1))


def to_json(result: EquivalenceResult) -> dict[str, Any]:
    """JSON-able, as the preview shows it and the rule set stores it."""
    out = dataclasses.asdict(result)
    out["verdict"] = result.verdict.value
    return out
