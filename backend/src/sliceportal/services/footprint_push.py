"""What a completed push tells slice status (issue #28), stored when the push completes.

A deploy compiles the backend's configuration and puts the result in force: its rule set
*is* that configuration compiled. So when it succeeds, the rule set's footprint (what the
backend holds) and, as the backend's wanted digests, the very same digests are stored,
keyed by the footprint generations read *before* the compile (``input_key``, called by the
deploy before it compiles). An edit committed after that read bumps a generation: the key no
longer matches, the wanted digests are recomputed (by the controller, or by the first read),
and the slice shows ``pending`` -- never a stale ``deployed``. Without this the first read
after every deploy compiled each backend again (3.3 s at 10 000 subscribers on 3 backends).

A rollback puts an older rule set in force: what the configuration compiles to for it is not
known without a compile, which the controller's ``FootprintRefresher`` does on the NOTIFY
every completed push sends.

Storing is best effort: the push is done and recorded; a cache that could not be written is
computed by the next read instead.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from sliceportal.models import Deployment, DeploymentKind, DeploymentStatus, RuleSet
from sliceportal.rules.ir import RuleIR
from sliceportal.services import footprint_state as state
from sliceportal.services.footprint import ir_footprint

log = logging.getLogger(__name__)

CHANNEL = "sliceportal_footprint"  # NOTIFYed by the generation triggers (migration 0018) and here
input_key = state.input_key  # read it before the deploy compiles
input_keys = state.input_keys


# A rule set's footprint depends on its IR alone, and its digest names the IR
# (NativePlan.version == RuleIR.digest(), checked by drivers.push.plan_for): a slice deployed to
# a fleet puts one IR on every backend, whose footprint is worked out once, not once a backend
# (4 ms each at 10 000 subscribers).
_BY_DIGEST: OrderedDict[str, dict[str, Any]] = OrderedDict()
_BY_DIGEST_MAX = 16
_by_digest_lock = threading.Lock()


def _footprint(rule_set_id: int, digest: str, ir: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The footprint row of rule set ``rule_set_id`` (``digest``), its IR asked for (``ir``)
    only when no rule set of the same digest has had it worked out."""
    with _by_digest_lock:
        known = _BY_DIGEST.get(digest)
    if known is None:
        doc = ir()
        known = ir_footprint(rule_set_id, doc)
        if not doc:  # a row without its IR names nothing to share
            return known
        with _by_digest_lock:
            _BY_DIGEST[digest] = known
            while len(_BY_DIGEST) > _BY_DIGEST_MAX:
                _BY_DIGEST.popitem(last=False)
    return {**known, "rule_set_id": rule_set_id}


def after_push(session: Session, dep: Deployment, key: str | None, ir: RuleIR | None = None) -> None:
    """Store what a finished push ``dep`` left in force (nothing when it failed). ``key``: the
    deploy's ``input_key`` read before it compiled; None for a rollback (not compiled now).
    ``ir``: the IR of its rule set when the caller has it (the rule set is then not read)."""
    if dep.status != DeploymentStatus.SUCCEEDED:
        return
    try:
        if ir is not None:  # the rule set's digest is its IR's (drivers.push.plan_for checks it)
            row = _footprint(dep.rule_set_id, ir.digest(), ir.to_json)
        else:
            rs = session.get_one(RuleSet, dep.rule_set_id)
            row = _footprint(rs.id, rs.digest, lambda: rs.ir or {})
        wanted = None
        if key is not None and dep.kind == DeploymentKind.DEPLOY:
            wanted = state.Wanted(dep.rule_set_id, key, row["digests"], "")
        # the refresher's pass finds the row stale if an edit came after ``key`` was read (its own
        # NOTIFY was heard while the previous rule set was in force), or after a rollback
        state.store_pushed(session, row, dep.backend_id, wanted, CHANNEL)
    except Exception:  # a cache: the next read computes it
        session.rollback()
        log.warning(
            "backend %s: the footprint of rule set %s not stored; the next read computes it",
            dep.backend_id,
            dep.rule_set_id,
            exc_info=True,
        )
