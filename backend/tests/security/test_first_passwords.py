"""Passwords the run command creates (issue #27): in 0600 files in the data directory, only
their path on stdout (a terminal's scrollback and a service's log outlive them)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.cli import demo_logins, first_operator
from sliceportal.core.config import Settings
from sliceportal.core.security import verify_password
from sliceportal.models import User
from sliceportal.services.bootstrap_data import seed_demo


def _private(path: Path) -> None:
    st = path.lstat()
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()


def _logs_in(session: Session, username: str, password: str) -> bool:
    user = session.scalar(select(User).where(User.username == username))
    return user is not None and verify_password(password, user.password_hash)


def test_the_first_operator_password_is_in_a_private_file_not_on_stdout(
    db_url: str, session: Session, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(data_dir=tmp_path / "data", reconcile_interval_s=0)
    path = first_operator(settings, db_url)
    out = capsys.readouterr().out
    assert path is not None and path.parent == tmp_path / "data" and str(path) in out
    _private(path)
    user, password = path.read_text().split()
    assert password not in out and _logs_in(session, user, password)
    assert first_operator(settings, db_url) is None  # once only


def test_a_link_planted_at_the_password_file_is_not_written_through(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "data").mkdir()
    victim = tmp_path / "victim"
    victim.write_text("")
    (tmp_path / "data" / "operator-password.txt").symlink_to(victim)
    path = first_operator(Settings(data_dir=tmp_path / "data", reconcile_interval_s=0), db_url)
    assert path is not None and victim.read_text() == ""
    _private(path)


def test_demo_tenant_passwords_are_in_a_private_file_not_on_stdout(
    db_url: str, session: Session, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_demo(session, users_per_slice=1)
    settings = Settings(data_dir=tmp_path, reconcile_interval_s=0)
    path = demo_logins(settings, db_url)
    out = capsys.readouterr().out
    assert path is not None and str(path) in out
    _private(path)
    accounts = [line.split() for line in path.read_text().splitlines()]
    assert accounts
    for user, password in accounts:
        assert user in out and password not in out and _logs_in(session, user, password)
