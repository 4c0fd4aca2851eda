"""docker-compose's bmv2 service, run here: its command line (with the mounted compiled/
directory and a free port substituted) starts simple_switch_grpc on p4c's JSON, and the
driver pushes the program and a rule set through it. Docker itself is not available on
these machines; this runs the same switch binary with the same arguments."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import grpc
import pytest
import yaml
from irs import two_tenants

from sliceportal_p4rt.driver import Driver
from sliceportal_p4rt.p4info import compiled_dir
from sliceportal_testbed.processes import free_port

ROOT = Path(__file__).resolve().parents[3]


def service() -> dict[str, object]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    svc = compose["services"]["bmv2"]
    assert isinstance(svc, dict)
    return svc


def test_the_service_mounts_the_checked_in_build() -> None:
    svc = service()
    mounts = {m.split(":")[1]: (ROOT / m.split(":")[0]).resolve() for m in svc["volumes"]}  # type: ignore[attr-defined]
    assert mounts["/p4"] == compiled_dir()
    assert "/p4/slicing.json" in str(svc["command"])


@pytest.mark.needs_bmv2
def test_the_service_is_the_switch_the_tests_run() -> None:
    """Pinned to a commit, and the same one as the simple_switch_grpc of this suite."""
    svc = service()
    repo, _, commit = str(svc["build"]["context"]).partition("#")  # type: ignore[index]
    assert repo == "https://github.com/p4lang/behavioral-model.git"
    assert re.fullmatch(r"[0-9a-f]{40}", commit), f"not pinned to a commit: {commit!r}"
    version = subprocess.run(["simple_switch_grpc", "--version"], capture_output=True, text=True, check=True)
    release, _, short = version.stdout.strip().partition("-")  # e.g. 1.15.5-9674187f
    assert commit.startswith(short), f"compose builds {commit[:8]}, the tests run {short}"
    assert svc["image"] == f"sliceportal/bmv2:{release}-{short}"


@pytest.mark.needs_bmv2
def test_the_service_command_runs_the_compiled_program() -> None:
    argv = shlex.split(str(service()["command"]))
    port = free_port()
    argv = [a.replace("/p4/", f"{compiled_dir()}/").replace("0.0.0.0:9559", f"127.0.0.1:{port}") for a in argv]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        ch = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(ch).result(timeout=15)
        ch.close()
        d = Driver({"address": f"127.0.0.1:{port}"})
        plan = d.lower(two_tenants())
        d.apply(plan, lambda e: None)
        assert d.health().ok
        assert d.read_state().tables == plan.tables
        d.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
