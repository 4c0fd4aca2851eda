"""The live emulated testbed: per-backend state, and the congestion scenario (operators only)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from sliceportal.api.deps import CurrentUser
from sliceportal.api.errors import ApiError
from sliceportal.models import Role
from sliceportal.schemas.testbed import CongestionCreate, CongestionStarted, TestbedState
from sliceportal.testbed.live import FRAME_SIZE, BackendDown, LiveTestbed

router = APIRouter(prefix="/testbed", tags=["testbed"])


def _operator(principal: CurrentUser) -> None:
    if principal.role is not Role.OPERATOR:
        raise ApiError(403, "Forbidden", "only operators see and drive the testbed")


def _running(request: Request) -> LiveTestbed:
    testbed: LiveTestbed | None = getattr(request.app.state, "testbed", None)
    if testbed is None or not testbed.running:
        why = testbed.error if testbed is not None and testbed.error else "the portal runs without one (TESTBED=false)"
        raise ApiError(409, "No testbed", f"no emulated testbed runs: {why}")
    return testbed


@router.get("", response_model=TestbedState)
def read_testbed(principal: CurrentUser, request: Request) -> TestbedState:
    _operator(principal)
    return _running(request).state()


@router.post("/congestion", response_model=CongestionStarted, status_code=202)
def start_congestion(body: CongestionCreate, principal: CurrentUser, request: Request) -> CongestionStarted:
    """Overload one backend ``factor`` times for ``duration_s`` (its egress capacity drops
    to its offered load / factor): its data plane's own queues decide which lanes lose (the
    low ones first, seed 000 Table 5); it recovers by itself when the time is up."""
    _operator(principal)
    testbed = _running(request)
    try:
        plane = testbed.congest(body.backend_id, body.duration_s, body.factor)
    except KeyError:
        raise ApiError(422, "Unknown backend", f"backend {body.backend_id} is not part of the testbed",
                       field="backend_id") from None
    except BackendDown as exc:
        raise ApiError(409, "Backend down", f"backend {body.backend_id} is down: {exc}", field="backend_id") from None
    assert plane.congestion_until is not None
    return CongestionStarted(backend_id=body.backend_id, factor=body.factor, offered_pps=plane.base_pps,
                             egress_capacity_bps=plane.base_pps * FRAME_SIZE * 8 / body.factor,
                             until=plane.congestion_until)
