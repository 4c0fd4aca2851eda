"""Random rule-set updates and the "old or new" oracle of the hitless-push proofs (#14 item 4).

Shared by the three planes' tests (drivers/{p4rt,xdp,netfpga}/tests/test_hitless*.py): a
seeded generator of overlapping rule sets over every slice type of seed 000 Table 1, a
mutation step (insert, delete, change an action, move a rule: 1-3 per update), probe flows
over the same small key space, and the verdict each probe must get, which comes from the
rule IR's reference semantics (``RuleIR.classify``: first matching rule, else the miss
policy), never from a driver. A plane is hitless when, at every moment of a push, each
probe gets the verdict of the old or of the new rule set.

Importable without any driver: tests put this folder on ``sys.path`` (``import hitless``).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sliceportal.rules.ir import (
    Action,
    Match,
    MissPolicy,
    Qos,
    Rule,
    RuleIR,
    SliceEntry,
    TenantEntry,
    Ternary,
    fold_lane,
)
from sliceportal.traffic.packets import Encap, Flow

ROOT = Path(__file__).resolve().parents[2]
TENANT = TenantEntry(1, "A", 1001, 100)
UE_BASE = int(ipaddress.IPv4Address("10.0.0.0"))
Verdict = tuple[int, ...]  # the decision fields a plane reports, e.g. (slice id, lane); slice 0 = a miss


def catalogue_lanes() -> list[tuple[int, ...]]:
    """Every slice type's lanes, from the migration that seeds seed 000 Table 1."""
    path = ROOT / "backend/src/sliceportal/migrations/versions/0002_slice_type_catalogue.py"
    spec = importlib.util.spec_from_file_location("slice_type_catalogue", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [tuple(lanes) for _, _, lanes, _ in module.TABLE_1]


def catalogue_slices(lanes: int = 8, tenant: TenantEntry = TENANT) -> list[SliceEntry]:
    """One slice per slice type (ids 1..n), its lanes folded onto a ``lanes``-lane target."""
    return [
        SliceEntry(i, 10 + i, f"s{i}", tenant.vni, tenant.vlan, tuple(sorted({fold_lane(x, lanes) for x in ls})))
        for i, ls in enumerate(catalogue_lanes(), start=1)
    ]


def random_rule(rng: random.Random, slices: Sequence[SliceEntry], paths: int = 1) -> Rule:
    """Matches over a small space, so that rules overlap: UE /28../32 of 10.0.0.0/28, ports
    5000-5003 (exact or a 1-bit pair), DSCP values or classes."""
    fields: dict[str, Ternary] = {}
    if rng.random() < 0.7:
        plen = rng.choice([28, 30, 31, 32])
        fields["src_ip"] = Ternary.prefix(UE_BASE + rng.randrange(16), plen, 32)
    if rng.random() < 0.5:
        fields["dst_port"] = masked(5000 + rng.randrange(4), rng.choice([0xFFFF, 0xFFFE]))
    if rng.random() < 0.4:
        fields["dscp"] = masked(rng.randrange(64), rng.choice([0x3F, 0x38]))
    if not fields:
        fields["dst_port"] = Ternary.exact(5000 + rng.randrange(4), 16)
    return Rule(Match(**fields), random_action(rng, slices, paths))


def random_action(rng: random.Random, slices: Sequence[SliceEntry], paths: int = 1) -> Action:
    s = rng.choice(slices)
    return Action(s.slice_id, rng.choice(s.lanes), rng.randrange(paths) if paths > 1 else 0)


def masked(value: int, mask: int) -> Ternary:
    return Ternary(value & mask, mask)


def mutate(rng: random.Random, rules: Sequence[Rule], slices: Sequence[SliceEntry], paths: int = 1) -> list[Rule]:
    """1-3 edits: insert a random rule, delete one, give one another action, move one."""
    out = list(rules)
    for _ in range(rng.randint(1, 3)):
        op = rng.choice(["insert", "delete", "action", "move"] if out else ["insert"])
        if op == "insert" or len(out) < 3:
            out.insert(rng.randint(0, len(out)), random_rule(rng, slices, paths))
        elif op == "delete":
            out.pop(rng.randrange(len(out)))
        elif op == "action":
            i = rng.randrange(len(out))
            out[i] = Rule(out[i].match, random_action(rng, slices, paths))
        else:
            r = out.pop(rng.randrange(len(out)))
            out.insert(rng.randint(0, len(out)), r)
    return out


def mutate_rate_limits(rng: random.Random, slices: Sequence[SliceEntry]) -> list[SliceEntry]:
    """Switch a slice's rate limit on, off or to another rate (1-2 slices per update):
    exercises the planes' per-slice bucket writes. The rates (2-8 Gbit/s, 10 ms deep) are
    above what back-to-back probes offer even on the NetFPGA model's simulated clock (one
    128-byte frame per 200 cycles at 200 MHz: ~1 Gbit/s), so no probe is dropped and the
    verdict stays the classifier's."""
    out = list(slices)
    for _ in range(rng.randint(1, 2)):
        i = rng.randrange(len(out))
        rate = rng.choice([None, 2_000_000_000, 4_000_000_000, 8_000_000_000])
        out[i] = replace(out[i], qos=Qos(rate_bps=rate, burst_ms=10.0 if rate else None))
    return out


def probe_flows(rng: random.Random, n: int = 96, tenant: TenantEntry = TENANT, vlan: int | None = None) -> list[Flow]:
    """Flows over the generator's key space and a little beyond it (UE .16-.17, port 5004:
    misses), GTP-U in VXLAN of the tenant (tagged ``vlan``, if given)."""
    return [
        Flow(
            f"10.0.0.{rng.randrange(18)}",
            "10.2.0.1",
            5000 + rng.randrange(5),
            dscp=rng.randrange(64),
            vni=tenant.vni,
            teid=0x100,
            vlan=vlan,
            encap=Encap.VXLAN_GTP,
        )
        for _ in range(n)
    ]


def rule_ir(base: RuleIR, rules: Sequence[Rule], slices: Sequence[SliceEntry] | None = None) -> RuleIR:
    """``base`` with other rules (and slices)."""
    return RuleIR(
        lanes=base.lanes,
        paths=base.paths,
        rules=tuple(rules),
        slices=tuple(base.slices if slices is None else slices),
        tenants=base.tenants,
        miss=base.miss,
    )


def first_ir(
    rng: random.Random, lanes: int = 8, paths: int = 1, rules: int = 10, miss: MissPolicy | None = None
) -> RuleIR:
    slices = catalogue_slices(lanes)
    return RuleIR(
        lanes=lanes,
        paths=paths,
        rules=tuple(random_rule(rng, slices, paths) for _ in range(rules)),
        slices=tuple(slices),
        tenants=(TENANT,),
        miss=miss or MissPolicy(),
    )


def verdict(ir: RuleIR, flow: Flow, fields: Sequence[str] = ("slice_id", "lane")) -> Verdict:
    """The reference decision for ``flow`` under ``ir``, projected on ``fields``."""
    d = ir.classify(flow.key())
    return tuple(int(getattr(d, f)) for f in fields)


@dataclass(frozen=True)
class Update:
    """One push to prove: the probes watched during it and the verdicts each may get."""

    old: RuleIR
    new: RuleIR
    watch: list[int]  # indices into the probe flows
    allowed: list[set[Verdict]]  # per watched probe: {old verdict, new verdict}
    expected: list[Verdict]  # per watched probe: the new verdict (after the push)

    @property
    def moved(self) -> int:
        """Watched probes whose verdict the update changes."""
        return sum(1 for a in self.allowed if len(a) == 2)


def update(
    rng: random.Random,
    old: RuleIR,
    new: RuleIR,
    flows: Sequence[Flow],
    fields: Sequence[str] = ("slice_id", "lane"),
    moved_max: int = 16,
    kept: int = 8,
) -> Update:
    """Watch every probe whose verdict changes (up to ``moved_max``) and ``kept`` that keep
    theirs (unchanged flows must not be disturbed either)."""
    old_v = [verdict(old, f, fields) for f in flows]
    new_v = [verdict(new, f, fields) for f in flows]
    moved = [i for i in range(len(flows)) if old_v[i] != new_v[i]]
    same = [i for i in range(len(flows)) if old_v[i] == new_v[i]]
    watch = moved[:moved_max] + rng.sample(same, k=min(kept, len(same)))
    return Update(old, new, watch, [{old_v[i], new_v[i]} for i in watch], [new_v[i] for i in watch])


@dataclass
class Tally:
    """Probes checked during pushes, and those classified by neither rule set."""

    checked: int = 0
    neither: int = 0
    examples: list[str] | None = None

    def check(self, got: Sequence[Verdict], allowed: Sequence[set[Verdict]], where: str) -> None:
        for g, a in zip(got, allowed, strict=True):
            self.checked += 1
            if g not in a:
                self.neither += 1
                if self.examples is None:
                    self.examples = []
                if len(self.examples) < 5:
                    self.examples.append(f"{where}: got {g}, allowed {sorted(a)}")

    def __str__(self) -> str:
        return f"{self.neither} of {self.checked} probes classified by neither the old nor the new rule set" + (
            f": {self.examples}" if self.examples else ""
        )
