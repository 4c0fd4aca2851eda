"""The data plane's objects pinned in bpffs, so the data plane outlives its loader.

Under ``/sys/fs/bpf/sliceportal/<name>`` lie every map of the object (libbpf pins them at
load and reuses them when they are there, see ``BpfObject(pin_dir=...)``) and ``abi``: a
one-entry array holding the digest of what a loader must agree on to take the maps over
(their names, types, key / value sizes, sizes, flags, and the layout module's structs and
constants). The program itself is not pinned: its netlink XDP attachment holds it, and
survives the loader; a new loader loads the same program against the pinned maps and
replaces the attachment atomically (``bpf_xdp_attach`` without UPDATE_IF_NOEXIST), so no
packet sees the interface without a program.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import struct
from pathlib import Path

from sliceportal.drivers.contract import DriverError

from . import layout
from .libbpf import BpfError, Map, array_map_create, obj_get, obj_pin

BPFFS = "/sys/fs/bpf"
ROOT = f"{BPFFS}/sliceportal"
ABI_PIN = "abi"
# bump when the meaning of a map changes without its shape changing
ABI_REVISION = 1
_BPF_FS_MAGIC = 0xCAFE4A11


class PinnedAbiError(DriverError):
    """The objects pinned under a directory were made by an incompatible build."""


def pin_dir(name: str) -> str:
    return f"{ROOT}/{name}"


def _is_bpffs(path: str) -> bool:
    try:
        with open("/proc/self/mounts") as f:
            return any(line.split()[1] == path and line.split()[2] == "bpf" for line in f)
    except OSError:
        return False


def ensure_bpffs() -> None:
    """Mount bpffs on /sys/fs/bpf when it is not (Debian does not by default)."""
    if _is_bpffs(BPFFS):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"bpf", BPFFS.encode(), b"bpf", 0, None) != 0:
        err = ctypes.get_errno()
        raise DriverError(
            f"bpffs is not mounted on {BPFFS} and mounting it failed: {os.strerror(err)}",
            hint=f"mount it as root: mount -t bpf bpf {BPFFS}",
        )


def abi_digest(map_specs: list[tuple[str, int, int, int, int, int]]) -> bytes:
    facts = {
        "revision": ABI_REVISION,
        "maps": map_specs,
        "layout": {
            k: (v.format if isinstance(v, struct.Struct) else v)
            for k, v in sorted(vars(layout).items())
            if k.isupper() and isinstance(v, struct.Struct | int)
        },
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).digest()


def read_abi(directory: str) -> bytes | None:
    """The digest pinned in ``directory``; None when there is none."""
    try:
        fd = obj_get(os.path.join(directory, ABI_PIN))
    except BpfError as e:
        if e.errno == errno.ENOENT:
            return None
        raise
    try:
        raw = Map(ABI_PIN, fd, 4, 32, 1, False).lookup(b"\0\0\0\0")
    finally:
        os.close(fd)
    return raw


class PinDir:
    """One data plane's pin directory: check before load, record after."""

    def __init__(self, directory: str) -> None:
        self.path = directory
        self.digest: bytes | None = None

    def check(self, map_specs: list[tuple[str, int, int, int, int, int]]) -> bool:
        """True when the directory holds a compatible data plane to take over, False when
        it is empty (a first load); raises PinnedAbiError otherwise. Nothing is changed."""
        ensure_bpffs()
        os.makedirs(self.path, exist_ok=True)
        self.digest = abi_digest(map_specs)
        held = read_abi(self.path)
        present = sorted(os.listdir(self.path))
        if held is None and not present:
            return False
        if held == self.digest:
            return True
        what = "no ABI record" if held is None else f"ABI {held.hex()[:12]}"
        raise PinnedAbiError(
            f"{self.path} holds a data plane of another build ({what}; this build is {self.digest.hex()[:12]})",
            hint="tear it down (python -m sliceportal_xdp.agent --teardown ...) or start the agent "
            "with --replace; the portal re-pushes the rule set afterwards",
        )

    def record(self) -> None:
        """Pin the ABI digest (once: a taken-over directory already has it)."""
        assert self.digest is not None, "check() first"
        if read_abi(self.path) == self.digest:
            return
        fd = array_map_create("sp_abi", 32)
        try:
            Map(ABI_PIN, fd, 4, 32, 1, False).update(b"\0\0\0\0", self.digest)
            obj_pin(fd, os.path.join(self.path, ABI_PIN))
        finally:
            os.close(fd)


def remove(directory: str) -> list[str]:
    """Unpin everything under ``directory`` and remove it; returns what was unpinned. The
    kernel frees a map when its last holder (pin, fd, attached program) is gone."""
    p = Path(directory)
    if not p.is_dir():
        return []
    gone = []
    for entry in sorted(p.iterdir()):
        entry.unlink()
        gone.append(entry.name)
    p.rmdir()
    return gone
