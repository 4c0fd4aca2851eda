"""The driver contract (docs/architecture.md, docs/drivers.md): one object per data-plane instance.

A driver package registers a class under the entry-point group ``sliceportal.drivers``.
The class is constructed with the backend's options (a plain mapping from the portal's
Backend record) and must satisfy ``Driver``. Drivers import this module and
``sliceportal.rules.ir`` only, never the portal's database layer.

Guarantees every driver gives (checked by ``sliceportal.drivers.conformance``):

* ``lower`` is pure: it never touches the data plane; whatever does not fit raises
  ``CapacityError`` / ``UnsupportedMatchError`` with the numbers.
* ``apply`` is all-or-nothing as the data plane's packets see it. If it fails part-way it
  restores the state that was there before and raises ``PushError(rolled_back=True)``;
  only if even that fails does it raise ``PushError(rolled_back=False)``.
* ``read_state().tables`` equals ``lower(ir).tables`` when the data plane holds exactly
  that plan, so the reconcile loop can compare them; ``read_state().version`` is the
  ``NativePlan.version`` last applied, or None for an empty / restarted data plane.
* ``counters()`` are monotonic since the data plane started.
* An option whose name ends in ``_token``, ``_secret`` or ``_password`` holds a secret: the
  portal stores it and never shows it back (``sliceportal.core.redaction``); errors about
  options name fields, never values (``OptionsError.from_validation``).

Optional (``TernaryViewer``): ``ternary_view(plan)`` returns the plan's classifier as the
data plane would apply it, derived from the plan's own entries (never from the IR), so the
preview can prove it equal to the IR (``sliceportal.rules.equivalence``). A driver without
it is reported as "unchecked: the driver gives no ternary view".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sliceportal.rules.equivalence import TernaryEntry as TernaryEntry  # re-exported for drivers
from sliceportal.rules.equivalence import TernaryView as TernaryView
from sliceportal.rules.equivalence import ViewError as ViewError
from sliceportal.rules.equivalence import ViewTooLargeError as ViewTooLargeError
from sliceportal.rules.ir import RuleIR

# A native table entry, JSON-serialisable, in a normal form the driver defines
# (e.g. {"key": {...}, "mask": {...}, "action": {...}, "priority": 3}).
NativeEntry = dict[str, Any]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Capabilities(_Frozen):
    driver: str
    lanes: int = Field(description="priority lanes per path on this data plane")
    paths: int = Field(description="round-robin paths (first-level queues)")
    match_fields: frozenset[str] = Field(description="IR match fields the classifier can key on")
    capacity: dict[str, int] = Field(description="table name -> maximum entries")
    rate_limit: bool = Field(description="per-slice rate / burst limits (Qos) are enforced")
    ecn: bool = Field(description="ECN marking above Qos.ecn_ms is supported")


class TableUsage(_Frozen):
    used: int
    capacity: int


class NativePlan(_Frozen):
    """What ``lower`` produced: the native entries per table, ready to push."""

    driver: str
    version: str = Field(description="the IR digest this plan realises")
    tables: dict[str, list[NativeEntry]]
    usage: dict[str, TableUsage]


class ProgressEvent(_Frozen):
    phase: str  # "diff", "write", "verify", "commit", "rollback"
    done: int
    total: int
    message: str = ""


ProgressCallback = Callable[[ProgressEvent], None]


class ApplyResult(_Frozen):
    version: str
    added: int
    removed: int
    modified: int
    duration_s: float


class DataPlaneState(_Frozen):
    version: str | None
    tables: dict[str, list[NativeEntry]]


DELAY_BUCKETS = 32  # log2 buckets of a DelayHistogram


class DelayHistogram(_Frozen):
    """Queueing delay (sojourn from enqueue to dequeue) of the packets a lane dequeued, as
    measured inside the data plane; monotonic since the data plane started, like every counter.

    Bucket ``i`` counts sojourns in ``[2**i, 2**(i+1))`` units of ``unit_ns`` (bucket 0 also
    counts 0); a sojourn past the last bucket is counted in the last. Two reads give an
    interval's count, mean and percentiles (``sliceportal.kpi.delay``) without the data
    plane keeping any per-interval state.
    """

    unit_ns: int = Field(gt=0, description="the time unit of sum, max and the buckets (1000 = microseconds)")
    count: int = 0
    sum: int = Field(default=0, description="sum of the sojourns, in unit_ns")
    max: int = Field(default=0, description="largest sojourn since the data plane started, in unit_ns")
    buckets: tuple[int, ...] = Field(default=(0,) * DELAY_BUCKETS, min_length=DELAY_BUCKETS, max_length=DELAY_BUCKETS)


class LaneCounters(_Frozen):
    packets: int = 0  # entered (classified into this slice / lane)
    bytes: int = 0
    drops: dict[str, int] = Field(default_factory=dict)  # reason -> packets: queue, policer, rate_limit, ...
    ecn_marks: int = 0
    alt_forwarded: int = 0  # seed 001: sent to the alternative node
    # left the lane's queue towards the egress; None where the data plane does not count it
    tx_packets: int | None = None
    tx_bytes: int | None = None
    # None: the data plane does not measure queueing delay (shown as "not measured", never 0)
    delay: DelayHistogram | None = None


class Counters(_Frozen):
    """Monotonic counters. Keys are strings so they survive JSON: lanes as "path/lane"."""

    # when the counters were taken (time.time(); a snapshot's time where the plane takes one):
    # the KPI collector's intervals are the differences of these, not of when reads returned
    timestamp: float
    # changes whenever the data plane's counters restarted from zero (a restarted process, a
    # reloaded program); None where the data plane cannot tell, and the collector then treats
    # any counter that went backwards as a restart
    epoch: str | None = None
    rules: dict[int, LaneCounters] = Field(default_factory=dict)  # rule index -> hits
    lanes: dict[str, LaneCounters] = Field(default_factory=dict)
    slices: dict[int, LaneCounters] = Field(default_factory=dict)  # IR slice_id -> totals
    # per IR slice and target lane, "slice_id/lane": what the KPI collector turns into samples
    # (entered, left, dropped by cause, ECN marks, queueing delay); empty where a data plane
    # counts per rule only (the collector then folds ``rules`` through the rule set)
    slice_lanes: dict[str, LaneCounters] = Field(default_factory=dict)
    misses: LaneCounters = Field(default_factory=LaneCounters)
    malformed: int = 0


class Health(_Frozen):
    ok: bool
    detail: str
    version: str | None = None


# ---- errors a user can act on ------------------------------------------------------


class DriverError(Exception):
    """Base of every error a driver raises; ``str()`` is the user-facing message."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class CapacityError(DriverError):
    def __init__(self, table: str, needed: int, available: int) -> None:
        super().__init__(
            f"table {table!r} needs {needed} entries but the data plane holds {available}",
            hint="merge subscribers into prefixes, reduce services, or deploy on a larger backend",
        )
        self.table, self.needed, self.available = table, needed, available


