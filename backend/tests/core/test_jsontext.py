"""core/jsontext.py: orjson's speed without its limits changing what is stored or compared."""

from __future__ import annotations

import json
import random
from typing import Any

from sliceportal.core import jsontext


def _value(rng: random.Random, depth: int = 0) -> Any:
    """Entry-like values: ASCII names, integers (a few beyond 64 bits), nested dicts and lists."""
    r = rng.random()
    if depth > 2 or r < 0.4:
        return rng.choice(
            [rng.randint(-3, 300), rng.choice(["a", "ab", "b", "A.b", "x_y", ""]), True, None, 1 << 100, -(1 << 70)]
        )
    if r < 0.7:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {
        rng.choice(["a", "ab", "b", "match", "priority", "p"]): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))
    }


def test_canonical_sorts_as_json_sort_keys_does() -> None:
    # the p4rt driver's entry order (lowering.entry_sort_key) was json.dumps(e, sort_keys=True)'s;
    # plans stored before keep it, so the faster key must order every entry the same way
    rng = random.Random(20261129)
    values = [_value(rng) for _ in range(20_000)]
    assert sorted(values, key=jsontext.canonical) == sorted(values, key=lambda v: json.dumps(v, sort_keys=True))


def test_canonical_is_equal_exactly_for_equal_values() -> None:
    rng = random.Random(7)
    values = [_value(rng) for _ in range(5_000)]
    by_text: dict[bytes, Any] = {}
    for v in values:
        key = jsontext.canonical(v)
        assert by_text.setdefault(key, v) == v  # one text, one value
        assert key == jsontext.canonical(json.loads(json.dumps(v)))  # and a copy gets the same text
    assert jsontext.canonical({"b": 1, "a": [2, {"d": 3, "c": 4}]}) == b'{"a":[2,{"c":4,"d":3}],"b":1}'


def test_dumps_keeps_what_orjson_refuses() -> None:
    # a 128-bit match value and integer keys are written as the standard library writes them
    wide = {"match": {"dst": [(1 << 128) - 1, -1]}, 5: "x"}
    assert json.loads(jsontext.dumps(wide)) == {"match": {"dst": [(1 << 128) - 1, -1]}, "5": "x"}
    assert json.loads(jsontext.canonical(wide["match"])) == {"dst": [(1 << 128) - 1, -1]}
    plain = {"a": [1, "é", None, 2.5]}
    assert json.loads(jsontext.dumps(plain)) == plain
