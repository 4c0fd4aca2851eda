"""Bulk subscriber import from CSV: streamed, all-or-nothing, every bad row reported.

Rows are validated one by one while they stream from the upload into a staging table
(PostgreSQL COPY), so memory holds only the duplicate-detection sets, not the file.
Conflicts with rows already in the database are found with set queries against the
staging table in the same pass, for every row the file itself does not refuse, so one
upload reports every bad row; only a file without a single bad row is inserted. An IMSI
names one UE in the whole deployment (services/collisions.py): it is checked across tenants.

CSV columns (header required): ``imsi,ue_ip,teids,tenant,slices`` — ``teids`` and
``slices`` are ';'-separated (may be empty); ``tenant`` and ``slices`` are names or ids.
An optional ``guaranteed_bps`` column gives a subscriber its own guaranteed rate (bit/s);
when any row has one, admission control runs for the backends of the slices those rows
join, after the insert and before the commit (services/admission.py): a refusal rolls the
whole import back.
"""

from __future__ import annotations

import csv
import ipaddress
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from sliceportal.models import Backend, Slice, Tenant
from sliceportal.models.audit import record
from sliceportal.services import admission
from sliceportal.services.admission import AdmissionError, Override
from sliceportal.services.collisions import imsi_in_use
from sliceportal.services.errors import FieldIssue, InvalidError

IMSI = re.compile(r"^[0-9]{14,15}$")
REQUIRED = ("imsi", "ue_ip", "tenant")
KNOWN = (*REQUIRED, "teids", "slices", "guaranteed_bps")
GUARANTEED_MAX = 10**13  # bit/s, as the API's SubscriberCreate.guaranteed_bps
MAX_REPORTED = 1000  # errors listed in the response; the count is always exact
TEID_MAX = 4_294_967_295


@dataclass
class _Seen:
    imsi: set[str] = field(default_factory=set)  # across tenants
    ue_ip: set[tuple[int, int]] = field(default_factory=set)
    teid: set[tuple[int, int]] = field(default_factory=set)


@dataclass
class ImportResult:
    rows: int
    imported: int
    duration_s: float


def _resolver(session: Session) -> tuple[dict[str, Tenant], dict[tuple[int, str], int]]:
    tenants = {t.name: t for t in session.scalars(select(Tenant))}
    tenants.update({str(t.id): t for t in list(tenants.values())})
    slices: dict[tuple[int, str], int] = {}
    for sid, tid, name in session.execute(select(Slice.id, Slice.tenant_id, Slice.name)):
        slices[(tid, name)] = sid
        slices[(tid, str(sid))] = sid
    return tenants, slices


def _check_header(header: list[str]) -> None:
    """Every missing and every unknown column of the header row in one answer (#29): a field
    error per column, on line 1."""
    expected = f"the columns are {','.join(REQUIRED)} and optionally {','.join(KNOWN[len(REQUIRED) :])}"
    if not any(header):
        raise InvalidError(
            f"the file has no header row; {expected}",
            title="Bad CSV header",
            issues=[FieldIssue(field="file", message=f"no header row; {expected}", line=1)],
        )
    missing = [c for c in REQUIRED if c not in header]
    # A misspelt column (teid for teids) would otherwise be dropped without a word.
    unknown = [c for c in header if c and c not in KNOWN]
    # An empty header cell has no name to show: it is named by its place ("column 3").
    unnamed = [f"column {i}" for i, c in enumerate(header, start=1) if not c]
    if not missing and not unknown and not unnamed:
        return
    said = (
        ([f"missing column(s) {', '.join(missing)}"] if missing else [])
        + ([f"unknown column(s) {', '.join(repr(c) for c in unknown)}"] if unknown else [])
        + ([f"no name in {', '.join(unnamed)}"] if unnamed else [])
    )
    raise InvalidError(
        f"the CSV header has {' and '.join(said)}; {expected}",
        title="Bad CSV header",
        issues=[FieldIssue(field=c, message="missing column", line=1) for c in missing]
        + [FieldIssue(field=c, message="unknown column", line=1) for c in unknown]
        + [FieldIssue(field=c, message="column without a name", line=1) for c in unnamed],
    )


def _cell(value: str | None) -> str:
    """A name cell, without the `'` the portal's export puts before a leading = + - @ tab or CR
    (CSV injection: a spreadsheet would run the cell as a formula), so an export imports again."""
    text = (value or "").strip()
    return text[1:] if len(text) > 1 and text[0] == "'" and text[1] in "=+-@\t\r" else text


