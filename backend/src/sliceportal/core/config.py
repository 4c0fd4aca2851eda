"""The one settings object: every knob comes from the environment (or .env)."""

from __future__ import annotations

import hashlib
import ipaddress
import math
import os
import secrets
from collections import Counter
from enum import StrEnum
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, IPvAnyNetwork, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _source_root() -> Path | None:
    """The source checkout this package runs from, or None when it is installed (a wheel)."""
    root = Path(__file__).resolve().parents[4]
    return root if (root / "backend" / "src" / "sliceportal").is_dir() and (root / "pyproject.toml").is_file() else None


SOURCE_ROOT = _source_root()
# State lives in the checkout's var/ (make run, the tests); an installed portal keeps it where
# the XDG base directories say (a service sets DATA_DIR, as the Dockerfile does).
DEFAULT_DATA_DIR = (
    SOURCE_ROOT / "var"
    if SOURCE_ROOT is not None
    else Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "sliceportal"
)
# loopback, and the emulated testbed's veth networks (testbed/netns_testbed.py)
DEFAULT_BACKEND_NETWORKS = ("127.0.0.0/8", "::1/128", "10.200.0.0/16")
# SHA-256 of secrets that were ever published (the first wave's development default): a
# deployment still configured with one is refused, since anyone can forge its tokens.
PUBLISHED_SECRET_DIGESTS = frozenset(
    {
        "534fb4d152fedfad04322b2ae774613134968d8c46d11410ad027dad76a14308",
    }
)
MIN_SECRET_LENGTH = 32
# Estimated bits a secret must carry (estimated_bits): 32 random hex digits estimate 97 or more
# (2 000 draws), token_urlsafe(32) 189 or more; 36 x "a" estimates 0, "abcd" x 9 27, the
# alphabet then the digits 7 (its steps are all +1).
MIN_SECRET_BITS = 80


class Environment(StrEnum):
    LOCAL = "local"
    PRODUCTION = "production"


