from __future__ import annotations

from sliceportal.schemas.common import ORMModel


class SliceTypePublic(ORMModel):
    id: int
    name: str
    traffic_classes: int
    lanes: list[int]
    use_cases: list[str]
    position: int