def import_csv(
    session: Session,
    lines: Iterable[str],
    *,
    tenant_scope: int | None = None,
    override: Override | None = None,
    audit: dict[str, Any] | None = None,
    before_commit: Callable[[Session, ImportResult], None] | None = None,
) -> ImportResult:
    """``audit``: more keys for the import's audit row; ``before_commit`` runs in the import's
    transaction once everything is inserted and admitted."""
    started = time.perf_counter()
    reader = csv.DictReader(lines)
    header = [h.strip() for h in (reader.fieldnames or [])]
    _check_header(header)
    reader.fieldnames = header
    tenants, slices = _resolver(session)
    errors: list[FieldIssue] = []
    error_count = 0
    seen = _Seen()
    conn = session.connection().connection.driver_connection
    assert conn is not None
    conn.execute(
        "CREATE TEMP TABLE subscriber_stage (line int, tenant_id bigint, imsi text, ue_ip inet, "
        "teids bigint[], slice_ids bigint[], guaranteed_bps bigint) ON COMMIT DROP"
    )

    def bad(line: int, column: str, message: str) -> None:
        nonlocal error_count
        error_count += 1
        if len(errors) < MAX_REPORTED:
            errors.append(FieldIssue(field=column, message=message, line=line))

    rows = 0
    with conn.cursor().copy("COPY subscriber_stage FROM STDIN") as copy:
        for row in reader:
            rows += 1
            line = reader.line_num
            if row.get("tenant") is None:  # a short row: csv fills its missing cells with None
                cells = sum(v is not None for k, v in row.items() if k is not None)
                bad(line, "tenant", f"no tenant: the row has {cells} of the header's {len(header)} columns")
                continue
            tenant = tenants.get(_cell(row.get("tenant")))
            if tenant is None:
                bad(line, "tenant", f"unknown tenant {row.get('tenant')!r}")
                continue
            if tenant_scope is not None and tenant.id != tenant_scope:
                bad(line, "tenant", f"unknown tenant {row.get('tenant')!r}")
                continue
            ok = True
            imsi = (row.get("imsi") or "").strip()
            if not IMSI.match(imsi):
                bad(line, "imsi", f"IMSI {imsi!r} is not 14-15 digits")
                ok = False
            elif imsi in seen.imsi:
                bad(line, "imsi", f"IMSI {imsi} appears twice in the file")
                ok = False
            ip: ipaddress.IPv4Address | None = None
            try:
                ip = ipaddress.IPv4Address((row.get("ue_ip") or "").strip())
                if tenant.ue_pool is not None and ip not in ipaddress.IPv4Network(tenant.ue_pool):
                    bad(line, "ue_ip", f"{ip} is outside tenant {tenant.name}'s UE pool {tenant.ue_pool}")
                    ok = False
                elif (tenant.id, int(ip)) in seen.ue_ip:
                    bad(line, "ue_ip", f"UE address {ip} appears twice in the file for tenant {tenant.name}")
                    ok = False
            except ipaddress.AddressValueError:
                bad(line, "ue_ip", f"{row.get('ue_ip')!r} is not an IPv4 address")
                ok = False
            teids: list[int] = []
            for part in filter(None, (p.strip() for p in (row.get("teids") or "").split(";"))):
                if not part.isdigit() or not 1 <= int(part) <= TEID_MAX:
                    bad(line, "teids", f"TEID {part!r} is not in 1..{TEID_MAX}")
                    ok = False
                elif (tenant.id, int(part)) in seen.teid or int(part) in teids:
                    bad(line, "teids", f"TEID {part} is used twice in the file for tenant {tenant.name}")
                    ok = False
                else:
                    teids.append(int(part))
            slice_ids: list[int] = []
            for part in filter(None, (p.strip() for p in _cell(row.get("slices")).split(";"))):
                sid = slices.get((tenant.id, part))
                if sid is None:
                    bad(line, "slices", f"tenant {tenant.name} has no slice {part!r}")
                    ok = False
                else:
                    slice_ids.append(sid)
            guaranteed: int | None = None
            raw = (row.get("guaranteed_bps") or "").strip()
            if raw:
                if not raw.isdigit() or not 1 <= int(raw) <= GUARANTEED_MAX:
                    bad(
                        line,
                        "guaranteed_bps",
                        f"guaranteed rate {raw!r} is not a whole number of bit/s in 1..{GUARANTEED_MAX}",
                    )
                    ok = False
                else:
                    guaranteed = int(raw)
            if not ok or ip is None:
                continue
            seen.imsi.add(imsi)
            seen.ue_ip.add((tenant.id, int(ip)))
            seen.teid.update((tenant.id, t) for t in teids)
            # staged even after a bad row: its conflicts with the database are reported too
            copy.write_row((line, tenant.id, imsi, str(ip), teids, sorted(set(slice_ids)), guaranteed))

    # one indexable join per kind of conflict (imsi / (tenant, ue_ip) / TEID GIN), one row per line
    conflicts = conn.execute(
        """
        SELECT DISTINCT ON (line) line, col, id, tenant_id, tenant, value FROM (
            SELECT st.line, 'imsi' AS col, s.id, t.id AS tenant_id, t.name AS tenant, st.imsi AS value, 1 AS rank
              FROM subscriber_stage st JOIN subscriber s ON s.imsi = st.imsi JOIN tenant t ON t.id = s.tenant_id
            UNION ALL
            SELECT st.line, 'ue_ip', s.id, t.id, t.name, host(st.ue_ip), 2
              FROM subscriber_stage st JOIN subscriber s ON s.tenant_id = st.tenant_id AND s.ue_ip = st.ue_ip
              JOIN tenant t ON t.id = s.tenant_id
            UNION ALL
            SELECT st.line, 'teids', s.id, t.id, t.name, array_to_string(
                     ARRAY(SELECT unnest(st.teids) INTERSECT SELECT unnest(s.teids)), ', '), 3
              FROM subscriber_stage st JOIN subscriber s ON s.tenant_id = st.tenant_id AND s.teids && st.teids
              JOIN tenant t ON t.id = s.tenant_id) c
        ORDER BY line, rank LIMIT %s""",
        (MAX_REPORTED,),
    ).fetchall()
    what = {"imsi": "IMSI", "ue_ip": "UE address", "teids": "TEID"}
    for line, column, existing, tenant_id, tenant_name, value in conflicts:
        if tenant_scope is not None and tenant_id != tenant_scope:
            # another tenant's subscriber: the caller learns the IMSI is taken, not by whom
            bad(line, column, imsi_in_use(value))
        else:
            bad(
                line, column, f"{what[column]} {value} is already used by subscriber {existing} of tenant {tenant_name}"
            )
    if error_count:
        errors.sort(key=lambda e: e.line or 0)
        session.rollback()
        raise InvalidError(
            f"{error_count} bad row(s) of {rows}; nothing was imported", title="Import refused", issues=errors
        )
    if rows == 0:
        raise InvalidError("the file has no rows", field="file")
    session.execute(
        text("""
        WITH inserted AS (
            INSERT INTO subscriber (tenant_id, imsi, ue_ip, teids, guaranteed_bps, version)
            SELECT tenant_id, imsi, ue_ip, teids, guaranteed_bps, 1 FROM subscriber_stage ORDER BY line
            RETURNING id, tenant_id, imsi)
        INSERT INTO subscriber_slice (subscriber_id, slice_id)
        SELECT i.id, unnest(st.slice_ids) FROM inserted i
        JOIN subscriber_stage st ON st.tenant_id = i.tenant_id AND st.imsi = i.imsi""")
    )
    guaranteed_slices = [
        int(sid)
        for (sid,) in conn.execute(
            "SELECT DISTINCT unnest(slice_ids) FROM subscriber_stage WHERE guaranteed_bps IS NOT NULL"
        )
    ]
    if guaranteed_slices:
        joined = list(session.scalars(select(Slice).where(Slice.id.in_(guaranteed_slices)).order_by(Slice.id)))
        backends = list(
            session.scalars(
                select(Backend).where(Backend.id.in_([b.id for s in joined for b in s.backends])).order_by(Backend.id)
            )
        )
        try:
            admission.check(session, backends, override=override, action="import", subject=None, waive=joined)
        except AdmissionError:
            session.rollback()  # nothing of the import is kept
            raise
    record(session, "import", "subscriber", None, after={"rows": rows, **(audit or {})}, tenant_id=tenant_scope)
    result = ImportResult(rows=rows, imported=rows, duration_s=time.perf_counter() - started)
    if before_commit is not None:  # the job's outcome, in the transaction of the rows (services/import_jobs.py)
        before_commit(session, result)
    session.commit()
    return result
