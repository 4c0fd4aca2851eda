"""The ``sliceportal`` command: run the portal, manage the database, drive traffic."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import typer

from sliceportal import p4rt_cli
from sliceportal.core.config import Settings, get_settings
from sliceportal.core.db import session_scope
from sliceportal.core.dsn import RESOLVED_ENV, database_url, embedded
from sliceportal.core.migrate import upgrade
from sliceportal.core.pgembed import EmbeddedPostgres
from sliceportal.core.private_files import write_private_file
from sliceportal.core.stack_dumps import dump_stacks_on_signal
from sliceportal.probe import cli as probe_cli
from sliceportal.traffic import cli as traffic_cli

app = typer.Typer(help="QoS-aware network slicing portal", no_args_is_help=True)
db = typer.Typer(help="database: migrate, embedded cluster")
app.add_typer(db, name="db")
app.add_typer(traffic_cli.app, name="traffic", help="traffic generation and measurement (docs/traffic.md)")
app.add_typer(probe_cli.app, name="probe", help="active probes per slice lane, STAMP RFC 8762 (docs/kpis.md)")
app.add_typer(p4rt_cli.app, name="p4rt", help="P4Runtime backends: p4runtime-shell on the switch (docs/bmv2.md)")


@db.command("migrate")
def db_migrate() -> None:
    """Apply every migration to the database."""
    upgrade(database_url())
    typer.echo("database migrated")


@db.command("stop")
def db_stop() -> None:
    """Stop the embedded PostgreSQL cluster."""
    EmbeddedPostgres(Path(get_settings().data_dir) / "postgres").stop()


LOG_FORMAT = "%(levelname)s:     %(name)s: %(message)s"
# in the data directory, mode 0600: the first operator's password (docs/install.md)
OPERATOR_PASSWORD_FILE = "operator-password.txt"
DEMO_ACCOUNTS_FILE = "demo-accounts.txt"  # likewise, --demo-accounts
# how long a stopping API waits for open requests: a live KPI stream never ends on its own,
# so without a bound one open dashboard held Ctrl-C until its browser went away
GRACEFUL_SHUTDOWN_S = 5


def _configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    dump_stacks_on_signal()  # kill -USR1: every thread's stack in the log (core/stack_dumps.py)
    # httpx logs every request at INFO: the drivers' calls to XDP agents (counters every second)
    # would drown the portal's own log
    logging.getLogger("httpx").setLevel(logging.WARNING)


def first_operator(settings: Settings, url: str) -> Path | None:
    """Create the first operator (an empty database) and say where its password is: in a
    0600 file in the data directory, never on stdout, since a terminal's scrollback and a
    service's log (often 0644) outlive it. The file's path, or None if operators exist."""
    from sliceportal.services.bootstrap_data import ensure_operator

    with session_scope(url) as session:
        password = ensure_operator(session)
    if not password:
        return None
    secret_file = Path(settings.data_dir) / OPERATOR_PASSWORD_FILE
    secret_file.parent.mkdir(parents=True, exist_ok=True)
    write_private_file(secret_file, f"admin {password}\n")
    typer.secho(
        f"First operator created: user 'admin'; its password is in {secret_file} (readable by this "
        "user only): log in, change it, then delete the file",
        fg="green",
        bold=True,
    )
    return secret_file


def demo_logins(settings: Settings, url: str) -> Path | None:
    """A login per demo tenant (``--demo-accounts``), their passwords as the operator's: in a
    0600 file in the data directory, not on stdout. The file, or None if none was created."""
    from sliceportal.services.bootstrap_data import create_demo_accounts

    with session_scope(url) as session:
        accounts = create_demo_accounts(session)
    if not accounts:
        return None
    accounts_file = Path(settings.data_dir) / DEMO_ACCOUNTS_FILE
    write_private_file(accounts_file, "".join(f"{user} {password}\n" for user, password in accounts))
    typer.secho(
        f"Demo tenant logins {', '.join(user for user, _ in accounts)}: their passwords are in "
        f"{accounts_file} (readable by this user only)",
        fg="yellow",
    )
    return accounts_file


def proxy_header_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's proxy-header handling from TRUSTED_PROXIES. uvicorn by default believes
    X-Forwarded-For / -Proto from 127.0.0.1, so any local client could pick its address (and
    slip the per-address login lock-out); empty TRUSTED_PROXIES: the headers are ignored."""
    if not settings.trusted_proxies:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": ",".join(str(n) for n in settings.trusted_proxies)}


def proxy_header_args(settings: Settings) -> list[str]:
    """:func:`proxy_header_options` as uvicorn's command-line flags."""
    options = proxy_header_options(settings)
    if not options["proxy_headers"]:
        return ["--no-proxy-headers"]
    return ["--proxy-headers", "--forwarded-allow-ips", options["forwarded_allow_ips"]]


