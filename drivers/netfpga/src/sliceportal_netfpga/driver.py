"""The NetFPGA driver: IR -> TCAM entries, written over CSR into the shadow bank and
made live by one ACTIVE_BANK write (all-or-nothing as packets see it), and per-slice rate
limits -> the RTL's token buckets (sp_rate_limiter).

Push protocol (docs/netfpga.md): read ACTIVE_BANK and the buckets; configure the buckets
the new plan uses (rate, burst, then enable: make before break, so a slice is limited
before any TCAM entry steers into it); lay the entries out in stable slots with free slots
between them (slots.py: each keeps the slot it has in the active bank while its rank allows);
write that image, the entry count and the plan version into the other bank (the RTL
refuses writes into the active one; only the words that bank does not hold already, so a
push writes the diff); read it all back and compare; write ACTIVE_BANK; then disable the buckets the new plan no longer
uses. Until the flip the previous table stays live, and a failure before it also puts
the previous buckets back, so the data plane is left as it was. If the connection is
lost around the flip, the driver reconnects and puts the previous bank back.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import ValidationError

from sliceportal.drivers.contract import (
    ApplyResult,
    Capabilities,
    CapacityError,
    Counters,
    DataPlaneState,
    DelayHistogram,
    DriverError,
    GeometryError,
    Health,
    LaneCounters,
    NativePlan,
    ProgressCallback,
    ProgressEvent,
    PushError,
    TableUsage,
    TernaryView,
    check_fits,
)
from sliceportal.rules.ir import MissMode, RuleIR

from . import regmap
from .csr import CsrClient
from .options import NetfpgaOptions
from .ratelimit import FRAC_BITS, RateLimitEntry, lower_rate_limits
from .ratelimit import TABLE as RATE_TABLE
from .slots import layout
from .tcam import KEY_FIELDS, EntryAction, FieldValues, TcamEntry, decode_slot, lower_rules, slot_writes
from .view import tcam_view

TABLE = "tcam"


# what identifies the bitstream and its geometry (checked before any write and by health)
HARDWARE = (
    regmap.ID,
    regmap.PATHS,
    regmap.LANES,
    regmap.TCAM_ENTRIES,
    regmap.CLOCK_HZ,
    regmap.RATE_SLICES,
    regmap.RATE_FRAC_BITS,
)


def _version_int(version: str) -> int:
    try:
        value = int(version, 16)
    except ValueError:
        value = -1
    if not 0 <= value < 1 << 64 or len(version) > 16:
        raise PushError(f"plan version {version!r} is not a 64-bit hex digest", rolled_back=True)
    return value


def _version_str(value: int) -> str | None:
    """A bank's VERSION register as the plan's digest (0: nothing was ever pushed)."""
    return f"{value:016x}" if value else None


class Driver:
    name: ClassVar[str] = "netfpga"

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = NetfpgaOptions.parse(options)
        self._csr: CsrClient | None = None

    # ---- connection -------------------------------------------------------------------
    def _client(self) -> CsrClient:
        if self._csr is None:
            self._csr = CsrClient(self.options.address, self.options.timeout_s, self.options.agent_token)
        return self._csr

    def _fresh(self) -> CsrClient:
        """A client whose connection answers: a kept connection may have died with a
        restarted data plane, so it is probed and replaced once."""
        if self._csr is not None:
            try:
                self._csr.read(regmap.ID)
                return self._csr
            except DriverError:
                self._drop()
        return self._client()

    def _read_once(self, addrs: Sequence[int]) -> list[int]:
        """``addrs`` in one round trip; a kept connection that died with a restarted data plane
        is replaced once."""
        if self._csr is not None:
            try:
                return self._csr.read_many(addrs)
            except DriverError:
                self._drop()
        return self._client().read_many(addrs)

    def _drop(self) -> None:
        if self._csr is not None:
            self._csr.close()
            self._csr = None

    def close(self) -> None:
        self._drop()

    # ---- contract -----------------------------------------------------------------------
    def capabilities(self) -> Capabilities:
        o = self.options
        return Capabilities(
            driver=self.name,
            lanes=o.lanes,
            paths=o.paths,
            match_fields=frozenset(KEY_FIELDS),
            capacity={TABLE: o.capacity},
            rate_limit=True,
            # No ECN: the RTL queues are store-and-forward FIFOs without a sojourn-time
            # marker and the parser does not rewrite headers (docs/netfpga.md).
            ecn=False,
        )

    def lower(self, ir: RuleIR) -> NativePlan:
        caps = self.capabilities()
        check_fits(ir, caps)
        needed = len(ir.rules) + (1 if ir.miss.mode is MissMode.FIXED else 0)
        if needed > self.options.capacity:
            raise CapacityError(TABLE, needed, self.options.capacity)
        entries = lower_rules(ir)
        if ir.miss.mode is MissMode.FIXED:
            # The RTL's miss path is Algorithm 1; a fixed miss policy is a last catch-all entry.
            if not (0 <= ir.miss.lane < ir.lanes and 0 <= ir.miss.rr_path < ir.paths):
                raise GeometryError(f"miss policy lane {ir.miss.lane} / path {ir.miss.rr_path} outside the geometry")
            entries.append(
                TcamEntry(
                    key=FieldValues(),
                    mask=FieldValues(),
                    action=EntryAction(slice_id=0, lane=ir.miss.lane, rr_path=ir.miss.rr_path),
                )
            )
        buckets = lower_rate_limits(ir, self.options.clock_hz, self.options.rate_slices)
        return NativePlan(
            driver=self.name,
            version=ir.digest(),
            tables={TABLE: [e.native() for e in entries], RATE_TABLE: [b.model_dump() for b in buckets]},
            usage={
                TABLE: TableUsage(used=len(entries), capacity=self.options.capacity),
                RATE_TABLE: TableUsage(used=len(buckets), capacity=self.options.rate_slices - 1),
            },
        )

    def ternary_view(self, plan: NativePlan) -> TernaryView:
        """The plan's TCAM entries as the RTL matches them (optional contract: TernaryViewer)."""
        return tcam_view(plan, TABLE, self.options.lanes, self.options.paths)

    def _plan_entries(self, plan: NativePlan) -> list[TcamEntry]:
        if plan.driver != self.name:
            raise PushError(f"plan was lowered for {plan.driver!r}, not netfpga", rolled_back=True)
        if not {TABLE} <= set(plan.tables) <= {TABLE, RATE_TABLE}:
            raise PushError(f"plan tables {sorted(plan.tables)} are not [{TABLE!r}, {RATE_TABLE!r}]", rolled_back=True)
        try:
            entries = [TcamEntry.model_validate(e) for e in plan.tables[TABLE]]
        except (ValidationError, ValueError) as err:
            raise PushError(f"plan holds an invalid TCAM entry: {err}", rolled_back=True) from err
        for entry in entries:
            a = entry.action
            if a.lane >= self.options.lanes or a.rr_path >= self.options.paths:
                raise GeometryError(f"entry action {a} outside {self.options.paths} x {self.options.lanes}")
        if len(entries) > self.options.capacity:
            raise CapacityError(TABLE, len(entries), self.options.capacity)
        return entries

    def _plan_buckets(self, plan: NativePlan) -> list[RateLimitEntry]:
        try:
            buckets = [RateLimitEntry.model_validate(e) for e in plan.tables.get(RATE_TABLE, [])]
        except (ValidationError, ValueError) as err:
            raise PushError(f"plan holds an invalid rate limit: {err}", rolled_back=True) from err
        ids = [b.slice_id for b in buckets]
        if len(set(ids)) != len(ids):
            raise PushError("plan holds two rate limits for one slice", rolled_back=True)
        if ids and max(ids) >= self.options.rate_slices:
            raise CapacityError(RATE_TABLE, max(ids) + 1, self.options.rate_slices)
        return buckets

    def _check_hardware(self, csr: CsrClient) -> None:
        self._check_geometry(csr.read_many(HARDWARE))

    def _check_geometry(self, words: Sequence[int]) -> None:
        """The HARDWARE registers' values against the backend's options."""
        ident, paths, lanes, entries, clock_hz, rate_slices, frac = words
        if ident != regmap.ID_VALUE:
            raise DriverError(f"the device at {self.options.address!r} is not a sliceportal NetFPGA (id {ident:#x})")
        o = self.options
        if (paths, lanes) != (o.paths, o.lanes) or entries < o.capacity:
            raise GeometryError(
                f"the bitstream has {paths} paths x {lanes} lanes and {entries} TCAM entries, the backend "
                f"is configured for {o.paths} x {o.lanes} with {o.capacity}",
                hint="fix the backend's geometry options",
            )
        if (clock_hz, frac) != (o.clock_hz, FRAC_BITS) or rate_slices < o.rate_slices:
            raise GeometryError(
                f"the bitstream runs at {clock_hz} Hz with {rate_slices} rate-limiter buckets of {frac} "
                f"fractional bits; the backend is configured for {o.clock_hz} Hz and {o.rate_slices} "
                f"buckets of {FRAC_BITS}",
                hint="fix the backend's clock_hz / rate_slices options (or load a bitstream with the rate limiter)",
            )

    def _read_buckets(self, csr: CsrClient) -> list[RateLimitEntry]:
        """The enabled buckets, by slice id (slice 0 is never limited)."""
        ids = range(1, self.options.rate_slices)
        enabled = csr.read_many(regmap.rate_reg(s, "enable") for s in ids)
        on = [s for s, e in zip(ids, enabled, strict=True) if e & 1]
        words = csr.read_many(regmap.rate_reg(s, f) for s in on for f in ("rate", "burst"))
        return [
            RateLimitEntry(slice_id=s, rate=max(1, words[2 * i]), burst=max(1, words[2 * i + 1]))
            for i, s in enumerate(on)
        ]

    @staticmethod
    def _bucket_writes(new: list[RateLimitEntry]) -> list[tuple[int, int]]:
        """Rate and burst before enable: a bucket switched on starts full at its new depth."""
        writes = []
        for b in new:
            writes += [(regmap.rate_reg(b.slice_id, "rate"), b.rate), (regmap.rate_reg(b.slice_id, "burst"), b.burst)]
        return writes + [(regmap.rate_reg(b.slice_id, "enable"), 1) for b in new]

    @staticmethod
    def _bucket_disables(old: list[RateLimitEntry], new: list[RateLimitEntry]) -> list[tuple[int, int]]:
        keep = {b.slice_id for b in new}
        return [(regmap.rate_reg(b.slice_id, "enable"), 0) for b in old if b.slice_id not in keep]

    @staticmethod
    def _read_words(csr: CsrClient, bank: int, slots: int) -> list[list[int]]:
        """The register words of the bank's first ``slots`` slots, as the card holds them."""
        step = regmap.ENTRY_WORDS
        words = csr.read_many(regmap.entry(bank, i, w) for i in range(slots) for w in range(step))
        return [words[i * step : (i + 1) * step] for i in range(slots)]

    def _read_bank(self, csr: CsrClient, bank: int) -> tuple[int, int, list[TcamEntry | None]]:
        """COUNT, VERSION and the slots below COUNT (None: a free slot) of one bank."""
        count, v_lo, v_hi = csr.read_many(
            [regmap.bank_count(bank), regmap.bank_version(bank), regmap.bank_version(bank) + 4]
        )
        count = min(count, self.options.capacity)
        return count, v_lo | v_hi << 32, [decode_slot(w) for w in self._read_words(csr, bank, count)]

    def apply(self, plan: NativePlan, progress: ProgressCallback) -> ApplyResult:
        started = time.monotonic()
        entries = self._plan_entries(plan)
        buckets = self._plan_buckets(plan)
        version = _version_int(plan.version)
        csr = self._fresh()
        try:
            self._check_hardware(csr)
            active = csr.read(regmap.ACTIVE_BANK) & 1
            _, _, live = self._read_bank(csr, active)
            # the shadow bank holds an older version: only the words in which it differs
            # are written (issue #14: a push writes the diff, not the table); slots above its
            # COUNT are read too, they hold what an earlier version left there
            held_count = min(csr.read(regmap.bank_count(1 - active)), self.options.capacity)
            held = self._read_words(csr, 1 - active, self.options.capacity)
            old_buckets = self._read_buckets(csr)
        except DriverError:
            self._drop()
            raise
        shadow = 1 - active
        image = layout(entries, live, self.options.capacity)
        span = max(len(image), len(live))
        pairs = [(live[i] if i < len(live) else None, image[i] if i < len(image) else None) for i in range(span)]
        added = sum(1 for a, b in pairs if a is None and b is not None)
        removed = sum(1 for a, b in pairs if a is not None and b is None)
        modified = sum(1 for a, b in pairs if a is not None and b is not None and a != b)
        progress(
            ProgressEvent(
                phase="diff", done=1, total=1, message=f"+{added} -{removed} ~{modified} against bank {active}"
            )
        )

        # Buckets first (make before break): every slice the new table steers is limited
        # before its entries go live. Unchanged buckets are not rewritten (no reset).
        bucket_writes = self._bucket_writes([b for b in buckets if b not in old_buckets])
        writes = bucket_writes + [
            (regmap.entry(shadow, i, w), v) for i, e in enumerate(image) for w, v in slot_writes(held[i], e)
        ]
        if held_count != len(image):
            writes.append((regmap.bank_count(shadow), len(image)))
        writes += [
            (regmap.bank_version(shadow), version & 0xFFFFFFFF),
            (regmap.bank_version(shadow) + 4, version >> 32),
        ]
        try:
            batch = self.options.batch
            for start in range(0, len(writes), batch):
                csr.write_many(writes[start : start + batch])
                done = min(start + batch, len(writes))
                progress(ProgressEvent(phase="write", done=done, total=len(writes)))
            count, got_version, got = self._read_bank(csr, shadow)
            got_buckets = {b.slice_id: b for b in self._read_buckets(csr)}
            if (
                count != len(image)
                or got_version != version
                or got != image
                or any(got_buckets.get(b.slice_id) != b for b in buckets)
            ):
                self._restore_buckets(csr, old_buckets, buckets)
                raise PushError(
                    f"read-back of bank {shadow} or of the rate limits differs from what was written",
                    rolled_back=True,
                    hint="the data plane may be faulty; the previous table is still active",
                )
            progress(ProgressEvent(phase="verify", done=len(entries), total=len(entries)))
        except PushError:
            raise
        except DriverError as e:
            self._drop()
            if bucket_writes:
                self._restore_buckets_reconnecting(old_buckets, buckets, e)
            raise PushError(f"push failed before the switch-over, previous table kept: {e}", rolled_back=True) from e
        try:
            csr.write(regmap.ACTIVE_BANK, shadow)
            if csr.read(regmap.ACTIVE_BANK) != shadow:
                raise PushError("ACTIVE_BANK did not take the new bank", rolled_back=True)
        except DriverError as e:
            self._drop()
            self._restore_bank(active, e)
        # Break after make: buckets of slices the new table no longer steers go off.
        disables = self._bucket_disables(old_buckets, buckets)
        if disables:
            try:
                csr.write_many(disables)
            except DriverError as e:
                self._drop()
                raise PushError(
                    f"the new table is live but {len(disables)} unused rate limiter(s) could not be switched off: {e}",
                    rolled_back=False,
                    hint="push again; the reconcile loop reports the drift meanwhile",
                ) from e
        progress(ProgressEvent(phase="commit", done=1, total=1, message=f"bank {shadow} active"))
        return ApplyResult(
            version=plan.version, added=added, removed=removed, modified=modified, duration_s=time.monotonic() - started
        )

    def _restore_buckets(self, csr: CsrClient, old: list[RateLimitEntry], new: list[RateLimitEntry]) -> None:
        """Put the buckets back as they were before this push (the old table is still live)."""
        previous = {b.slice_id for b in old}
        writes = self._bucket_writes(old)
        writes += [(regmap.rate_reg(b.slice_id, "enable"), 0) for b in new if b.slice_id not in previous]
        csr.write_many(writes)

    def _restore_buckets_reconnecting(
        self, old: list[RateLimitEntry], new: list[RateLimitEntry], cause: Exception
    ) -> None:
        try:
            self._restore_buckets(self._client(), old, new)
        except DriverError as e:
            self._drop()
            raise PushError(
                f"push failed before the switch-over ({cause}) and the previous rate limits could not be restored: {e}",
                rolled_back=False,
            ) from e

    def _restore_bank(self, previous: int, cause: Exception) -> None:
        """The flip may or may not have happened: make sure the previous bank is live."""
        try:
            csr = self._client()
            csr.write(regmap.ACTIVE_BANK, previous)
            ok = csr.read(regmap.ACTIVE_BANK) == previous
        except DriverError as e:
            self._drop()
            raise PushError(
                f"switch-over failed ({cause}) and the previous table could not be confirmed: {e}", rolled_back=False
            ) from e
        if not ok:
            raise PushError(f"switch-over failed ({cause}); previous bank not restored", rolled_back=False)
        raise PushError(f"switch-over failed, previous table restored: {cause}", rolled_back=True)

    def read_state(self) -> DataPlaneState:
        csr = self._fresh()
        try:
            active = csr.read(regmap.ACTIVE_BANK) & 1
            _, version, slots = self._read_bank(csr, active)
            buckets = self._read_buckets(csr)
        except DriverError:
            self._drop()
            raise
        return DataPlaneState(
            version=_version_str(version),
            tables={TABLE: [e.native() for e in slots if e is not None], RATE_TABLE: [b.model_dump() for b in buckets]},
        )

    def queue_counters(self) -> dict[tuple[int, int], dict[str, int]]:
        """Per (rr_path, lane): the raw queue counters incl. sojourn sum / max in cycles."""
        csr = self._fresh()
        try:
            words = csr.write_read([(regmap.SNAPSHOT, 1)], self._queue_addrs())
        except DriverError:
            self._drop()
            raise
        return self._queues(words)

    def _queue_addrs(self) -> list[int]:
        o = self.options
        return [
            regmap.queue_counter(q, f) + half
            for q in range(o.paths * o.lanes)
            for f in range(len(regmap.QUEUE_FIELDS))
            for half in (0, 4)
        ]

    def _queues(self, words: list[int]) -> dict[tuple[int, int], dict[str, int]]:
        o = self.options
        out: dict[tuple[int, int], dict[str, int]] = {}
        n = len(regmap.QUEUE_FIELDS)
        for q in range(o.paths * o.lanes):
            vals = [words[2 * (q * n + f)] | words[2 * (q * n + f) + 1] << 32 for f in range(n)]
            out[(q // o.lanes, q % o.lanes)] = dict(zip(regmap.QUEUE_FIELDS, vals, strict=True))
        return out

    def counters(self) -> Counters:
        # Few round trips: a live card answers each one between its bursts of clock cycles
        # (the model on a loaded host: tens of ms each), and the KPI collector bounds a read
        # by its interval. The first takes the snapshot every later read sees, and reads all
        # that does not depend on the rule table; the second the active bank's slots; the
        # third their hit counters and the per slice x lane table; a fourth the histograms.
        csr = self._fresh()
        drop_ids = range(1, self.options.rate_slices)
        queue_addrs = self._queue_addrs()
        fixed = [
            regmap.ACTIVE_BANK,
            regmap.bank_count(0),
            regmap.bank_count(1),
            regmap.EPOCH,
            regmap.STATS_SLICES,
            regmap.MISS_COUNTER,
            regmap.MISS_COUNTER + 4,
            regmap.MISS_COUNTER + 8,
            regmap.MISS_COUNTER + 12,
            regmap.MALFORMED_PACKETS,
            regmap.MALFORMED_PACKETS + 4,
        ]
        drop_addrs = [regmap.rate_reg(s, "drop_packets") + off for s in drop_ids for off in (0, 4)]
        try:
            sent = time.time()
            words = csr.write_read([(regmap.SNAPSHOT, 1)], [*fixed, *drop_addrs, *queue_addrs])
            # the counters' time is the snapshot's (the middle of its round trip), not the end of
            # the later reads: a card answering between bursts of cycles would stretch intervals
            snapshot_at = (sent + time.time()) / 2
            active, count0, count1, epoch_word, tracked, m_lo, m_hi, mb_lo, mb_hi, bad_lo, bad_hi = words[: len(fixed)]
            drop_words = words[len(fixed) : len(fixed) + len(drop_addrs)]
            queues = self._queues(words[len(fixed) + len(drop_addrs) :])
            active &= 1
            count = min(count1 if active else count0, self.options.capacity)
            slots = [decode_slot(w) for w in self._read_words(csr, active, count)]
            # hit counters are per slot; rule i of the plan is the i-th used slot
            used = [(s, e) for s, e in enumerate(slots) if e is not None]
            pairs = sorted({(e.action.slice_id, e.action.lane) for _, e in used if e.action.slice_id})
            pairs = [(s, lane) for s, lane in pairs if s < tracked and lane < self.options.lanes]
            fields = list(regmap.STATS_FIELDS)
            rule_addrs = [regmap.rule_counter(s) + off for s, _ in used for off in (0, 4, 8, 12)]
            stats_addrs = [
                regmap.stats_field(s, lane, self.options.lanes, f) + half
                for s, lane in pairs
                for f in fields
                for half in (0, 4)
            ]
            words = csr.read_many([*rule_addrs, *stats_addrs])
            rule_words, stats_words = words[: len(rule_addrs)], words[len(rule_addrs) :]
            epoch = self._epoch(csr, epoch_word)
            slice_lanes = self._slice_lanes(csr, pairs, stats_words)
        except DriverError:
            self._drop()
            raise
        rules: dict[int, LaneCounters] = {}
        slices: dict[int, tuple[int, int]] = {}
        for i, (_, e) in enumerate(used):
            w = rule_words[4 * i : 4 * i + 4]
            pkts, nbytes = w[0] | w[1] << 32, w[2] | w[3] << 32
            rules[i] = LaneCounters(packets=pkts, bytes=nbytes)
            if e.action.slice_id:
                p, b = slices.get(e.action.slice_id, (0, 0))
                slices[e.action.slice_id] = (p + pkts, b + nbytes)
        # Per slice, as the XDP driver reports them; a slice no entry steers any more keeps
        # its drops visible (monotonic) under its id.
        rate_drops = {s: drop_words[2 * i] | drop_words[2 * i + 1] << 32 for i, s in enumerate(drop_ids)}
        for s, n in rate_drops.items():
            if n and s not in slices:
                slices[s] = (0, 0)
        lanes = {
            f"{path}/{lane}": LaneCounters(
                packets=c["deq_packets"], bytes=c["deq_bytes"], drops={"queue_full": c["drop_packets"]}
            )
            for (path, lane), c in queues.items()
        }
        return Counters(
            timestamp=snapshot_at,
            epoch=epoch,
            slice_lanes=slice_lanes,
            rules=rules,
            lanes=lanes,
            slices={
                s: LaneCounters(packets=p, bytes=b, drops={"rate_limit": rate_drops[s]} if rate_drops.get(s) else {})
                for s, (p, b) in slices.items()
            },
            misses=LaneCounters(packets=m_lo | m_hi << 32, bytes=mb_lo | mb_hi << 32),
            malformed=bad_lo | bad_hi << 32,
        )

    def _epoch(self, csr: CsrClient, epoch: int) -> str:
        """The card's counter epoch (``epoch`` as just read): 0 after a reset, so the first
        reader after one sets a random value (the register keeps the first write until the
        next reset, so concurrent readers agree); a new value means the counters restarted
        from zero."""
        if epoch == 0:
            csr.write(regmap.EPOCH, secrets.randbits(32) | 1)
            epoch = csr.read(regmap.EPOCH)
        return f"{epoch:08x}"

    def _slice_lanes(self, csr: CsrClient, pairs: list[tuple[int, int]], words: list[int]) -> dict[str, LaneCounters]:
        """Per IR slice x lane from the card's telemetry table (sp_slice_stats), from the
        snapshot already taken (``words``: the table's fields of ``pairs``, as read): entered
        (committed + dropped by the queue + dropped by the rate limiter), left, drops by cause
        and the queueing-delay histogram (clock cycles, reported in whole ns per cycle). Slice
        ids the table does not count are left out of ``pairs``."""
        lanes = self.options.lanes
        fields = list(regmap.STATS_FIELDS)
        per = 2 * len(fields)
        values = [
            dict(
                zip(
                    fields,
                    (words[i * per + 2 * j] | words[i * per + 2 * j + 1] << 32 for j in range(len(fields))),
                    strict=True,
                )
            )
            for i in range(len(pairs))
        ]
        # histograms only where a packet left (most pairs of a quiet card have none)
        busy = [i for i, v in enumerate(values) if v["tx_packets"]]
        bucket_words = (
            csr.read_many(
                regmap.stats_bucket(*pairs[i], lanes, b) + half
                for i in busy
                for b in range(regmap.DELAY_BUCKETS)
                for half in (0, 4)
            )
            if busy
            else []
        )
        per_b = 2 * regmap.DELAY_BUCKETS
        histograms = {
            i: tuple(
                bucket_words[k * per_b + 2 * b] | bucket_words[k * per_b + 2 * b + 1] << 32
                for b in range(regmap.DELAY_BUCKETS)
            )
            for k, i in enumerate(busy)
        }
        # The histogram is in clock cycles; the contract's unit is whole nanoseconds, exact
        # for the 200 MHz of NetFPGA SUME (5 ns). A clock with a fractional period is not
        # turned into a rounded delay: it reports none.
        unit_ns, rest = divmod(10**9, self.options.clock_hz)
        out: dict[str, LaneCounters] = {}
        for i, (s, lane) in enumerate(pairs):
            v = values[i]
            delay = None
            if not rest:
                delay = DelayHistogram(
                    unit_ns=unit_ns,
                    count=v["tx_packets"],
                    sum=v["delay_sum"],
                    max=v["delay_max"],
                    buckets=histograms.get(i, (0,) * regmap.DELAY_BUCKETS),
                )
            out[f"{s}/{lane}"] = LaneCounters(
                packets=v["enq_packets"] + v["queue_drop_packets"] + v["rate_drop_packets"],
                bytes=v["enq_bytes"] + v["queue_drop_bytes"] + v["rate_drop_bytes"],
                drops={"queue": v["queue_drop_packets"], "rate_limit": v["rate_drop_packets"]},
                tx_packets=v["tx_packets"],
                tx_bytes=v["tx_bytes"],
                delay=delay,
            )
        return out

    def health(self) -> Health:
        # one round trip, not the whole TCAM: the model answers a round trip per turn of its
        # simulation loop, which a loaded host starves (CI's load test at load 40 saw the probe's
        # 5 s pass three times in a row while health read the whole state in ~8 round trips)
        versions = [regmap.bank_version(b) + half for b in (0, 1) for half in (0, 4)]
        try:
            words = self._read_once([*HARDWARE, regmap.ACTIVE_BANK, *versions])
            self._check_geometry(words[: len(HARDWARE)])
        except DriverError as e:
            self._drop()
            return Health(ok=False, detail=e.message)
        active, *banks = words[len(HARDWARE) :]
        lo, hi = banks[2 * (active & 1) :][:2]
        return Health(ok=True, detail=f"NetFPGA at {self.options.address}", version=_version_str(lo | hi << 32))

    def export_p4_commands(self, plan: NativePlan) -> str:
        """The plan as P4-NetFPGA table-CLI commands (for hardware built with that flow)."""
        from .p4cli import export_commands

        return export_commands(self._plan_entries(plan))
