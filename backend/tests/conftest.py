"""Backend test fixtures: one real PostgreSQL cluster per session, one database per test.

The cluster is started by the test run itself. A template database is migrated once;
each test gets a fresh copy of it (CREATE DATABASE ... TEMPLATE), so tests are isolated
and the app under test runs its own transactions exactly as in production.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings, random_secret
from sliceportal.core.migrate import upgrade
from sliceportal.core.pgembed import EmbeddedPostgres
from sliceportal.models import Role
from sliceportal_testbed.processes import free_port
from tests.factories import login, make_user

TEMPLATE = "sp_template"
_counter = itertools.count()


@pytest.fixture(scope="session")
def pg() -> Iterator[EmbeddedPostgres]:
    # Not under pytest's tmp dir: that is private to root, and the server runs as postgres.
    root = Path(tempfile.mkdtemp(prefix="sliceportal-test-pg-"))
    # a throw-away cluster: durability (fsync) buys nothing here and costs the suite time
    server = EmbeddedPostgres(root, port=free_port(), dbname=TEMPLATE, durable=False)
    server.start()
    upgrade(server.url(TEMPLATE))
    engine = create_engine(server.url("postgres"), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:  # no open connections may remain on a template
        conn.execute(text(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{TEMPLATE}'"))
    engine.dispose()
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def db_url(pg: EmbeddedPostgres) -> Iterator[str]:
    name = f"t{next(_counter)}"
    pg.create_database(name, template=TEMPLATE)
    yield pg.url(name)
    from sliceportal.core.db import engine_for

    engine_for(pg.url(name)).dispose()
    admin = create_engine(pg.url("postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def settings() -> Settings:
    return Settings(secret_key=random_secret(), login_max_failures=3, reconcile_interval_s=0)


@pytest.fixture
def client(db_url: str, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings, db_url), raise_server_exceptions=True) as c:
        yield c


@pytest.fixture
def session(db_url: str) -> Iterator[Session]:
    engine = create_engine(db_url)
    with sessionmaker(engine, expire_on_commit=False)() as s:
        yield s
    engine.dispose()


@pytest.fixture
def op(client: TestClient, session: Session) -> dict[str, str]:
    """An operator's headers: user ``op``, logged in (a module may define its own)."""
    make_user(session, "op", Role.OPERATOR)
    return login(client, "op")