def _stop_on_signals(stop: threading.Event) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())


@app.command()
def run(
    host: Annotated[str | None, typer.Option(help="address to serve on")] = None,
    port: Annotated[int | None, typer.Option(help="port to serve on")] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="API worker processes (default SLICEPORTAL_WORKERS, else as many as cores) beside a controller "
            "process; 1: one process serving the API with the controller in it (docs/install.md)"
        ),
    ] = None,
    demo: Annotated[bool, typer.Option(help="seed demo tenants, slices and subscribers")] = True,
    demo_accounts: Annotated[
        bool, typer.Option(help="also create a tenant login per demo tenant (random passwords, printed once)")
    ] = False,
    testbed: Annotated[bool, typer.Option(help="emulated testbed: data planes, live traffic, KPIs (root)")] = True,
) -> None:
    """Run the portal: database, migrations, first operator, demo data, then the controller
    process and the API (N uvicorn workers) under supervision; Ctrl-C stops them all."""
    from sliceportal.control.supervisor import Child, Supervisor
    from sliceportal.services.bootstrap_data import seed_demo

    _configure_logging()
    settings = get_settings()
    url = database_url()
    upgrade(url)
    first_operator(settings, url)
    if demo:
        with session_scope(url) as session:
            if seed_demo(session):
                typer.echo("demo tenants, slices and subscribers created")
    if demo_accounts:
        demo_logins(settings, url)
    n = workers or settings.workers or os.cpu_count() or 1
    if n == 1:
        _serve_with_controller(settings.model_copy(update={"testbed": testbed}), url, host, port)
        return
    env = {**os.environ, RESOLVED_ENV: url, "TESTBED": "true" if testbed else "false"}
    here = [sys.executable, "-c", "from sliceportal.cli import main; main()"]
    supervisor = Supervisor(
        [
            Child("controller", [*here, "controller"], env),
            Child(
                f"api ({n} workers)",
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "sliceportal.asgi:app",
                    "--host",
                    host or settings.host,
                    "--port",
                    str(port or settings.port),
                    *proxy_header_args(settings),
                    "--workers",
                    str(n),
                    "--log-level",
                    "info",
                    # uvicorn's default (5 s) killed workers that were only starved of
                    # CPU under load (issue #26); a hung one is still replaced
                    "--timeout-worker-healthcheck",
                    str(settings.api_worker_healthcheck_s),
                    "--timeout-graceful-shutdown",
                    str(GRACEFUL_SHUTDOWN_S),
                ],
                env,
            ),
        ]
    )
    _stop_on_signals(supervisor.stopping)
    try:
        supervisor.run()
    finally:
        pg = embedded(settings)
        if pg is not None and not os.environ.get(RESOLVED_ENV):
            pg.stop()


def _serve_with_controller(settings: Settings, url: str, host: str | None, port: int | None) -> None:
    """One process: the API and the controller side by side (``--workers 1``): the smallest
    footprint, for a laptop or a test. Nothing depends on it since the data planes are driven
    from any process (XDP through its agent, P4Runtime by outbidding under the backend's lock)."""
    import uvicorn

    from sliceportal.api.main import create_app
    from sliceportal.control.controller import Controller
    from sliceportal.services.backends import POOL

    api = create_app(settings, url)
    controller = Controller(settings, url)
    pg = embedded(settings) if not os.environ.get(RESOLVED_ENV) else None
    # uvicorn re-raises SIGTERM after its graceful shutdown (the process ends there): the app's
    # shutdown hooks, not code after run(), stop the controller (its testbed), then the cluster
    api.state.on_shutdown.extend([controller.stop, POOL.close_all, *([pg.stop] if pg is not None else [])])
    with controller:
        uvicorn.run(
            api,
            host=host or settings.host,
            port=port or settings.port,
            log_level="info",
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
            **proxy_header_options(settings),
        )


@app.command()
def controller() -> None:
    """Run a controller in the foreground: while it holds the cluster's lease it runs the
    reconciler, the health prober and (TESTBED=true) the live testbed; SIGTERM / Ctrl-C stop it."""
    from sliceportal.control.controller import Controller
    from sliceportal.services.backends import POOL

    _configure_logging()
    settings = get_settings()
    url = database_url()
    stop = threading.Event()
    _stop_on_signals(stop)
    with Controller(settings, url) as ctl:
        typer.echo(f"controller {ctl.identity}: competing for the lease every {ctl.period_s:g} s")
        while not stop.wait(1.0):
            pass
    POOL.close_all()


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
