"""Directories and files only the portal's user may read (issue #27, docs/security.md "The host").

A directory of a fixed name in a place others can write (the system temp directory) can be
created first by another local user, or be a symlink to somewhere the portal (root) should
never write; a file opened with ``O_CREAT|O_TRUNC`` follows a symlink planted at its name.
So: directories live under the portal's own data directory, are created 0700 and checked
(a real directory, this user's, not a link) before use; files are created new
(``O_EXCL|O_NOFOLLOW``, 0600).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


class UnsafePathError(RuntimeError):
    """A path the portal would write through belongs to someone else or is a link."""


def private_dir(path: Path) -> Path:
    """``path`` as a directory only this user enters (0700): created so, or an existing one of
    this user tightened; one of another user, a symlink or a non-directory is refused."""
    path.parent.mkdir(parents=True, exist_ok=True)
    parent = os.stat(path.parent)
    if parent.st_uid not in (0, os.geteuid()) and parent.st_mode & stat.S_IWOTH and not parent.st_mode & stat.S_ISVTX:
        raise UnsafePathError(f"{path.parent} is writable by every user: the portal keeps no files there")
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        what = (
            "a symlink"
            if stat.S_ISLNK(st.st_mode)
            else ("not a directory" if not stat.S_ISDIR(st.st_mode) else f"owned by uid {st.st_uid}")
        )
        raise UnsafePathError(
            f"{path} is {what}, not a directory of uid {os.geteuid()}: someone else may have "
            "created it; inspect it, remove it and start again"
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700, follow_symlinks=False)  # one of ours from an older version (0755)
    return path


def write_private_file(path: Path, data: str) -> None:
    """``path`` written anew with ``data``, mode 0600: a leftover at the name (a file, or a
    symlink someone planted) is removed, never written through."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(data)