class UnsupportedMatchError(DriverError):
    def __init__(self, field: str, driver: str) -> None:
        super().__init__(f"the {driver} data plane cannot match on {field!r}")
        self.field = field


class OptionsError(DriverError):
    """The backend's options are invalid (raised by the constructor; nothing is touched)."""

    @classmethod
    def from_validation(cls, driver: str, e: ValidationError, unknown: str = "unknown option") -> OptionsError:
        """Each field and what is wrong with it, never the values given: options may hold a secret
        (an option named ``*_token``, ``*_secret``, ``*_password``; the portal never shows those back),
        and pydantic's own message quotes the input."""
        issues = [
            (".".join(str(x) for x in err["loc"]), unknown if err["type"] == "extra_forbidden" else err["msg"])
            for err in e.errors()
        ]
        fields = "; ".join(f"{loc or 'options'}: {msg}" for loc, msg in issues)
        error = cls(f"invalid {driver} backend options: {fields}", hint="fix the backend's options")
        error.issues = tuple(issues)
        return error

    # (option path, what is wrong) per invalid option, so the API names each field
    issues: tuple[tuple[str, str], ...] = ()


class GeometryError(DriverError):
    """The IR was compiled for another lane / path geometry than the data plane has."""


class UnreachableError(DriverError):
    """The data plane does not answer (process gone, socket refused, interface missing)."""


class PushError(DriverError):
    def __init__(self, message: str, *, rolled_back: bool, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.rolled_back = rolled_back


@runtime_checkable
class Driver(Protocol):
    name: ClassVar[str]

    def __init__(self, options: Mapping[str, Any]) -> None: ...

    def capabilities(self) -> Capabilities: ...

    def lower(self, ir: RuleIR) -> NativePlan: ...

    def apply(self, plan: NativePlan, progress: ProgressCallback) -> ApplyResult: ...

    def read_state(self) -> DataPlaneState: ...

    def counters(self) -> Counters: ...

    def health(self) -> Health: ...

    def close(self) -> None: ...


@runtime_checkable
class TernaryViewer(Protocol):
    """The optional part of the contract: a driver that can show its plan as ternary entries.

    Kept apart from ``Driver`` so drivers without it still satisfy the contract. The view
    must come from ``plan.tables`` (the entries the driver would write); it raises
    ``ViewError`` (e.g. ``ViewTooLargeError`` past an expansion budget) when it cannot.
    """

    def ternary_view(self, plan: NativePlan) -> TernaryView | None: ...


def ternary_view_of(driver: object, plan: NativePlan) -> TernaryView | None:
    """The driver's view of ``plan``, or None when the driver offers none."""
    return driver.ternary_view(plan) if isinstance(driver, TernaryViewer) else None


@runtime_checkable
class LoweringPrefetcher(Protocol):
    """Optional: a driver whose ``lower`` reads its data plane (what it keeps from there: the
    priorities a P4 switch holds) reads it ahead when asked, so that a fan-out's preflight
    reads every backend at once rather than one after another as it lowers for each.

    ``prefetch`` never raises and need not read: a failed or skipped read is ``lower``'s to
    make (and report) as it would without it.
    """

    def prefetch(self) -> None: ...


def check_fits(ir: RuleIR, caps: Capabilities) -> None:
    """Shared pre-write checks every ``lower`` starts with: geometry and match fields."""
    if (ir.lanes, ir.paths) != (caps.lanes, caps.paths):
        raise GeometryError(
            f"rules were compiled for {ir.paths} paths x {ir.lanes} lanes but the "
            f"{caps.driver} data plane has {caps.paths} x {caps.lanes}",
            hint="recompile for this backend",
        )
    if ir.matched_fields().difference(caps.match_fields):
        # the first such field in rule order, as a rule-by-rule check would name it
        name = next(n for r in ir.rules for n, _ in r.match.items() if n not in caps.match_fields)
        raise UnsupportedMatchError(name, caps.driver)
