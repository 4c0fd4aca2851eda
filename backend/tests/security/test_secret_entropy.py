"""SECRET_KEY entropy (issue #27): a long but guessable secret is refused, generated ones pass."""

from __future__ import annotations

import secrets
import string

import pytest
from pydantic import ValidationError

from sliceportal.core.config import Settings, random_secret


@pytest.mark.parametrize("weak", [
    "a" * 36,
    "abcd" * 9,
    string.ascii_lowercase + string.digits,  # 36 different characters, one step
    "0123456789" * 4,
])
def test_a_long_guessable_secret_is_refused_with_the_reason(weak: str) -> None:
    with pytest.raises(ValidationError, match=r"SECRET_KEY looks guessable .* set random text"):
        Settings(secret_key=weak)


def test_generated_secrets_pass() -> None:
    for _ in range(500):
        Settings(secret_key=random_secret())
        Settings(secret_key=secrets.token_hex(16))  # 128 random bits in 32 characters
        Settings(secret_key=secrets.token_urlsafe(48))
