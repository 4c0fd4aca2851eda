"""Seed 001 Listing 1 and the native intent form, parsed and mapped to a domain change."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sliceportal.rules.intents import IntentError, parse_intent


def listing1() -> dict[str, Any]:
    # Listing 1 of seed 001, verbatim but for the trailing comma JSON does not allow.
    return {
        "Resources": [
            {"resourceId": "F8A4C949", "encapsulationID1": "00000445", "encapsulationType1": "vxlan"},
            {"resourceId": "B6E6B2B3", "encapsulationID2": "8894D0D4", "encapsulationType2": "gtp"},
            {"resourceId": "5A07C580", "srcIP": "192.188.0.140", "dstPort": "5004"},
        ],
        "Action": {"actionType": "INSERT", "actionName": "PRIO-QUEUE", "flow_hash": "E918D704", "rx_queue": "1"},
        "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}],
    }


def test_listing1_maps_to_tenant_teid_ue_service_and_priority() -> None:
    change = parse_intent(json.dumps(listing1()))
    assert change.source == "listing1" and change.operation == "insert"
    assert change.tenant_vni == 0x445
    assert change.teid == 0x8894D0D4
    assert change.ue == ipaddress.IPv4Network("192.188.0.140/32")
    assert change.dst_ports == ((5004, 5004),)
    assert change.lane == change.rx_queue == 1
    assert change.flow_hash == 0xE918D704
    assert change.resource_ids == ("F8A4C949", "B6E6B2B3", "5A07C580")
    assert change.params == {"interfaceName": "eth0"}


def test_listing1_delete_needs_no_queue() -> None:
    msg = listing1()
    msg["Action"] = {"actionType": "DELETE", "actionName": "PRIO-QUEUE"}
    change = parse_intent(msg)
    assert change.operation == "delete" and change.lane is None


def test_native_form() -> None:
    change = parse_intent(
        {"operation": "insert", "tenant_vni": 7, "ue": "10.0.1.0/27", "dst_ports": [[5000, 5006]], "lane": 6}
    )
    assert change.source == "native" and change.ue.prefixlen == 27  # type: ignore[union-attr]
    assert change.dst_ports == ((5000, 5006),) and change.lane == 6


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda m: m["Resources"][0].update(encapsulationID1="1000000"), "Resources"),  # VNI > 24 bits
        (lambda m: m["Resources"][0].update(encapsulationID1="zz"), "Resources"),
        (lambda m: m["Resources"][0].update(encapsulationType1="gre"), "Resources"),
        (lambda m: m["Resources"][2].update(dstPort="70000"), "Resources"),
        (lambda m: m["Resources"][2].update(srcIP="300.1.1.1"), "Resources"),
        (lambda m: m["Resources"][2].update(colour="red"), "Resources"),
        (lambda m: m["Action"].update(actionName="DROP"), "Action"),
        (lambda m: m["Action"].update(rx_queue="9"), "Resources"),  # no lane 9
        (lambda m: m["Action"].pop("rx_queue"), "lane"),  # insert without priority
        (lambda m: m.update(Resources=[]), "Resources"),
        (
            lambda m: m["Resources"].append({"resourceId": "X", "encapsulationID3": "1", "encapsulationType3": "gtp"}),
            "TEID",
        ),
        (lambda m: m.update(Resources=[{"resourceId": "A"}]), "selects no traffic"),
    ],
)
def test_bad_listing1_is_refused_with_a_location(mutate: Any, where: str) -> None:
    msg = listing1()
    mutate(msg)
    with pytest.raises(IntentError) as e:
        parse_intent(msg)
    assert e.value.errors and where in str(e.value) + json.dumps(e.value.errors)


def test_not_json_and_not_an_object() -> None:
    with pytest.raises(IntentError, match="not JSON"):
        parse_intent('{"Resources": [1,],}')
    with pytest.raises(IntentError, match="JSON object"):
        parse_intent("[1, 2]")


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=12), c, max_size=4),
        max_leaves=12,
    )
)
def test_arbitrary_json_never_crashes(payload: Any) -> None:
    try:
        parse_intent(json.dumps(payload))
    except IntentError as e:
        assert e.errors


junk = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.text(max_size=10)
    | st.lists(st.integers(), max_size=2)
)


@given(
    st.integers(0, 2),
    st.sampled_from(["resourceId", "encapsulationID1", "encapsulationType1", "srcIP", "dstPort"]),
    junk,
    st.sampled_from(["actionType", "actionName", "flow_hash", "rx_queue"]),
    junk,
)
def test_listing1_with_junk_fields_never_crashes(i: int, rkey: str, rval: Any, akey: str, aval: Any) -> None:
    msg = listing1()
    msg["Resources"][i][rkey] = rval
    msg["Action"][akey] = aval
    try:
        parse_intent(msg)
    except IntentError as e:
        assert e.errors
