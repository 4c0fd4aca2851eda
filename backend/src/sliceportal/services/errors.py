"""Domain errors raised by services: what went wrong and which field a caller must change.

Services know nothing of HTTP (layering: only ``api`` does); ``api/errors.py`` maps each
class to its problem+json status. Every error here means: nothing was changed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldIssue:
    field: str
    message: str
    line: int | None = None  # CSV imports: the line of the file


class DomainError(Exception):
    """Base of the service layer's refusals; ``title`` is short, ``detail`` actionable."""

    title = "Refused"

    def __init__(
        self, detail: str, *, field: str | None = None, issues: list[FieldIssue] | None = None, title: str | None = None
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        if title is not None:
            self.title = title
        self.issues = issues or ([FieldIssue(field, detail)] if field else [])


class NotFoundError(DomainError):
    title = "Not found"


class InvalidError(DomainError):
    """The request cannot be carried out as given (the compiler or a driver refuses it)."""

    title = "Validation failed"


class ConflictError(DomainError):
    """The request conflicts with the current state (capacity, a running deployment)."""

    title = "Conflict"


class BusyError(ConflictError):
    """Another deployment or reconcile of the same backend holds it; retry shortly."""

    def __init__(self, detail: str, *, retry_after_s: int = 2) -> None:
        super().__init__(detail, title="Busy")
        self.retry_after_s = retry_after_s


class UnavailableError(DomainError):
    """A dependency (a data plane, the database) is down; retry after ``retry_after_s``."""

    title = "Service unavailable"

    def __init__(self, detail: str, *, retry_after_s: int = 2, title: str | None = None) -> None:
        super().__init__(detail, title=title)
        self.retry_after_s = retry_after_s
