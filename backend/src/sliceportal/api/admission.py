"""The admission-override header: an operator admits what admission control refuses, with a reason.

``Admission-Override: <reason>`` on a slice create / edit or a deploy. Only operators may
send it (tenants and integrators get 403); the reason and the overridden computation are
audited (services/admission.py).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header

from sliceportal.api.deps import CurrentUser
from sliceportal.api.errors import ApiError
from sliceportal.models import Role
from sliceportal.services.admission import OVERRIDE_MAX, Override


async def admission_override(  # no I/O: no thread-pool hop (api/deps.py)
    principal: CurrentUser,
    admission_override: Annotated[
        str | None,
        Header(
            max_length=OVERRIDE_MAX,
            description="operators only: admit what admission control refuses; the reason is audited",
        ),
    ] = None,
) -> Override | None:
    if admission_override is None:
        return None
    if principal.role is not Role.OPERATOR:
        raise ApiError(403, "Forbidden", "only operators may override admission control", field="admission_override")
    if not admission_override.strip():
        raise ApiError(422, "Validation failed", "an admission override needs a reason", field="admission_override")
    return Override(admission_override.strip())


AdmissionOverride = Annotated[Override | None, Depends(admission_override)]