class HealthPolicySetting(BaseModel):
    """One driver's health-probe policy (``HEALTH_OVERRIDES='{"netfpga": {"timeout_s": 8}}'``)."""

    model_config = ConfigDict(extra="forbid")
    timeout_s: float | None = Field(None, gt=0, le=120)
    down_after: int | None = Field(None, ge=1, le=100)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    environment: Environment = Environment.LOCAL
    # Unset: the portal starts its own PostgreSQL cluster under data_dir (embedded default).
    database_url: str | None = None
    data_dir: Path = DEFAULT_DATA_DIR
    # Unset: a random per-install secret kept in data_dir/secret_key (mode 0600), created on
    # first start (core/secret_store.py). SECRET_KEY in the environment wins over the file.
    secret_key: str | None = Field(None, repr=False)
    access_token_minutes: int = 15
    refresh_token_days: int = 7
    login_max_failures: int = Field(5, description="failed logins per user+address before lock-out")
    login_window_seconds: int = Field(300, ge=1, description="failures older than this are forgotten")
    login_lockout_seconds: int = Field(60, ge=1, description="first lock-out; doubles with each consecutive one")
    login_lockout_max_seconds: int = Field(3600, ge=1, description="cap of the exponential backoff")
    trusted_proxies: list[IPvAnyNetwork] = Field(
        default_factory=list,
        description="reverse proxies whose X-Forwarded-For is believed; empty = the socket peer is the client",
    )
    backend_networks: list[IPvAnyNetwork] = Field(
        default_factory=lambda: [ipaddress.ip_network(n) for n in DEFAULT_BACKEND_NETWORKS],
        description="networks backends may point at (driver addresses); the operator widens it",
    )
    run_dir: Path = Field(
        DEFAULT_DATA_DIR / "run",
        description="the portal's own sockets; the only place a unix-socket backend address may point",
    )
    docs_public: bool = Field(False, description="serve /api/v1/docs without login")
    max_body_bytes: int = Field(1 << 20, ge=1024, description="request bodies larger than this → 413")
    max_upload_bytes: int = Field(16 << 20, ge=1024, description="CSV uploads larger than this → 413")
    rate_limit_expensive: str = Field(
        "30/minute", description="per principal: preview, import, deploy (the limits library's notation)"
    )
    host: str = "127.0.0.1"
    port: int = 8000
    cors_origins: list[str] = []
    frontend_dist: Path | None = Field(
        SOURCE_ROOT / "frontend" / "dist" if SOURCE_ROOT is not None else None,
        description="the built web UI (npm run build) served at /; unset in an installed portal: the API alone",
    )
    reconcile_interval_s: float = Field(15.0, ge=0, description="0 disables the reconcile loop")
    kpi_interval_s: float = Field(
        1.0,
        ge=0,
        description="KPI collector period (the data planes' own counters "
        "into samples, kpi/collector.py); 0 disables it",
    )
    # the controller process (control/): one leader in the cluster runs the reconciler, the
    # health prober and the testbed; another takes over within this period when it dies
    controller_period_s: float = Field(
        2.0,
        gt=0,
        le=60,
        description="leader lease period: how often a candidate tries, and how often the leader checks its lease",
    )
    workers: int = Field(
        0,
        ge=0,
        le=256,
        validation_alias=AliasChoices("sliceportal_workers", "workers"),
        description="API worker processes of the run command (SLICEPORTAL_WORKERS); 0: as many as "
        "the machine has cores, with a controller process beside them; 1: one process serving the "
        "API with the controller in it",
    )
    fanout_processes: int = Field(
        0,
        ge=0,
        le=64,
        description="processes (lanes) a slice deploy to many backends pushes from (services/fanout_pool.py); "
        "0: as many as the machine has cores; 1: the deploying process's own threads only",
    )
    fanout_min_backends: int = Field(
        256,
        ge=1,
        description="backends a slice deploy needs before it uses lanes: below this, starting them and their "
        "own driver sessions cost more than they save (docs/scale.md; lower it on hosts with many cores)",
    )
    testbed: bool = Field(False, description="the controller runs the emulated testbed with live traffic (run command)")
    testbed_rate_pps: float = Field(2000.0, gt=0, description="packets/s the testbed's subscribers send")
    testbed_prefix: str = Field("sp-run-", pattern=r"^[a-z0-9-]{1,8}$", description="namespace name prefix")
    # the bundled target by default: the congestion scenario lowers a port's rate, and BMv2 has
    # rates per priority queue only (docs/testbed.md), so its plane runs without that scenario
    testbed_p4_target: Literal["bundled", "bmv2"] = Field(
        "bundled", description="the P4 plane's switch: the bundled target or the real simple_switch_grpc"
    )
    # SLA hold-down (docs/kpis.md): a violation opens after this many consecutive intervals out
    # of bounds and closes after that many good ones, so one noisy interval is not an event.
    sla_open_after: int = Field(3, ge=1, le=600, description="bad intervals in a row that open a violation")
    sla_close_after: int = Field(5, ge=1, le=600, description="good intervals in a row that close it")
    # a flapping KPI is one episode: a violation that opens again within this many seconds of
    # its end re-opens the same row (issue #29) instead of adding one row per flap
    sla_merge_within_s: float = Field(
        60.0, ge=0, le=86400, description="re-openings within this many seconds merge into one episode"
    )
    sla_no_data_after: int = Field(5, ge=1, le=3600, description="intervals without a sample → SLA status no_data")
    # Reliability under contention (issue #26, docs/install.md "Timeouts under load"): every
    # deadline below is sized for a host at load 20 on 2 cores, where a healthy process may
    # not be scheduled for seconds.
    api_worker_healthcheck_s: int = Field(
        60,
        ge=5,
        le=3600,
        description="the run command's uvicorn --timeout-worker-healthcheck: an API worker "
        "that does not answer its supervisor's ping within this is killed and replaced",
    )
    health_probe_timeout_s: float = Field(
        5.0,
        gt=0,
        le=120,
        description="a backend's health probe that has not answered within this counts as one failed probe",
    )
    health_down_after: int = Field(
        3, ge=1, le=100, description="consecutive failed probes that turn a backend down (one failed probe: degraded)"
    )
    health_overrides: dict[str, HealthPolicySetting] = Field(
        default_factory=dict, description="per driver (p4rt, xdp, netfpga ...): its own timeout_s / down_after"
    )

    @model_validator(mode="after")
    def _refuse_weak_secret(self) -> Settings:
        if self.secret_key is not None:
            check_secret(self.secret_key, "SECRET_KEY")
        return self


@lru_cache
def get_settings() -> Settings:
    return Settings()


def random_secret() -> str:
    return secrets.token_urlsafe(32)


def check_secret(secret: str, where: str) -> None:
    """Refuse a signing secret anyone could know or guess."""
    if hashlib.sha256(secret.encode()).hexdigest() in PUBLISHED_SECRET_DIGESTS:
        raise ValueError(
            f"{where} is a published default secret: anyone can forge tokens with it; "
            "unset it (a random one is generated) or set a random value"
        )
    hint = "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')"
    if len(secret) < MIN_SECRET_LENGTH:
        raise ValueError(f"{where} must be at least {MIN_SECRET_LENGTH} characters of random text {hint}")
    bits = estimated_bits(secret)
    if bits < MIN_SECRET_BITS:
        raise ValueError(
            f"{where} looks guessable (repeated or sequential characters: about {bits:.0f} bits of "
            f"entropy, at least {MIN_SECRET_BITS} needed); set random text {hint}"
        )


def estimated_bits(secret: str) -> float:
    """A conservative estimate of a secret's entropy: its length times the Shannon entropy of
    its characters, and of the steps between neighbours (so that a run such as "abcdef..."
    counts as little as "aaaaaa..."), whichever is smaller. Not a proof of randomness: it
    refuses the secrets people type, and passes what a generator produces."""

    def shannon(symbols: list[int]) -> float:
        counts = Counter(symbols)
        return -sum(c / len(symbols) * math.log2(c / len(symbols)) for c in counts.values()) * len(symbols)

    codes = [ord(c) for c in secret]
    steps = [b - a for a, b in pairwise(codes)]
    return max(0.0, min(shannon(codes), shannon(steps) if steps else 0.0))
