"""The one settings object: every knob comes from the environment (or .env)."""

from __future__ import annotations

import secrets
from enum import StrEnum
from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parents[4]
_DEV_SECRET = "dev-only-secret-change-me-not-for-production"


class Environment(StrEnum):
    LOCAL = "local"
    PRODUCTION = "production"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    environment: Environment = Environment.LOCAL
    # Unset: the portal starts its own PostgreSQL cluster under data_dir (embedded default).
    database_url: str | None = None
    data_dir: Path = REPO_ROOT / "var"
    secret_key: str = _DEV_SECRET
    access_token_minutes: int = 15
    refresh_token_days: int = 7
    login_max_failures: int = Field(5, description="failed logins per user+address before lock-out")
    login_window_seconds: int = 300
    host: str = "127.0.0.1"
    port: int = 8000
    cors_origins: list[str] = []
    reconcile_interval_s: float = Field(15.0, ge=0, description="0 disables the reconcile loop")
    testbed: bool = Field(False, description="start the emulated testbed with live traffic (run command)")
    testbed_rate_pps: float = Field(2000.0, gt=0, description="packets/s the testbed's subscribers send")
    testbed_prefix: str = Field("sp-run-", pattern=r"^[a-z0-9-]{1,8}$", description="namespace name prefix")

    @model_validator(mode="after")
    def _refuse_default_secret(self) -> Settings:
        if self.environment is Environment.PRODUCTION and self.secret_key == _DEV_SECRET:
            raise ValueError("SECRET_KEY must be set outside local development")
        return self


@lru_cache
def get_settings() -> Settings:
    return Settings()


def random_secret() -> str:
    return secrets.token_urlsafe(32)
