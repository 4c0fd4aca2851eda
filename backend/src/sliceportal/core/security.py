"""Password hashing (argon2), access tokens (JWT), refresh tokens and API keys."""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerifyMismatchError

_hasher = PasswordHasher()
ALGORITHM = "HS256"
API_KEY_PREFIX = "spk_"


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password: str, password_hash: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerifyMismatchError, InvalidHashError):
        return False


# A real hash to verify against when the user does not exist, so timing does not reveal it.
DUMMY_HASH = hash_password(secrets.token_urlsafe(16))


def create_access_token(user_id: int, role: str, session_id: str, secret: str, minutes: int) -> str:
    now = datetime.now(UTC)
    claims: dict[str, Any] = {
        "sub": str(user_id),
        "sid": session_id,
        "role": role,
        "iat": now,
        "exp": now + timedelta(minutes=minutes),
        "typ": "access",
    }
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def decode_access_token(token: str, secret: str) -> dict[str, Any]:
    """Claims of a valid access token; raises jwt.PyJWTError otherwise.

    The session id (``sid``) is required: the caller checks it against the database, which is
    what makes logout, password change and disabling a user end the token at once.
    """
    claims: dict[str, Any] = jwt.decode(
        token, secret, algorithms=[ALGORITHM], options={"require": ["exp", "sub", "sid"]}
    )
    if claims.get("typ") != "access" or not isinstance(claims.get("sid"), str):
        raise jwt.InvalidTokenError("not an access token")
    if not str(claims["sub"]).isdigit():
        raise jwt.InvalidTokenError("malformed subject")
    return claims


def new_session_id() -> str:
    return secrets.token_urlsafe(32)  # 43 characters


def sha256(text: str) -> str:
    # API keys and refresh tokens are 256-bit random secrets: a fast hash suffices (no
    # dictionary to attack), and keeps per-request verification cheap.
    return hashlib.sha256(text.encode()).hexdigest()


def new_refresh_token() -> str:
    return secrets.token_urlsafe(32)


def new_api_key() -> tuple[str, str]:
    """(prefix, full secret). The prefix is public and identifies the key."""
    prefix = secrets.token_hex(4)
    return prefix, f"{API_KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"


def api_key_prefix(secret: str) -> str | None:
    if not secret.startswith(API_KEY_PREFIX):
        return None
    parts = secret[len(API_KEY_PREFIX) :].split("_", 1)
    return parts[0] if len(parts) == 2 else None
