"""Typed errors of the rule compiler: each names the slice / service / field at fault."""

from __future__ import annotations


class CompileError(Exception):
    """The configuration cannot be compiled; ``str()`` is the message a user acts on."""

    def __init__(
        self,
        message: str,
        *,
        slice_ref: int | None = None,
        service: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.slice_ref = slice_ref
        self.service = service
        self.field = field

    def to_dict(self) -> dict[str, object]:
        return {
            "message": self.message,
            "slice_ref": self.slice_ref,
            "service": self.service,
            "field": self.field,
        }


class SpecError(CompileError):
    """A single spec object is invalid on its own (out-of-range value, malformed address)."""


class AmbiguousMatchError(CompileError):
    """Two services / slices claim the same packets for different actions."""


class MissingMatchFieldError(CompileError):
    """The target cannot key on a field the configuration needs."""
