"""#27: an intent's refusal from a backend's whole configuration (which other tenants' slices
share) reaches a caller scoped to one tenant without the other tenant's slice or service."""

from __future__ import annotations

from sliceportal.models import Backend
from sliceportal.rules.errors import AmbiguousMatchError, CompileError
from sliceportal.rules.spec import ServiceSpec, SliceSpec
from sliceportal.services.errors import ConflictError, InvalidError
from sliceportal.services.intents import _backend_refusal

MINE, THEIRS = 1, 2
SPECS = [
    SliceSpec(ref=10, name="mine-embb", tenant_ref=MINE, type_lanes=(0, 2)),
    SliceSpec(
        ref=20,
        name="blue-video",
        tenant_ref=THEIRS,
        type_lanes=(0, 2),
        services=(ServiceSpec(name="secret-svc", lane=0),),
    ),
]
BACKEND = Backend(id=3, name="bmv2")
CROSS = AmbiguousMatchError(
    "slices 'mine-embb' and 'blue-video' both claim UE addresses from 10.45.0.7 with the same ports / DSCP 0",
    slice_ref=10,
    field="subscribers",
)


def test_a_tenant_is_told_of_a_collision_not_whose() -> None:
    err = _backend_refusal(CROSS, BACKEND, SPECS, MINE)
    assert isinstance(err, ConflictError) and "another tenant's configuration on backend 3" in err.detail
    assert "blue-video" not in err.detail and [i.field for i in err.issues] == ["subscribers"]
    # a service name or a slice ref of the other tenant counts the same
    by_service = CompileError("service secret-svc claims port 5000", slice_ref=None, field="dst_ports")
    assert "secret-svc" not in _backend_refusal(by_service, BACKEND, SPECS, MINE).detail
    by_ref = CompileError("slice 20: no lanes", slice_ref=20)
    assert "another tenant's" in _backend_refusal(by_ref, BACKEND, SPECS, MINE).detail
    # unknown specs (the configuration itself could not be read): assume the worst
    assert "another tenant's" in _backend_refusal(by_ref, BACKEND, None, MINE).detail


def test_operators_and_own_refusals_keep_the_compilers_words() -> None:
    assert _backend_refusal(CROSS, BACKEND, SPECS, None).detail == CROSS.message
    own = CompileError(
        "slice 'mine-embb': intent 4 steers to RR path 9, but the target has paths 0..7", slice_ref=10, field="rr_path"
    )
    err = _backend_refusal(own, BACKEND, SPECS, MINE)
    assert isinstance(err, InvalidError) and err.detail == own.message
