"""The live emulated testbed: per-backend state, and the congestion scenario (operators only).

The testbed runs in the controller process (``control/controller.py``), not in this one:
its state is what the controller last reported to the database, and a congestion scenario
is recorded there for the controller to apply at its next beat (``control/state.py``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from sliceportal.api.deps import CurrentUser, SessionDep
from sliceportal.api.errors import ApiError
from sliceportal.api.routing import session_router
from sliceportal.control import state
from sliceportal.models import Role
from sliceportal.schemas.common import PathId
from sliceportal.schemas.testbed import CongestionCreate, CongestionStarted, TestbedState

router = session_router(prefix="/testbed", tags=["testbed"])

# A testbed report older than this is from a controller that is gone (it reports every 0.5 s).
REPORT_FRESH_S = 5.0
APPLY_WAIT_S = 5.0  # how long a congestion request waits for the controller to apply it


def _operator(principal: CurrentUser) -> None:
    if principal.role is not Role.OPERATOR:
        raise ApiError(403, "Forbidden", "only operators see and drive the testbed")


def _running(session: SessionDep) -> state.Report:
    report = state.testbed_report(session)
    if report is None:
        raise ApiError(
            409,
            "No testbed",
            "no emulated testbed runs: no controller has ever reported one "
            "(start `sliceportal controller` with TESTBED=true, or `make run`)",
        )
    if report.age_s > REPORT_FRESH_S:
        raise ApiError(
            409,
            "No testbed",
            "no emulated testbed runs: no controller has reported since "
            f"{report.reported_at.isoformat(timespec='seconds')} ({report.age_s:.0f} s ago; the last "
            f"was {report.host}:{report.pid})",
        )
    if not report.state.running:
        raise ApiError(409, "No testbed", f"no emulated testbed runs: {report.state.error or 'not started'}")
    return report


def _await_controller(session: SessionDep, command: int, backend_id: int) -> None:
    """Until the controller applied the command (it looks every beat, 0.5 s), so that the state
    read after a 202 shows the scenario; its refusal is this request's error."""
    deadline = time.monotonic() + APPLY_WAIT_S
    while True:
        applied, error = state.command_outcome(session, command)
        if applied:
            break
        if time.monotonic() > deadline:
            if state.withdraw(session, command, "expired: the controller did not take it in time"):
                raise ApiError(
                    409,
                    "No testbed",
                    f"the controller did not take the scenario within {APPLY_WAIT_S:g} s; nothing was changed",
                )
            continue  # applied just now: its verdict is read on the next pass
        time.sleep(0.05)
    kind, _, why = error.partition(": ")
    if not error:
        return
    if kind == "unknown":
        raise ApiError(422, "Unknown backend", why, field="backend_id")
    if kind == "down":
        raise ApiError(409, "Backend down", f"backend {backend_id} is down: {why}", field="backend_id")
    raise ApiError(409, "Not applied", f"the testbed did not apply it: {why or error}", field="backend_id")


@router.get("", response_model=TestbedState)
def read_testbed(principal: CurrentUser, session: SessionDep) -> TestbedState:
    _operator(principal)
    return _running(session).state


@router.post("/congestion", response_model=CongestionStarted, status_code=202)
def start_congestion(body: CongestionCreate, principal: CurrentUser, session: SessionDep) -> CongestionStarted:
    """Overload one backend ``factor`` times for ``duration_s`` (its egress capacity drops
    to its offered load / factor): its data plane's own queues decide which lanes lose (the
    low ones first, seed 000 Table 5); it recovers by itself when the time is up. Answered
    once the controller applied it (within a beat, 0.5 s)."""
    _operator(principal)
    report = _running(session)
    plane = next((b for b in report.state.backends if b.backend_id == body.backend_id), None)
    if plane is None or body.backend_id not in report.base_pps:
        raise ApiError(
            422, "Unknown backend", f"backend {body.backend_id} is not part of the testbed", field="backend_id"
        )
    if not plane.up:
        raise ApiError(
            409,
            "Backend down",
            f"backend {body.backend_id} is down: {plane.reason or 'not started'}",
            field="backend_id",
        )
    if not plane.congestion_mechanism:
        raise ApiError(
            409,
            "No congestion mechanism",
            f"backend {body.backend_id} ({plane.name}) has no egress rate the testbed can lower",
            field="backend_id",
        )
    until = datetime.now(UTC) + timedelta(seconds=body.duration_s)
    command = state.record_congestion(session, body.backend_id, body.factor, until, principal.username)
    _await_controller(session, command, body.backend_id)
    offered = report.base_pps[body.backend_id]
    # the bits per packet the testbed sends, from its own report (the product does not import the
    # testbed package, whose frame size this is)
    bits_per_packet = plane.offered_bps / plane.offered_pps if plane.offered_pps else 0.0
    return CongestionStarted(
        backend_id=body.backend_id,
        factor=body.factor,
        offered_pps=offered,
        egress_capacity_bps=offered * bits_per_packet / body.factor,
        until=until,
    )


@router.delete("/congestion/{backend_id}", status_code=204)
def end_congestion(backend_id: PathId, principal: CurrentUser, session: SessionDep) -> None:
    """End a backend's congestion scenario now instead of at its ``until`` (its egress capacity
    comes back within the traffic step's second); nothing running there is no error. Answered
    once the controller applied it."""
    _operator(principal)
    report = _running(session)
    if backend_id not in report.base_pps:
        raise ApiError(404, "Unknown backend", f"backend {backend_id} is not part of the testbed")
    command = state.record_congestion_end(session, backend_id, principal.username)
    _await_controller(session, command, backend_id)
