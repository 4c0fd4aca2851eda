"""The per-install token-signing secret: random, created once, readable by the portal only.

Several workers may start at once; the file is written to a temporary name and linked into
place (link fails if the name exists), so exactly one secret wins and nobody reads half a file.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from sliceportal.core.config import Settings, check_secret

SECRET_FILE = "secret_key"


class SecretFileError(RuntimeError):
    """The secret file exists but cannot be trusted (permissions, content)."""


def load_or_create(path: Path) -> str:
    """The secret in ``path``; a new random one (mode 0600) when the file does not exist."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(48) + "\n")
                f.flush()
                os.fsync(f.fileno())
            with contextlib.suppress(FileExistsError):  # another worker won the race: use its secret
                os.link(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise SecretFileError(f"{path} is readable by others (mode {mode:o}); run: chmod 600 {path}")
    secret = path.read_text().strip()
    try:
        check_secret(secret, str(path))
    except ValueError as e:
        raise SecretFileError(str(e)) from e
    return secret


def signing_secret(settings: Settings) -> str:
    """SECRET_KEY when set, else the install's own secret under the data directory."""
    return settings.secret_key or load_or_create(Path(settings.data_dir) / SECRET_FILE)
