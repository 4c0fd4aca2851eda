"""SECRET_KEY entropy (issue #27): a long but guessable secret is refused, generated ones pass."""

from __future__ import annotations

import secrets
import string

import pytest
from pydantic import ValidationError

from sliceportal.core.config import Settings, check_secret, random_secret


@pytest.mark.parametrize(
    "weak",
    [
        "a" * 36,
        "abcd" * 9,
        string.ascii_lowercase + string.digits,  # 36 different characters, one step
        "0123456789" * 4,
    ],
)
def test_a_long_guessable_secret_is_refused_with_the_reason(weak: str) -> None:
    with pytest.raises(ValidationError, match=r"SECRET_KEY looks guessable .* set random text"):
        Settings(secret_key=weak)


def test_generated_secrets_pass() -> None:
    Settings(secret_key=random_secret())
    for _ in range(1000):  # check_secret: what Settings runs on SECRET_KEY, without reading the environment
        check_secret(random_secret(), "SECRET_KEY")
        check_secret(secrets.token_hex(16), "SECRET_KEY")  # 128 random bits in 32 characters
        check_secret(secrets.token_urlsafe(48), "SECRET_KEY")  # as the per-install secret file
