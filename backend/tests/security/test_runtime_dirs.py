"""The testbed's runtime directory against other local users (issue #27): private, under the
portal's run directory, checked before use; its token file never written through a link."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sliceportal.core.config import get_settings
from sliceportal.core.private_files import UnsafePathError, private_dir
from sliceportal_testbed.processes import XdpAgent, run_dir


@pytest.fixture
def prefix() -> Iterator[str]:
    p = f"s{os.getpid() % 100000}-"
    where = Path(get_settings().run_dir) / f"testbed-{p.rstrip('-')}"
    legacy = Path(tempfile.gettempdir()) / f"sliceportal-{p.rstrip('-')}"  # the first wave's fixed name
    yield p
    for d in (where, legacy):
        if d.is_symlink():
            d.unlink()
        shutil.rmtree(d, ignore_errors=True)


def test_the_run_directory_is_private_and_not_in_the_shared_temp_dir(prefix: str) -> None:
    d = run_dir(prefix)
    st = d.lstat()
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    assert not d.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())
    assert d.resolve().is_relative_to(Path(get_settings().run_dir).resolve())
    os.chmod(d, 0o755)  # one an older version created: tightened, not refused
    assert stat.S_IMODE(run_dir(prefix).stat().st_mode) == 0o700


@pytest.mark.needs_root
def test_a_directory_someone_else_created_first_is_not_used(prefix: str, tmp_path: Path) -> None:
    nobody = pwd.getpwnam("nobody").pw_uid
    where = Path(get_settings().run_dir) / f"testbed-{prefix.rstrip('-')}"
    # where the first wave looked, and where it looks now: created by another user first
    for squatted in (Path(tempfile.gettempdir()) / f"sliceportal-{prefix.rstrip('-')}", where):
        squatted.parent.mkdir(parents=True, exist_ok=True)
        squatted.mkdir(mode=0o777)
        os.chown(squatted, nobody, -1)
    with pytest.raises(UnsafePathError, match="owned by uid"):
        run_dir(prefix)
    assert not any(where.iterdir())
    where.rmdir()
    # a symlink to a directory the attacker reads: not followed
    bait = tmp_path / "bait"
    bait.mkdir()
    where.symlink_to(bait)
    with pytest.raises(UnsafePathError, match="is a symlink"):
        XdpAgent(prefix, "unused", "lo", "unused", {})
    assert not any(bait.iterdir())


def test_the_agent_token_file_is_never_written_through_a_link(prefix: str, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (run_dir(prefix) / "xdp-agent.token").symlink_to(victim)
    agent = XdpAgent(prefix, "unused", "lo", "unused", {})  # writes the token; starts nothing
    assert victim.read_text() == "precious\n"
    st = agent.token_file.lstat()
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
    assert agent.token_file.read_text() == agent.token


def test_private_dir_refuses_a_file_in_its_place(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(UnsafePathError, match="not a directory"):
        private_dir(tmp_path / "f")
