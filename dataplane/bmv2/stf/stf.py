"""p4c's STF files ("simple test framework", p4c/backends/bmv2/bmv2stf.py): table entries,
packets in, packets expected out. Only what the v1model corpus uses is parsed; a command
the runner cannot give the target is kept as ``unsupported`` so the program is reported as
refused rather than silently run with part of its setup missing."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class Add:
    table: str
    priority: int | None  # BMv2's: a larger number loses
    keys: list[tuple[str, str]]  # (field, value text as written)
    action: str
    params: list[tuple[str, str]]


@dataclass
class SetDefault:
    table: str
    action: str
    params: list[tuple[str, str]]


@dataclass
class Expect:
    port: int
    pattern: str  # upper-case hex nibbles, '*' for any nibble
    exact_length: bool  # the pattern ended with '$': no bytes beyond it


@dataclass
class Stf:
    entries: list[Add | SetDefault] = field(default_factory=list)
    packets: list[tuple[int, bytes]] = field(default_factory=list)
    expects: list[Expect] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # commands the runner cannot apply


_ACTION = re.compile(r"^(?P<name>[^()\s]+)\((?P<args>.*)\)$")


def _args(text: str) -> list[tuple[str, str]]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if part:
            name, _, value = part.partition(":")
            out.append((name.strip(), value.strip()))
    return out


def _action(text: str, line: str) -> tuple[str, list[tuple[str, str]]]:
    m = _ACTION.match(text.strip())
    if m is None:
        raise ValueError(f"STF: bad action in {line!r}")
    return m["name"], _args(m["args"])


def parse(text: str) -> Stf:
    stf = Stf()
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        cmd, _, rest = line.partition(" ")
        rest = rest.strip()
        if cmd == "packet":
            port, _, data = rest.partition(" ")
            stf.packets.append((int(port, 0), bytes.fromhex("".join(data.split()))))
        elif cmd == "expect":
            port, _, data = rest.partition(" ")
            if not port.isdigit():
                continue  # an expectation on a counter: bmv2stf ignores it
            pattern = "".join(data.split()).upper()
            exact = pattern.endswith("$")
            stf.expects.append(Expect(int(port), pattern.rstrip("$"), exact))
        elif cmd == "add":
            # add <table> [<priority>] <key>:<value>... <action>(<param>:<value>, ...)
            head, paren, tail = rest.partition("(")
            words = head.split()
            action, params = _action(words[-1] + paren + tail, line)
            table, words = words[0], words[1:-1]
            priority = None
            if words and words[0].isdigit():
                priority, words = int(words[0]), words[1:]
            keys = [(w.rpartition(":")[0], w.rpartition(":")[2]) for w in words]
            stf.entries.append(Add(table, priority, keys, action, params))
        elif cmd == "setdefault":
            table, _, act = rest.partition(" ")
            action, params = _action(act, line)
            stf.entries.append(SetDefault(table, action, params))
        elif cmd == "wait":
            continue  # the runner awaits every command anyway
        else:
            stf.unsupported.append(cmd)
    return stf


def matches(expect: Expect, data: bytes) -> bool:
    """bmv2stf's comparePacket: the pattern is a prefix of the packet (the whole packet with
    '$'), '*' matching any nibble."""
    got = data.hex().upper()
    if len(got) < len(expect.pattern) or (expect.exact_length and len(got) != len(expect.pattern)):
        return False
    return all(e == "*" or e == g for e, g in zip(expect.pattern, got, strict=False))
