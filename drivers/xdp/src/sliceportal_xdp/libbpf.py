"""A thin typed ctypes layer over ``libbpf.so.1``: objects, maps, XDP attach, test runs.

Only what the XDP driver uses is bound. Every call that fails raises ``BpfError`` with
the errno, so callers never see a bare negative return code.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import mmap
import operator
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

XDP_FLAGS_SKB_MODE = 1 << 1
XDP_FLAGS_DRV_MODE = 1 << 2

XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT = range(5)
VERDICTS = {
    XDP_ABORTED: "aborted",
    XDP_DROP: "drop",
    XDP_PASS: "pass",
    XDP_TX: "tx",
    XDP_REDIRECT: "redirect",
}


class BpfError(OSError):
    """A libbpf / bpf(2) call failed; ``errno`` holds the reason."""


class _BatchOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("elem_flags", ctypes.c_uint64), ("flags", ctypes.c_uint64)]


class _TestRunOpts(ctypes.Structure):
    # mirrors struct bpf_test_run_opts in /usr/include/bpf/bpf.h (libbpf 1.1)
    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("data_in", ctypes.c_void_p),
        ("data_out", ctypes.c_void_p),
        ("data_size_in", ctypes.c_uint32),
        ("data_size_out", ctypes.c_uint32),
        ("ctx_in", ctypes.c_void_p),
        ("ctx_out", ctypes.c_void_p),
        ("ctx_size_in", ctypes.c_uint32),
        ("ctx_size_out", ctypes.c_uint32),
        ("retval", ctypes.c_uint32),
        ("repeat", ctypes.c_int),
        ("duration", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("cpu", ctypes.c_uint32),
        ("batch_size", ctypes.c_uint32),
    ]


def _load() -> ctypes.CDLL:
    name = ctypes.util.find_library("bpf") or "libbpf.so.1"
    try:
        lib = ctypes.CDLL("libbpf.so.1", use_errno=True)
    except OSError:
        lib = ctypes.CDLL(name, use_errno=True)
    vp, i, u32, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_size_t
    sigs: dict[str, tuple[Any, list[Any]]] = {
        "bpf_object__open_file": (vp, [ctypes.c_char_p, vp]),
        "bpf_object__load": (i, [vp]),
        "bpf_object__close": (None, [vp]),
        "bpf_object__find_map_by_name": (vp, [vp, ctypes.c_char_p]),
        "bpf_object__find_program_by_name": (vp, [vp, ctypes.c_char_p]),
        "bpf_map__fd": (i, [vp]),
        "bpf_map__set_max_entries": (i, [vp, u32]),
        "bpf_map__max_entries": (u32, [vp]),
        "bpf_map__set_pin_path": (i, [vp, ctypes.c_char_p]),
        "bpf_map__name": (ctypes.c_char_p, [vp]),
        "bpf_map__type": (i, [vp]),
        "bpf_map__key_size": (u32, [vp]),
        "bpf_map__value_size": (u32, [vp]),
        "bpf_map__map_flags": (u32, [vp]),
        "bpf_object__next_map": (vp, [vp, vp]),
        "bpf_map_create": (i, [i, ctypes.c_char_p, u32, u32, u32, vp]),
        "bpf_obj_pin": (i, [i, ctypes.c_char_p]),
        "bpf_obj_get": (i, [ctypes.c_char_p]),
        "bpf_program__fd": (i, [vp]),
        "bpf_program__set_autoload": (i, [vp, ctypes.c_bool]),
        "bpf_program__attach": (vp, [vp]),
        "bpf_link__destroy": (i, [vp]),
        "bpf_map_update_elem": (i, [i, vp, vp, ctypes.c_uint64]),
        "bpf_map_lookup_elem": (i, [i, vp, vp]),
        "bpf_map_delete_elem": (i, [i, vp]),
        "bpf_map_get_next_key": (i, [i, vp, vp]),
        "bpf_map_update_batch": (i, [i, vp, vp, ctypes.POINTER(u32), vp]),
        "bpf_map_lookup_batch": (i, [i, vp, vp, vp, vp, ctypes.POINTER(u32), vp]),
        "bpf_map_delete_batch": (i, [i, vp, ctypes.POINTER(u32), vp]),
        "bpf_xdp_attach": (i, [i, i, u32, vp]),
        "bpf_xdp_detach": (i, [i, u32, vp]),
        "bpf_xdp_query_id": (i, [i, i, ctypes.POINTER(u32)]),
        "bpf_prog_test_run_opts": (i, [i, vp]),
        "libbpf_num_possible_cpus": (i, []),
        "bpf_obj_get_info_by_fd": (i, [i, vp, ctypes.POINTER(u32)]),
        "libbpf_get_error": (ctypes.c_long, [vp]),
    }
    for fn, (res, args) in sigs.items():
        f = getattr(lib, fn)
        f.restype, f.argtypes = res, args
    del sz
    return lib


_lib = _load()


def _check(rc: int, what: str) -> int:
    if rc < 0:
        err = -rc if rc != -1 else (ctypes.get_errno() or errno.EIO)
        raise BpfError(err, f"{what}: {os.strerror(err)}")
    return rc


def num_possible_cpus() -> int:
    return _check(_lib.libbpf_num_possible_cpus(), "libbpf_num_possible_cpus")


@dataclass(frozen=True, slots=True)
class TestRun:
    retval: int
    data: bytes
    duration_ns: int  # mean per repetition


class Map:
    """A loaded map: fixed key / value sizes, byte-level access."""

    def __init__(self, name: str, fd: int, key_size: int, value_size: int, max_entries: int, percpu: bool):
        self.name, self.fd = name, fd
        self.key_size, self.max_entries, self.percpu = key_size, max_entries, percpu
        # per-CPU maps exchange one 8-byte aligned slot per possible CPU
        self.slot = (value_size + 7) & ~7 if percpu else value_size
        self.value_size = self.slot * num_possible_cpus() if percpu else value_size

    def mmap(self) -> mmap.mmap:
        """The values of a BPF_F_MMAPABLE array, shared with the kernel."""
        size = -(-self.value_size * self.max_entries // mmap.PAGESIZE) * mmap.PAGESIZE
        return mmap.mmap(self.fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)

    def update(self, key: bytes, value: bytes) -> None:
        _check(_lib.bpf_map_update_elem(self.fd, key, value, 0), f"update {self.name}")

    def lookup(self, key: bytes) -> bytes | None:
        buf = ctypes.create_string_buffer(self.value_size)
        rc = _lib.bpf_map_lookup_elem(self.fd, key, buf)
        if rc < 0 and ctypes.get_errno() == errno.ENOENT:
            return None
        _check(rc, f"lookup {self.name}")
        return buf.raw

    def delete(self, key: bytes) -> None:
        rc = _lib.bpf_map_delete_elem(self.fd, key)
        if rc < 0 and ctypes.get_errno() == errno.ENOENT:
            return
        _check(rc, f"delete {self.name}")

    def keys(self) -> list[bytes]:
        out: list[bytes] = []
        nxt = ctypes.create_string_buffer(self.key_size)
        prev: bytes | None = None
        while True:
            rc = _lib.bpf_map_get_next_key(self.fd, prev, nxt)
            if rc < 0:
                if ctypes.get_errno() == errno.ENOENT:
                    return out
                _check(rc, f"next key {self.name}")
            prev = nxt.raw
            out.append(prev)

    def update_batch(self, keys: bytes, values: bytes) -> None:
        """Write len(keys) / key_size entries; falls back to single updates where the
        kernel has no batch operation for this map type."""
        n = len(keys) // self.key_size
        if n == 0:
            return
        if len(values) != n * self.value_size:
            raise ValueError(f"{self.name}: {n} keys but {len(values)} value bytes")
        count = ctypes.c_uint32(n)
        opts = _BatchOpts(ctypes.sizeof(_BatchOpts), 0, 0)
        rc = _lib.bpf_map_update_batch(self.fd, keys, values, ctypes.byref(count), ctypes.byref(opts))
        if rc >= 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP) or count.value:
            _check(rc, f"batch update {self.name} ({count.value}/{n} written)")
        ks, vs = self.key_size, self.value_size
        for i in range(n):
            self.update(keys[i * ks : (i + 1) * ks], values[i * vs : (i + 1) * vs])

    def delete_many(self, keys: list[bytes]) -> None:
        """Delete ``keys`` with one batch call (key by key where the kernel has no batch
        delete for this map type); keys already absent are not an error."""
        if not keys:
            return
        count = ctypes.c_uint32(len(keys))
        opts = _BatchOpts(ctypes.sizeof(_BatchOpts), 0, 0)
        rc = _lib.bpf_map_delete_batch(self.fd, b"".join(keys), ctypes.byref(count), ctypes.byref(opts))
        if rc >= 0:
            return
        # ENOENT stops the batch at an absent key; finish the rest one by one
        done = count.value
        if ctypes.get_errno() not in (errno.ENOENT, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            _check(rc, f"batch delete {self.name} ({done}/{len(keys)} deleted)")
        for k in keys[done:]:
            self.delete(k)

    def lookup_raw(self) -> tuple[memoryview, memoryview] | None:
        """Every key and every value as two packed buffers (kernel order, ``key_size`` /
        ``value_size`` bytes per entry) from one batch call; None where the kernel has no
        batch lookup for this map type. The buffers are capacity-sized and left
        uninitialised (numpy empty: a bytearray, or calloc from a warm heap, would zero all
        of them, 8 MB for a 64 k-entry bitmap map); only the part the kernel filled is
        returned."""
        n = self.max_entries
        kb, vb = np.empty(self.key_size * n, np.uint8), np.empty(self.value_size * n, np.uint8)
        keys, vals = (ctypes.c_char * kb.size).from_buffer(kb.data), (ctypes.c_char * vb.size).from_buffer(vb.data)
        out_batch = ctypes.create_string_buffer(max(self.key_size, 8))
        count = ctypes.c_uint32(n)
        opts = _BatchOpts(ctypes.sizeof(_BatchOpts), 0, 0)
        rc = _lib.bpf_map_lookup_batch(self.fd, None, out_batch, keys, vals, ctypes.byref(count), ctypes.byref(opts))
        if rc >= 0 or ctypes.get_errno() == errno.ENOENT:  # ENOENT: the batch reached the end
            got = count.value
            del keys, vals  # the ctypes views end here; the memoryviews below keep the buffers
            return kb.data[: got * self.key_size], vb.data[: got * self.value_size]
        if ctypes.get_errno() not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            _check(rc, f"batch lookup {self.name}")
        return None

    def lookup_all(self) -> list[tuple[bytes, bytes]]:
        """Every (key, value) pair, by batch where supported, else key by key."""
        raw = self.lookup_raw()
        if raw is not None:
            # split at C speed (iter_unpack + itemgetter), not a Python loop per entry
            first = operator.itemgetter(0)
            ksplit = struct.Struct(f"{self.key_size}s").iter_unpack(raw[0])
            vsplit = struct.Struct(f"{self.value_size}s").iter_unpack(raw[1])
            return list(zip(map(first, ksplit), map(first, vsplit), strict=True))
        pairs = []
        for k in self.keys():
            v = self.lookup(k)
            if v is not None:
                pairs.append((k, v))
        return pairs


class BpfObject:
    """An opened and loaded BPF object file; maps and programs by name."""

    def __init__(
        self,
        path: str,
        max_entries: dict[str, int] | None = None,
        skip_programs: tuple[str, ...] = (),
        pin_dir: str | None = None,
        before_load: Callable[[BpfObject], None] | None = None,
    ) -> None:
        """``pin_dir``: every named map is pinned there (bpffs), and a map already pinned
        there is reused instead of created, so a later process that loads the object with
        the same ``pin_dir`` takes over the same kernel maps (see ``pins``).
        ``before_load`` sees the opened, resized object (its ``map_specs``) before anything
        reaches the kernel: the place to refuse incompatible pins."""
        obj = _lib.bpf_object__open_file(path.encode(), None)
        if not obj or _lib.libbpf_get_error(obj):
            raise BpfError(ctypes.get_errno() or errno.ENOENT, f"cannot open BPF object {path}")
        self._obj: int | None = obj
        self._links: list[int] = []
        try:
            for name, n in (max_entries or {}).items():
                _check(_lib.bpf_map__set_max_entries(self._map_ptr(name), n), f"resize {name}")
            for prog in skip_programs:
                _check(_lib.bpf_program__set_autoload(self._prog_ptr(prog), False), f"skip {prog}")
            if before_load is not None:
                before_load(self)
            if pin_dir is not None:
                for name in self.map_names():
                    pin = os.path.join(pin_dir, name)
                    _check(_lib.bpf_map__set_pin_path(self._map_ptr(name), pin.encode()), f"pin path of {name}")
            _check(_lib.bpf_object__load(obj), f"load {path} (needs root / CAP_BPF; see dmesg)")
        except Exception:
            self.close()
            raise

    def map_names(self) -> list[str]:
        """The object's own maps (not libbpf's internal .rodata / .bss / .data maps)."""
        names, p = [], _lib.bpf_object__next_map(self._obj, None)
        while p:
            name = _lib.bpf_map__name(p).decode()
            if "." not in name:
                names.append(name)
            p = _lib.bpf_object__next_map(self._obj, p)
        return names

    def map_specs(self) -> list[tuple[str, int, int, int, int, int]]:
        """(name, type, key size, value size, max entries, flags) of every own map, the
        attributes a process that reuses pinned maps must agree on."""
        out = []
        for name in sorted(self.map_names()):
            p = self._map_ptr(name)
            out.append(
                (
                    name,
                    int(_lib.bpf_map__type(p)),
                    int(_lib.bpf_map__key_size(p)),
                    int(_lib.bpf_map__value_size(p)),
                    int(_lib.bpf_map__max_entries(p)),
                    int(_lib.bpf_map__map_flags(p)),
                )
            )
        return out

    def _map_ptr(self, name: str) -> int:
        p = _lib.bpf_object__find_map_by_name(self._obj, name.encode())
        if not p:
            raise KeyError(f"no map {name!r} in the BPF object")
        return int(p)

    def map(self, name: str, key_size: int, value_size: int, percpu: bool = False) -> Map:
        p = self._map_ptr(name)
        return Map(
            name,
            _check(_lib.bpf_map__fd(p), f"fd of {name}"),
            key_size,
            value_size,
            int(_lib.bpf_map__max_entries(p)),
            percpu,
        )

    def _prog_ptr(self, name: str) -> int:
        p = _lib.bpf_object__find_program_by_name(self._obj, name.encode())
        if not p:
            raise KeyError(f"no program {name!r} in the BPF object")
        return int(p)

    def program_fd(self, name: str) -> int:
        return _check(_lib.bpf_program__fd(self._prog_ptr(name)), f"fd of {name}")

    def attach(self, name: str) -> None:
        """Attach a tracing program where its section says (kept until ``close``)."""
        link = _lib.bpf_program__attach(self._prog_ptr(name))
        if not link or _lib.libbpf_get_error(link):
            raise BpfError(ctypes.get_errno() or errno.EINVAL, f"attach {name}")
        self._links.append(int(link))

    def close(self) -> None:
        for link in self._links:
            _lib.bpf_link__destroy(link)
        self._links = []
        if self._obj:
            _lib.bpf_object__close(self._obj)
            self._obj = None


BPF_F_TEST_XDP_LIVE_FRAMES = 1 << 1


def test_run(prog_fd: int, data: bytes, repeat: int = 1, live: bool = False) -> TestRun:
    """BPF_PROG_TEST_RUN: run the program on ``data`` (``repeat`` times). ``live`` carries
    out the verdicts (XDP_TX / redirects really happen; no output data)."""
    out = ctypes.create_string_buffer(len(data) + 512)
    opts = _TestRunOpts()
    opts.sz = ctypes.sizeof(_TestRunOpts)
    inbuf = ctypes.create_string_buffer(data, len(data))
    opts.data_in = ctypes.cast(inbuf, ctypes.c_void_p)
    opts.data_size_in = len(data)
    opts.data_out = ctypes.cast(out, ctypes.c_void_p)
    opts.data_size_out = len(out)
    opts.repeat = repeat
    if live:
        opts.flags = BPF_F_TEST_XDP_LIVE_FRAMES
        opts.data_out = None
        opts.data_size_out = 0
    _check(_lib.bpf_prog_test_run_opts(prog_fd, ctypes.byref(opts)), "BPF_PROG_TEST_RUN")
    return TestRun(opts.retval, b"" if live else out.raw[: opts.data_size_out], opts.duration)


def obj_id(fd: int) -> int:
    """The kernel's id of a loaded program or map (``xdp_query_id`` reports program ids)."""
    info = ctypes.create_string_buffer(256)
    n = ctypes.c_uint32(len(info))
    _check(_lib.bpf_obj_get_info_by_fd(fd, info, ctypes.byref(n)), "object info")
    return int.from_bytes(info.raw[4:8], "little")  # bpf_prog_info / bpf_map_info: type, id, ...


