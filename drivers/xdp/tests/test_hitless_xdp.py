"""Hitless pushes on the XDP data plane (issue #14 item 4), in the real kernel.

100 random rule-set updates over every slice type (dataplane/conformance/hitless.py, the
generator and oracle the P4 proof uses) are pushed through the driver while a second thread
classifies probe packets nonstop with BPF_PROG_TEST_RUN (verdict: the program's recorded
decision). At every ``write`` progress event (one per map the push writes) the push waits
until the prober has run a full round of probes, so every stretch between two writes is
covered; the prober also runs while the batch writes are in the kernel. Every probe must get
the verdict of the old or of the new rule set (slice, lane and RR path); after the push, the
new one.

Write count. The push writes the idle copy of the A/B tables, which holds the version
before the live one; so "the diff" of this plane is the slots in which that copy's image
differs from the new plan's image (at most the slots of the previous diff plus those of
this one: a copy catches up two versions), plus one 4-byte store of the generation. The
test models the two copies from the plans alone and asserts, per push: the slots the
driver reports writing == the diff of the modelled idle copy against the new plan == the
slots that changed in the kernel's idle copy (read back before and after) — and that the
live copy's bytes did not change at all until the switch.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sliceportal.drivers.contract import ProgressEvent
from sliceportal.rules.ir import MissMode, MissPolicy
from sliceportal.traffic.packets import build_bytes
from sliceportal_xdp import image
from sliceportal_xdp.dataplane import DataPlane
from sliceportal_xdp.driver import Driver

CONFORMANCE = Path(__file__).resolve().parents[3] / "dataplane" / "conformance"
if str(CONFORMANCE) not in sys.path:  # --import-mode=importlib: the shared helper by path
    sys.path.insert(0, str(CONFORMANCE))

import hitless  # noqa: E402

pytestmark = [pytest.mark.needs_root]
LANES, PATHS = 8, 4
FIELDS = ("slice_id", "lane", "rr_path")


@pytest.fixture
def driver() -> Iterator[Driver]:
    d = Driver(
        {
            "record_last": True,
            "lanes": LANES,
            "paths": PATHS,
            "overload_poll_s": 0,
            "lane_cpus": dict.fromkeys(range(LANES), 0),
        }
    )
    assert d.dataplane is not None  # loaded now: a missing privilege fails here
    yield d
    d.close()


class Prober(threading.Thread):
    """Classifies the watched probes round after round until stopped. The only thread that
    runs the program, so the one-slot ``last`` decision map is its own; it calls the
    DataPlane directly because the driver holds its lock for the whole push."""

    def __init__(
        self, dp: DataPlane, frames: list[bytes], allowed: list[set[hitless.Verdict]], tally: hitless.Tally, where: str
    ) -> None:
        super().__init__(daemon=True)
        self.dp, self.frames, self.allowed, self.tally, self.where = dp, frames, allowed, tally, where
        self.rounds = 0
        self.stop = threading.Event()
        self.cond = threading.Condition()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                got = []
                for data in self.frames:
                    self.dp.run(data)
                    d = self.dp.last_decision()
                    got.append((d.slice_id, d.lane, d.rr_path))
                self.tally.check(got, self.allowed, f"{self.where}, round {self.rounds}")
                with self.cond:
                    self.rounds += 1
                    self.cond.notify_all()
        except BaseException as e:  # surfaced by the test, not lost in the thread
            self.error = e
            with self.cond:
                self.rounds = 1 << 30
                self.cond.notify_all()

    def full_round(self) -> None:
        """Wait until a round that started after this call has ended."""
        with self.cond:
            target = self.rounds + 2
            assert self.cond.wait_for(lambda: self.rounds >= target, timeout=30), "the prober stalled"


class Push:
    """The progress callback: counts the slots written, holds the push at every write until
    the prober has classified every watched probe, and checks the live copy is untouched."""

    def __init__(self, prober: Prober, dp: DataPlane, live: int, live_image: image.Image) -> None:
        self.prober, self.dp, self.live, self.live_image = prober, dp, live, live_image
        self.writes = self.events = 0

    def __call__(self, e: ProgressEvent) -> None:
        if e.phase == "write":
            self.events += 1
            self.writes = e.done  # cumulative slots written (and deleted) in the idle copy
            self.prober.full_round()
        elif e.phase == "verify":  # everything is written, nothing switched yet
            assert self.dp.read_image(self.dp.versions[self.live]) == self.live_image, "the live copy was written"
            assert self.dp.read_config()[0] & 1 == self.live
            self.prober.full_round()


def test_random_updates_classify_every_probe_old_or_new_while_the_push_writes(driver: Driver) -> None:
    rng = random.Random(1414)
    ir = hitless.first_ir(rng, lanes=LANES, paths=PATHS, rules=10, miss=MissPolicy(mode=MissMode.ALGORITHM1))
    slices, rules = list(ir.slices), list(ir.rules)
    dp = driver.dataplane
    plan = driver.lower(ir)
    driver.apply(plan, lambda e: None)
    # the two copies as the plans say they are (the one never written: empty)
    live = dp.read_config()[0] & 1
    model: dict[int, image.Image] = {live: image.encode(plan.tables), 1 - live: image.empty()}
    flows = hitless.probe_flows(rng)
    frames = [build_bytes(f, bytes(64)) for f in flows]
    tally = hitless.Tally()
    per_push: list[int] = []
    one_step: list[int] = []
    for n in range(100):
        rules = hitless.mutate(rng, rules, slices, PATHS)
        if rng.random() < 0.3:  # the per-slice rate limits (qos table) change too
            slices = hitless.mutate_rate_limits(rng, slices)
        new_ir = hitless.rule_ir(ir, rules, slices)
        new_plan = driver.lower(new_ir)
        up = hitless.update(rng, ir, new_ir, flows, FIELDS)
        want = image.encode(new_plan.tables)
        live = dp.read_config()[0] & 1
        before = {c: dp.read_image(dp.versions[c]) for c in (0, 1)}
        assert before == model, "the kernel's copies are not what the plans put there"
        prober = Prober(dp, [frames[i] for i in up.watch], up.allowed, tally, f"update {n}")
        push = Push(prober, dp, live, before[live])
        prober.start()
        try:
            result = driver.apply(new_plan, push)
        finally:
            prober.stop.set()
            prober.join()
        if prober.error is not None:
            raise prober.error
        unchanged = image.diff(model[live], want).writes == 0
        expected = 0 if unchanged else image.diff(model[1 - live], want).writes
        written = 1 - live if not unchanged else live
        after = {c: dp.read_image(dp.versions[c]) for c in (0, 1)}
        assert after[written] == want
        assert push.writes == expected == image.diff(before[written], after[written]).writes, f"update {n}"
        assert result.added + result.removed + result.modified == image.diff(model[live], want).writes
        if not unchanged:
            assert after[live] == before[live]  # the old copy kept every byte through the switch
            assert dp.read_config()[0] & 1 == 1 - live
            step = image.diff(model[live], want).writes
            # a copy catches up two versions: never more than the last diff and this one together
            assert expected <= step + (one_step[-1] if one_step else expected)
            per_push.append(expected)
            one_step.append(step)
        model[written] = want
        got = []
        for i in up.watch:
            dp.run(frames[i])
            d = dp.last_decision()
            got.append((d.slice_id, d.lane, d.rr_path))
        assert got == up.expected, f"update {n}: after the push"
        ir, plan = new_ir, new_plan
    assert driver.read_state().tables == plan.tables
    assert tally.checked > 2000
    assert tally.neither == 0, str(tally)
    assert len(per_push) > 90
    print(
        f"\nXDP: {len(per_push)} pushes, slots written per push mean {sum(per_push) / len(per_push):.1f} "
        f"(diff against the live copy: mean {sum(one_step) / len(one_step):.1f}); {tally}"
    )
