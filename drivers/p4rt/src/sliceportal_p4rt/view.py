"""The P4 classifier entries of a plan as a ternary view (issue #20 item 4), for the
preview's proof that they classify every key exactly as the IR.

The key is the classifier table's own key, field by field as the P4Info lists it
(``tenant_id``, ``has_vni``, ``vni``, ...); the highest priority wins, as in P4Runtime.
slicing.p4 slices its tables per tenant (seed 002): every entry keys on the tenant id the
port / VLAN tables assign, so the view carries that VLAN -> tenant id map (read from the
plan's ``port_tenant`` and ``vlan_tenant`` entries) and the IR side scopes each rule to its
tenant. The program has no RR paths (docs/packets.md, p4-no-paths): it decides slice and
lane only.
"""

from __future__ import annotations

from collections.abc import Mapping

from sliceportal.drivers.contract import NativePlan
from sliceportal.rules.equivalence import Algorithm1, Outcome, Space, TernaryEntry, TernaryView, ViewError

from .p4info import CLASSIFIER, PORT_TENANT, VLAN_TENANT

TENANT_FIELD = "tenant_id"
CATALOGUE_LANES = 8  # miss_algorithm1 shifts DSCP bits 2:0, lanes 0-7 of seed 000 Table 1


def tenant_map(plan: NativePlan) -> dict[int, int]:
    """VLAN ID -> tenant id, as the plan's access ports and trunk VLAN entries assign them."""
    out: dict[int, int] = {}
    pairs = [
        (e["params"]["vid"], e["params"]["tenant_id"])
        for e in plan.tables.get(PORT_TENANT, [])
        if e.get("action", "").endswith("set_access_tenant")
    ]
    pairs += [
        (e["match"]["vid"][0], e["params"]["tenant_id"])
        for e in plan.tables.get(VLAN_TENANT, [])
        if not e.get("default")
    ]
    for vid, tid in pairs:
        if out.setdefault(int(vid), int(tid)) != int(tid):
            raise ViewError(f"the plan assigns VLAN {vid} to tenant ids {out[int(vid)]} and {tid}")
    return out


def classifier_view(plan: NativePlan, key_widths: Mapping[str, int]) -> TernaryView:
    """``key_widths``: the classifier's match fields and bit widths, in P4Info order."""
    space = Space(tuple(key_widths.items()))
    tenants = tenant_map(plan)
    reachable = set(tenants.values())
    default: Outcome = (0, 0)  # the program's own default action: miss_fixed(0)
    entries = []
    rules = [e for e in plan.tables[CLASSIFIER] if not e.get("default")]
    if rules and not reachable:
        raise ViewError("no access port or trunk VLAN assigns a tenant, so no packet reaches the classifier")
    for e in plan.tables[CLASSIFIER]:
        if e.get("default"):
            if e["action"].endswith("miss_algorithm1"):
                default = Algorithm1(CATALOGUE_LANES >> int(e["params"]["lane_shift"]), None)
            else:
                default = (0, int(e["params"]["lane"]))
            continue
        match = {n: (int(v), int(m)) for n, (v, m) in e["match"].items()}
        if unknown := set(match) - set(key_widths):
            raise ViewError(f"a classifier entry matches {sorted(unknown)}, not in the table's key")
        if match.get(TENANT_FIELD, (0, 0))[0] not in reachable:
            continue  # no port or VLAN assigns this tenant id: no packet can reach the entry
        value, mask = space.pack(match)
        params = e["params"]
        entries.append(TernaryEntry(value, mask, int(e["priority"]), (int(params["slice_id"]), int(params["lane"]))))
    return TernaryView(
        space,
        tuple(entries),
        default,
        decides=("slice_id", "lane"),
        tenant_field=TENANT_FIELD,
        tenant_by_vlan=tenants,
        source="P4 classifier",
    )
