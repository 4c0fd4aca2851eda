"""End-to-end fixtures: the real stack, started by the test run.

A private PostgreSQL cluster (migrated, with an operator, an integrator and the demo tenants),
the bundled P4Runtime data plane, and uvicorn serving the API and the built frontend
(frontend/dist) as a subprocess; the tests drive Debian's Chromium through Playwright.

As root (CI), the server also starts the emulated testbed of the run command (namespaces, XDP
and P4Runtime data planes with the demo slices deployed, subscribers' traffic measured into
KPIs), so the dashboards show measured traffic. Without root, ``kpi_feed`` stores KPI points
through the real KPI store instead, and says so.
"""

from __future__ import annotations

import itertools
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright
from sqlalchemy import create_engine, select
from sqlalchemy.orm import sessionmaker

from sliceportal.control import state as controller_state
from sliceportal.core.migrate import upgrade
from sliceportal.core.pgembed import EmbeddedPostgres
from sliceportal.core.security import hash_password
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.store import ingest
from sliceportal.models import Role, Slice, Tenant, User
from sliceportal.services.bootstrap_data import seed_demo
from sliceportal_testbed.processes import free_port, start_p4runtime_target

# An assertion waits as long as an action does (15 s, below): Playwright's 5 s default failed a
# page that rendered in 5.5 s on a slow CI host. A passing check returns as soon as it holds.
expect.set_options(timeout=15_000)
# A deadline for what live traffic, the KPI collector and the SLA hold-down produce (a chart
# moving, a violation opening): generous, since it costs nothing when met and CI runs a second
# lane of tests beside the e2e ones on the two cores
LIVE_S = 30

REPO = Path(__file__).resolve().parents[1]
DIST = REPO / "frontend" / "dist"
# Every run takes the screenshots; they replace the ones docs/ uses only when asked
# (UPDATE_SCREENSHOTS=1), so a test run leaves the work tree clean.
SCREENSHOTS = REPO / ("docs/screenshots" if os.environ.get("UPDATE_SCREENSHOTS") == "1" else "e2e/screenshots")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OPERATOR = ("e2e-operator", "operator-e2e-pass")
INTEGRATOR = ("e2e-integrator", "integrator-e2e-pass")
RED = ("mvno-red-viewer", "red-viewer-e2e-pass")


@dataclass(frozen=True)
class Stack:
    base_url: str
    p4rt_address: str
    database_url: str
    live: bool  # the emulated testbed sends real traffic (root only)


@pytest.fixture(scope="session")
def frontend_dist() -> Path:
    # bootstrap.sh builds it; build here too so the e2e run works straight from a checkout.
    if not (DIST / "index.html").exists():
        if shutil.which("npm") is None:
            pytest.fail("frontend/dist is missing and npm is not installed to build it")
        subprocess.run(["npm", "ci"], cwd=REPO / "frontend", check=True)
        subprocess.run(["npm", "run", "build"], cwd=REPO / "frontend", check=True)
    return DIST


@pytest.fixture(scope="session")
def stack(frontend_dist: Path) -> Iterator[Stack]:
    root = Path(tempfile.mkdtemp(prefix="sliceportal-e2e-pg-"))
    root.chmod(0o755)  # the server runs as the postgres user
    pg = EmbeddedPostgres(root, port=free_port(), dbname="sliceportal_e2e", durable=False)  # throw-away
    pg.start()
    url = pg.url("sliceportal_e2e")
    upgrade(url)
    engine = create_engine(url)
    with sessionmaker(engine)() as session:
        session.add(
            User(
                username=OPERATOR[0],
                password_hash=hash_password(OPERATOR[1]),
                role=Role.OPERATOR,
                full_name="e2e operator",
            )
        )
        session.add(
            User(
                username=INTEGRATOR[0],
                password_hash=hash_password(INTEGRATOR[1]),
                role=Role.INTEGRATOR,
                full_name="e2e integrator",
            )
        )
        session.commit()
        seed_demo(session, users_per_slice=8)
        # demo data carries no accounts (they are opt-in, with random passwords): the tests
        # create the red tenant's login themselves
        red = session.scalar(select(Tenant).where(Tenant.name == "mvno-red"))
        assert red is not None
        session.add(
            User(
                username=RED[0],
                password_hash=hash_password(RED[1]),
                role=Role.TENANT,
                tenant_id=red.id,
                full_name="mvno-red NOC",
            )
        )
        session.commit()
    engine.dispose()

    target = start_p4runtime_target("--priority-queues", "8")
    port = free_port()
    live = os.geteuid() == 0 and os.environ.get("E2E_TESTBED", "true") != "false"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "SLICEPORTAL_DATABASE_URL_RESOLVED": url,
        "SECRET_KEY": secrets.token_urlsafe(32),
        "RECONCILE_INTERVAL_S": "0",
        "TESTBED": "true" if live else "false",
        "TESTBED_PREFIX": "sp-e2e-",
        "TESTBED_RATE_PPS": "1000",
    }
    # the portal as `make run` serves it: a controller process (its testbed, as root) and API
    # workers (as many as cores, unless SLICEPORTAL_WORKERS says otherwise), on the database
    # prepared above (migrations and the operator are already there)
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from sliceportal.cli import main; main()",
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-demo",
            "--testbed" if live else "--no-testbed",
        ],
        env=env,
        cwd=REPO,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/api/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                hint = "; as root the emulated testbed starts with it (E2E_TESTBED=false skips it)" if live else ""
                pytest.fail(f"the portal did not come up (exit code {server.poll()}){hint}")
            time.sleep(0.2)
        _wait_for_controller(server, url, live)
        yield Stack(base, target.address, url, live)
    finally:
        server.terminate()  # the controller's testbed tears its namespaces down in the shutdown
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
        target.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