def xdp_attach(ifindex: int, prog_fd: int, flags: int = XDP_FLAGS_DRV_MODE) -> None:
    _check(_lib.bpf_xdp_attach(ifindex, prog_fd, flags, None), f"attach XDP to ifindex {ifindex}")


def xdp_detach(ifindex: int, flags: int = XDP_FLAGS_DRV_MODE) -> None:
    _check(_lib.bpf_xdp_detach(ifindex, flags, None), f"detach XDP from ifindex {ifindex}")


def xdp_query_id(ifindex: int, flags: int = XDP_FLAGS_DRV_MODE) -> int:
    pid = ctypes.c_uint32(0)
    _check(_lib.bpf_xdp_query_id(ifindex, flags, ctypes.byref(pid)), f"query XDP on ifindex {ifindex}")
    return pid.value


BPF_MAP_TYPE_ARRAY = 2


def array_map_create(name: str, value_size: int, max_entries: int = 1) -> int:
    """A new BPF array map (u32 keys) owned by the caller's fd (user-space state to pin)."""
    return _check(
        _lib.bpf_map_create(BPF_MAP_TYPE_ARRAY, name.encode(), 4, value_size, max_entries, None), f"create map {name}"
    )


def obj_pin(fd: int, path: str) -> None:
    _check(_lib.bpf_obj_pin(fd, path.encode()), f"pin {path}")


def obj_get(path: str) -> int:
    """An fd for the object pinned at ``path`` (BpfError ENOENT when nothing is pinned)."""
    return _check(_lib.bpf_obj_get(path.encode()), f"open pinned {path}")
