"""Alembic environment: migrations run against the URL the caller configured."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

import sliceportal.models as models

config = context.config
url = config.get_main_option("sqlalchemy.url")
assert url, "sqlalchemy.url must be set by sliceportal.core.migrate"

with create_engine(url).connect() as connection:
    context.configure(connection=connection, target_metadata=models.Base.metadata, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()
