"""The ``sliceportal`` command: run the portal, manage the database, drive traffic."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated

import typer
import uvicorn

from sliceportal.core.config import get_settings
from sliceportal.core.db import session_scope
from sliceportal.core.migrate import upgrade
from sliceportal.core.pgembed import EmbeddedPostgres
from sliceportal.traffic import cli as traffic_cli

app = typer.Typer(help="QoS-aware network slicing portal", no_args_is_help=True)
db = typer.Typer(help="database: migrate, embedded cluster")
app.add_typer(db, name="db")
app.add_typer(traffic_cli.app, name="traffic", help="traffic generation and measurement (docs/traffic.md)")


def embedded() -> EmbeddedPostgres | None:
    """The embedded cluster, unless DATABASE_URL points elsewhere."""
    settings = get_settings()
    return None if settings.database_url else EmbeddedPostgres(Path(settings.data_dir) / "postgres")


def database_url(start_embedded: bool = True) -> str:
    """DATABASE_URL, or the embedded cluster under the data directory (started on demand)."""
    pg = embedded()
    if pg is None:
        return get_settings().database_url or ""
    if start_embedded:
        pg.start()
    return pg.url()


@db.command("migrate")
def db_migrate() -> None:
    """Apply every migration to the database."""
    upgrade(database_url())
    typer.echo("database migrated")


@db.command("stop")
def db_stop() -> None:
    """Stop the embedded PostgreSQL cluster."""
    EmbeddedPostgres(Path(get_settings().data_dir) / "postgres").stop()


@app.command()
def run(
    host: Annotated[str | None, typer.Option(help="address to serve on")] = None,
    port: Annotated[int | None, typer.Option(help="port to serve on")] = None,
    demo: Annotated[bool, typer.Option(help="seed demo tenants, slices and subscribers")] = True,
    demo_accounts: Annotated[bool, typer.Option(
        help="also create a tenant login per demo tenant (random passwords, printed once)")] = False,
    testbed: Annotated[bool, typer.Option(help="emulated testbed: data planes, live traffic, KPIs (root)")] = True,
) -> None:
    """Run the portal: database, migrations, first operator, demo data, API and UI."""
    from sliceportal.services.bootstrap_data import create_demo_accounts, ensure_operator, seed_demo

    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    settings = get_settings()
    url = database_url()
    upgrade(url)
    with session_scope(url) as session:
        password = ensure_operator(session)
    if password:
        secret_file = Path(settings.data_dir) / "operator-password.txt"
        secret_file.write_text(f"admin {password}\n")
        os.chmod(secret_file, 0o600)
        typer.secho(f"First operator created: user 'admin', password '{password}' "
                    f"(shown once; also in {secret_file}, delete it after reading)", fg="green", bold=True)
    if demo:
        with session_scope(url) as session:
            if seed_demo(session):
                typer.echo("demo tenants, slices and subscribers created")
    if demo_accounts:
        with session_scope(url) as session:
            for username, account_password in create_demo_accounts(session):
                typer.secho(f"Demo tenant account: user {username!r}, password {account_password!r} (shown once)",
                            fg="yellow")
    os.environ["SLICEPORTAL_DATABASE_URL_RESOLVED"] = url
    os.environ["TESTBED"] = "true" if testbed else "false"
    get_settings.cache_clear()
    from sliceportal import asgi

    pg = embedded()
    if pg is not None:
        # uvicorn re-raises SIGTERM after its graceful shutdown, so no code after run() is reached
        asgi.app.state.on_shutdown.append(pg.stop)
    uvicorn.run(asgi.app, host=host or settings.host, port=port or settings.port, log_level="info")


@app.command()
def openapi() -> None:
    """Print the OpenAPI document (the frontend generates its client from it)."""
    import json

    from sliceportal.api.main import create_app

    # No database is touched: engines connect lazily.
    spec = create_app(get_settings(), "postgresql+psycopg://unused@/unused").openapi()
    typer.echo(json.dumps(spec, indent=1, sort_keys=True))


def main() -> None:
    app()
