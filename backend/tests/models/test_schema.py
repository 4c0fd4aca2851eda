"""The models and the migrations describe one schema: a database migrated to the head has
exactly the tables, columns (with their types), indexes and foreign keys the models declare
(Alembic's autogenerate comparison finds nothing to do). A migration that forgets what a model
says, or a model that forgets what a migration did, fails here rather than in production."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

import sliceportal.models  # noqa: F401  (every model registered on the metadata)
from sliceportal.models.base import Base


def test_the_migrated_database_is_what_the_models_declare(db_url: str) -> None:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    assert diff == [], "\n".join(map(str, diff))
