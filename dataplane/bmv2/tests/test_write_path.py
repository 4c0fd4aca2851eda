"""The target's P4Runtime Write is served by ``write_raw`` (the engine decodes and applies the
table entries), not by the generated servicer's protobuf ``Write``, which the generated
registration would otherwise put first (bmv2_target/server.py, ``add_to_server``)."""

from __future__ import annotations

import sys
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, SliceEntry, TenantEntry, Ternary
from sliceportal_p4rt.driver import Driver

HERE = Path(__file__).resolve().parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from bmv2_target.server import Faults, P4RuntimeServicer  # noqa: E402
from bmv2_target.switch import Switch, SwitchConfig  # noqa: E402


def test_valid_entry_writes_never_take_the_protobuf_path() -> None:
    servicer = P4RuntimeServicer(Switch(SwitchConfig(8, 64, None)), 1, Faults(0, 0))
    decoded: list[int] = []
    full_path = servicer.Write

    def spy(request: Any, context: grpc.ServicerContext) -> Any:
        decoded.append(len(request.updates))
        return full_path(request, context)

    servicer.Write = spy  # type: ignore[method-assign]  # what the generated registration binds
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer.add_to_server(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        d = Driver({"address": f"127.0.0.1:{port}", "access_ports": {1: 100}, "trunk_ports": [2], "uplink_port": 2})
        t = TenantEntry(1, "t", 1001, 100)
        rules = tuple(Rule(Match(src_ip=Ternary.exact(0x0A000000 + i, 32)), Action(1, 3, 0)) for i in range(50))
        ir = RuleIR(lanes=8, paths=1, rules=rules, slices=(SliceEntry(1, 1, "s", 1001, 100, (3,)),), tenants=(t,))
        result = d.apply(d.lower(ir), lambda e: None)
        assert result.added >= 50 and d.read_state().version == ir.digest()
        d.close()
    finally:
        server.stop(None)
    assert decoded == []  # every Write reached write_raw; none was decoded by protobuf