def _wait_for_controller(controller: subprocess.Popen[bytes], url: str, live: bool) -> None:
    """Until the controller leads and, as root, its testbed runs (what it reports to the database)."""
    engine = create_engine(url)
    deadline = time.monotonic() + 240
    try:
        while True:
            with sessionmaker(engine)() as session:
                report = controller_state.testbed_report(session)
                leader = controller_state.leader(session)
            if leader is not None and (not live or (report is not None and report.state.running)):
                return
            if controller.poll() is not None or time.monotonic() > deadline:
                why = report.state.error if report is not None else "no report"
                pytest.fail(f"the controller did not lead with its testbed (exit code {controller.poll()}): {why}")
            time.sleep(0.5)
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def playwright_session() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_session: Playwright) -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing (apt-get install chromium)")
    b = playwright_session.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield b
    b.close()


@pytest.fixture
def page(browser: Browser, stack: Stack) -> Iterator[Page]:
    # A laptop-sized window; the tablet test resizes its own.
    context = browser.new_context(base_url=stack.base_url, viewport={"width": 1366, "height": 900})
    context.set_default_timeout(15_000)
    p = context.new_page()
    # Every journey also proves the built app runs under the portal's strict CSP: Chromium
    # reports each blocked script, style or connection on the console.
    csp_violations: list[str] = []
    p.on("console", lambda m: csp_violations.append(m.text) if "Content Security Policy" in m.text else None)
    yield p
    context.close()
    assert not csp_violations, f"the app broke its Content-Security-Policy: {csp_violations}"


def login(page: Page, username: str, password: str) -> None:
    page.goto("/login")
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.get_by_test_id("whoami").wait_for()


def shot(page: Page, name: str, full_page: bool = True) -> None:
    """A screenshot for docs/ (docs/portal.md shows them)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # transitions finished: a dialog shot right after it opened was caught half faded in
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page, animations="disabled")


def _points(session_slices: list[Slice], tick: int, ts: datetime) -> list[KpiPoint]:
    points = []
    for s in session_slices:
        lanes = list(s.slice_type.lanes)
        for backend, (i, lane) in itertools.product(s.backends, enumerate(lanes)):
            delay = 2.0 + lane + (tick % 5) * 0.4
            mbps = 5.0 + 3.0 * i + (tick % 10)
            points.append(
                KpiPoint(
                    slice_id=s.id,
                    backend_id=backend.id,
                    lane=lane,
                    ts=ts,
                    tx_packets=1000,
                    rx_packets=995,
                    rx_bytes=int(mbps * 1e6 / 8),
                    throughput_bps=mbps * 1e6,
                    loss_pct=0.5,
                    delay_mean_ms=delay * 0.7,
                    delay_p50_ms=delay * 0.6,
                    delay_p99_ms=delay,
                    jitter_ms=0.3 + 0.1 * (tick % 3),
                )
            )
    return points


@pytest.fixture(scope="session")
def kpi_feed(stack: Stack) -> Iterator[None]:
    """KPIs for the dashboards: measured by the live testbed as root; otherwise one point per
    slice and lane every second, stored through the real KPI store (which also evaluates the
    SLAs), standing in for the testbed's meters, which need root."""
    if stack.live:
        yield
        return
    warnings.warn("not root: e2e KPIs come from a stand-in feeder, not from measured traffic", stacklevel=1)
    stop = threading.Event()
    engine = create_engine(stack.database_url)

    def feed() -> None:
        tick = 0
        while not stop.is_set():
            with sessionmaker(engine, expire_on_commit=False)() as session:
                slices = list(session.scalars(select(Slice)))
                ingest(session, _points(slices, tick, datetime.now(UTC)))
            tick += 1
            stop.wait(1.0)

    thread = threading.Thread(target=feed, name="kpi-feed", daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(5)
    engine.dispose()
