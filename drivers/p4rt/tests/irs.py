"""IRs built directly from sliceportal.rules.ir types (the compiler is written elsewhere)."""

from __future__ import annotations

import ipaddress

from sliceportal.rules.ir import Action, Match, MissPolicy, Qos, Rule, RuleIR, SliceEntry, TenantEntry, Ternary


def ip(a: str) -> int:
    return int(ipaddress.IPv4Address(a))


TENANT_A = TenantEntry(ref=1, name="A", vni=1001, vlan=100)
TENANT_B = TenantEntry(ref=2, name="B", vni=1002, vlan=200)


def two_tenants(lanes: int = 8, qos: Qos | None = None) -> RuleIR:
    """Tenant A: two slices (URLLC by service port, eMBB by UE prefix); tenant B: one."""
    q = qos or Qos()
    slices = (
        SliceEntry(1, 11, "a-urllc", 1001, 100, (6,), q),
        SliceEntry(2, 12, "a-embb", 1001, 100, (2,), q),
        SliceEntry(3, 13, "b-embb", 1002, 200, (4,), q),
    )
    rules = (
        Rule(Match(vni=Ternary.exact(1001, 24), dst_port=Ternary.exact(5000, 16)), Action(1, 6, 0), "urllc"),
        Rule(
            Match(vni=Ternary.exact(1001, 24), src_ip=Ternary.prefix(ip("10.1.0.0"), 16, 32)),
            Action(2, 2, 0),
            "embb",
        ),
        Rule(Match(vni=Ternary.exact(1002, 24), dscp=Ternary(0b101000, 0b111000)), Action(3, 4, 0), "b"),
        Rule(Match(vni=Ternary.exact(1002, 24), teid=Ternary(0x100, 0xF00)), Action(3, 5, 0), "b by teid"),
    )
    return RuleIR(lanes=lanes, paths=1, rules=rules, slices=slices, tenants=(TENANT_A, TENANT_B), miss=MissPolicy())
