"""The controller's record in the database, and how the API processes read it.

The controller (one leader in the cluster) writes its heartbeat, its loops' statuses and
the live testbed's state every beat; any API worker, on any host, reads them from here.
Congestion scenarios go the other way: the API records a command, the leader applies it
at its next beat. Ages are measured with the database's clock on both sides, so hosts
whose clocks differ still agree on whether a report is fresh.

This module only touches the tables (``models.controller``): the API imports it without
pulling in the controller's machinery.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from sliceportal.core.loops import LOOPS
from sliceportal.models.controller import END, START, ControllerHeartbeat, TestbedCommand, TestbedReport
from sliceportal.schemas.testbed import TestbedState

ROLE = "controller"
REPORT_ID = 1
# A report older than this many beats (or a heartbeat older than this many lease periods)
# is from a controller that is gone.
STALE_AFTER_BEATS = 6
STALE_AFTER_PERIODS = 3


@dataclass(frozen=True)
class Leader:
    host: str
    pid: int
    since: datetime
    beat_at: datetime
    age_s: float
    period_s: float
    loops: list[dict[str, Any]]

    @property
    def alive(self) -> bool:
        return self.age_s <= STALE_AFTER_PERIODS * self.period_s


@dataclass(frozen=True)
class Report:
    state: TestbedState
    base_pps: dict[int, float]
    reported_at: datetime
    age_s: float
    host: str
    pid: int


def loop_records() -> list[dict[str, Any]]:
    """This process's supervised loops, as /health shows them."""
    out = []
    for st in LOOPS.statuses():
        loop = LOOPS.get(st.name)
        out.append(
            {
                "name": st.name,
                "alive": st.alive(),
                "running": loop is not None and loop.running,
                "period_s": st.period_s,
                "last_success": st.last_success,
                "last_error": st.last_error,
                "last_error_at": st.last_error_at,
                "consecutive_failures": st.consecutive_failures,
                "restarts": st.restarts,
            }
        )
    return out


def _json(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v.isoformat() if isinstance(v, datetime) else v for k, v in r.items()} for r in records]


def beat(session: Session, host: str, pid: int, since: datetime, period_s: float, loops: list[dict[str, Any]]) -> None:
    values = {
        "host": host,
        "pid": pid,
        "since": since,
        "period_s": period_s,
        "loops": _json(loops),
        "beat_at": func.now(),
    }
    stmt = insert(ControllerHeartbeat).values(role=ROLE, **values)
    session.execute(stmt.on_conflict_do_update(index_elements=[ControllerHeartbeat.role], set_=values))
    session.commit()


def leader(session: Session) -> Leader | None:
    row = session.execute(
        select(ControllerHeartbeat, func.extract("epoch", func.now() - ControllerHeartbeat.beat_at)).where(
            ControllerHeartbeat.role == ROLE
        )
    ).first()
    if row is None:
        return None
    hb, age = row
    return Leader(
        host=hb.host,
        pid=hb.pid,
        since=hb.since,
        beat_at=hb.beat_at,
        age_s=max(0.0, float(age)),
        period_s=hb.period_s,
        loops=list(hb.loops or []),
    )


def resign(session: Session, host: str, pid: int) -> None:
    """A leader that stops on purpose removes its heartbeat (no one leads until the next one)."""
    hb = ControllerHeartbeat
    session.execute(delete(hb).where(hb.role == ROLE, hb.host == host, hb.pid == pid))
    session.commit()


def report_testbed(session: Session, host: str, pid: int, state: TestbedState, base_pps: dict[int, float]) -> None:
    values = {
        "host": host,
        "pid": pid,
        "state": state.model_dump(mode="json"),
        "base_pps": {str(k): v for k, v in base_pps.items()},
        "reported_at": func.now(),
    }
    stmt = insert(TestbedReport).values(id=REPORT_ID, **values)
    session.execute(stmt.on_conflict_do_update(index_elements=[TestbedReport.id], set_=values))
    session.commit()


def testbed_report(session: Session) -> Report | None:
    row = session.execute(
        select(TestbedReport, func.extract("epoch", func.now() - TestbedReport.reported_at)).where(
            TestbedReport.id == REPORT_ID
        )
    ).first()
    if row is None:
        return None
    rep, age = row
    return Report(
        state=TestbedState.model_validate(rep.state),
        base_pps={int(k): float(v) for k, v in (rep.base_pps or {}).items()},
        reported_at=rep.reported_at,
        age_s=max(0.0, float(age)),
        host=rep.host,
        pid=rep.pid,
    )


def record_congestion(session: Session, backend_id: int, factor: float, until: datetime, actor: str) -> int:
    return _record(session, TestbedCommand(kind=START, backend_id=backend_id, factor=factor, until=until, actor=actor))


def record_congestion_end(session: Session, backend_id: int, actor: str) -> int:
    """Ends the backend's running scenario when the controller applies it (none running: no error)."""
    now = datetime.now(UTC)
    return _record(session, TestbedCommand(kind=END, backend_id=backend_id, factor=1.0, until=now, actor=actor))


def _record(session: Session, cmd: TestbedCommand) -> int:
    cmd.error = ""
    session.add(cmd)
    session.commit()
    return cmd.id


def pending_commands(session: Session) -> list[TestbedCommand]:
    return list(
        session.scalars(select(TestbedCommand).where(TestbedCommand.applied_at.is_(None)).order_by(TestbedCommand.id))
    )


def mark_applied(session: Session, command_id: int, error: str = "") -> None:
    """The controller's verdict on a command (committed with its next testbed report, so the API
    never sees a command applied that the state it reports does not show yet)."""
    session.execute(
        update(TestbedCommand).where(TestbedCommand.id == command_id).values(applied_at=func.now(), error=error[:2000])
    )


def command_outcome(session: Session, command_id: int) -> tuple[bool, str]:
    """(applied, error) of a command; error is ``kind: message`` (kinds: unknown, down, refused, expired)."""
    row = session.execute(
        select(TestbedCommand.applied_at, TestbedCommand.error).where(TestbedCommand.id == command_id)
    ).one()
    session.commit()  # the next look must see the controller's newer commits
    return row.applied_at is not None, row.error or ""


def withdraw(session: Session, command_id: int, why: str) -> bool:
    """Take back a command nobody applied yet (True); False: the controller applied it meanwhile."""
    done = session.execute(
        update(TestbedCommand)
        .where(TestbedCommand.id == command_id, TestbedCommand.applied_at.is_(None))
        .values(applied_at=func.now(), error=why[:2000])
        .returning(TestbedCommand.id)
    ).first()
    session.commit()
    return done is not None
