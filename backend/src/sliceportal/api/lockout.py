"""Failed-login lock-out per (user name, client address), with exponential backoff.

An attempt first *reserves* a slot with one INSERT ... ON CONFLICT DO UPDATE ... WHERE
statement: PostgreSQL serialises concurrent statements on the row lock, so of N parallel
attempts exactly ``max_failures`` get a slot and the rest are refused before a password is
even checked. The slot that reaches the limit also sets ``locked_until``; each consecutive
lock-out doubles its length up to a cap. A correct password clears the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Table, case, delete, func, literal, or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from sliceportal.core.config import Settings
from sliceportal.models import LoginThrottle


@dataclass(frozen=True)
class Slot:
    """A reserved attempt: ``number`` of ``limit`` in the current window."""

    number: int
    limit: int
    locked_until: datetime | None  # set when this attempt is the last one allowed


def reserve(db: Session, settings: Settings, username: str, address: str) -> Slot | None:
    """Reserve one attempt, or None while the pair is locked out (the caller answers 429)."""
    t: Table = LoginThrottle.__table__  # type: ignore[assignment]
    now = func.now()
    window = timedelta(seconds=settings.login_window_seconds)
    limit = settings.login_max_failures
    # A lock that has run out, or failures older than the window, start a new count.
    fresh = or_(t.c.locked_until <= now, t.c.window_start < now - window)
    failures = case((fresh, literal(1)), else_=t.c.failures + 1)
    backoff = func.least(
        settings.login_lockout_seconds * func.power(2, t.c.lockouts), settings.login_lockout_max_seconds
    )
    stmt = (
        insert(t)
        .values(
            username=username,
            address=address,
            failures=1,
            window_start=now,
            lockouts=0,
            locked_until=(now + timedelta(seconds=settings.login_lockout_seconds)) if limit <= 1 else None,
        )
        .on_conflict_do_update(
            index_elements=[t.c.username, t.c.address],
            set_={
                "failures": failures,
                "window_start": case((fresh, now), else_=t.c.window_start),
                "locked_until": case(
                    (failures >= limit, now + func.make_interval(0, 0, 0, 0, 0, 0, backoff)), else_=None
                ),
                "lockouts": case((failures >= limit, t.c.lockouts + 1), else_=t.c.lockouts),
            },
            where=or_(t.c.locked_until.is_(None), t.c.locked_until <= now),
        )
        .returning(t.c.failures, t.c.locked_until)
    )
    row = db.execute(stmt).first()
    db.commit()
    if row is None:
        return None
    return Slot(number=row.failures, limit=limit, locked_until=row.locked_until)


def retry_after(db: Session, username: str, address: str) -> int:
    """Seconds until the pair may try again (for Retry-After)."""
    until = db.scalar(
        select(LoginThrottle.locked_until).where(LoginThrottle.username == username, LoginThrottle.address == address)
    )
    if until is None:
        return 1
    return max(1, int((until - datetime.now(UTC)).total_seconds() + 0.999))


def clear(db: Session, username: str, address: str) -> None:
    """A successful login: the pair starts from zero (and its backoff too)."""
    db.execute(delete(LoginThrottle).where(LoginThrottle.username == username, LoginThrottle.address == address))
