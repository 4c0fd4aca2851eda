"""The compiled packet engine (dataplane/bmv2/engine): its own Rust tests (loading p4c's
slicing.json, refusing unsupported constructs by name, running packets, LPM / range
tables), and the Python module the bundled target imports, driven as the target does."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from bmv2_target.engine import COMPILED_JSON, Engine  # noqa: E402


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo (Rust) on PATH")
def test_engine_rust_tests_pass() -> None:
    # through make: its CARGO_TARGET_DIR, where the engine's build already compiled the dependencies
    run = subprocess.run(["make", "-s", "engine-test"], cwd=HERE, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    passed = sum(int(n) for n in re.findall(r"test result: ok\. (\d+) passed", run.stdout))
    assert passed >= 7, run.stdout


def _engine() -> tuple[Engine, dict[str, int]]:
    e = Engine(COMPILED_JSON.read_text())
    return e, {t[0]: i for i, t in enumerate(e.tables())}


def test_module_runs_a_frame_through_p4cs_program() -> None:
    e, t = _engine()
    pt, fw = t["SlicingIngress.tenant.port_tenant"], t["SlicingIngress.fwd.tenant_forward"]
    e.insert(pt, [(1, 511)], 0, e.action_of(pt, "SlicingIngress.tenant.set_access_tenant"), [7, 100])
    e.insert(fw, [(7, 255), (1, 511)], 0, e.action_of(fw, "SlicingIngress.fwd.forward"), [4])
    e.commit()
    frame = bytes.fromhex("0200000000020200000000010800") + bytes(46)  # not IPv4: unparsed
    pkt = e.ingress(frame, 1, 5)
    assert pkt is not None and (pkt.egress_port, pkt.priority, pkt.length) == (4, 0, len(frame))
    assert pkt.data == frame
    assert e.egress(pkt, 6) == frame  # egress_vlan has no entry for port 4: unchanged
    with pytest.raises(ValueError, match="already left egress"):
        e.egress(pkt, 7)
    assert e.ingress(frame, 2, 5) is None  # port 2 has no tenant: drop_unallocated_port
    drops = e.counter_cells(e.counter_index("SlicingIngress.tenant.tenant_drops"))
    assert drops[0] == (1, len(frame))


def test_module_write_errors_name_the_problem() -> None:
    e, t = _engine()
    pt = t["SlicingIngress.tenant.port_tenant"]
    a = e.action_of(pt, "SlicingIngress.tenant.set_access_tenant")
    h = e.insert(pt, [(1, 511)], 0, a, [7, 100])
    with pytest.raises(ValueError, match="exists"):
        e.insert(pt, [(1, 511)], 0, a, [7, 100])
    with pytest.raises(ValueError, match="wider than 12 bits"):
        e.insert(pt, [(2, 511)], 0, a, [7, 4096])
    with pytest.raises(ValueError, match="bits outside the mask"):
        e.insert(pt, [(3, 1)], 0, a, [7, 1])
    e.delete(pt, h)
    with pytest.raises(KeyError, match="not found"):
        e.delete(pt, h)


def test_unsupported_constructs_are_refused_at_load_by_name() -> None:
    program = json.loads(COMPILED_JSON.read_text())
    program["actions"][1]["primitives"][0]["op"] = "clone_ingress_pkt_to_egress"
    program["learn_lists"] = [{"name": "digest", "id": 1}]
    with pytest.raises(ValueError) as err:
        Engine(json.dumps(program))
    assert "primitive: clone_ingress_pkt_to_egress" in str(err.value)
    assert "learn lists" in str(err.value)
    with pytest.raises(ValueError, match="not a BMv2 JSON program"):
        Engine("{}")
