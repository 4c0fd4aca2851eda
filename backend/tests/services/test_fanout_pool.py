"""Lanes (services/fanout_pool.py): work in processes of their own, a key always in the same
lane, every event delivered before the call returns, and a lane that dies named as such and
started anew. Real processes (forkserver), no database."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sliceportal.services.fanout_pool import FanoutPool, LaneDied, Lanes


@pytest.fixture
def pool() -> Iterator[FanoutPool]:
    p = FanoutPool(2)
    yield p
    p.shutdown()


def _pids_and_events(items: list[int], emit: Callable[[Any], None]) -> list[tuple[int, int]]:
    for i in items:
        for step in range(50):  # many small events: they must all be read before run returns
            emit((i, step))
    return [(i, os.getpid()) for i in items]


def _die_on(bad: int, items: list[int], emit: Callable[[Any], None]) -> list[int]:
    emit(("before", items))
    if bad in items:
        os._exit(3)
    return items


def _split(pool: FanoutPool, keys: list[int]) -> list[tuple[int, tuple[Any, ...]]]:
    by_lane: dict[int, list[int]] = {}
    for k in keys:
        by_lane.setdefault(pool.lane_of(k), []).append(k)
    return [(lane, (items,)) for lane, items in by_lane.items()]


def test_work_runs_in_its_lane_and_every_event_arrives_first(pool: FanoutPool) -> None:
    events: list[tuple[int, int]] = []
    keys = list(range(10))
    first = pool.run(_pids_and_events, _split(pool, keys), events.append)
    assert len(events) == 10 * 50 and sorted(events) == [(i, s) for i in keys for s in range(50)]
    for i in keys:  # in order, per item
        assert [s for k, s in events if k == i] == list(range(50))
    pid_of = {i: pid for chunk in first for i, pid in chunk}
    assert set(pid_of) == set(keys) and os.getpid() not in pid_of.values()
    assert len({pid_of[0], pid_of[1]}) == 2  # two lanes
    assert pid_of[0] == pid_of[2] == pid_of[4]
    again = pool.run(_pids_and_events, _split(pool, keys), None)
    assert {i: pid for chunk in again for i, pid in chunk} == pid_of  # the same processes, kept
    assert sorted(pool.pids()) == sorted(set(pid_of.values()))


def test_a_lane_that_dies_is_named_and_started_anew(pool: FanoutPool) -> None:
    before = pool.run(_pids_and_events, _split(pool, [0, 1]), None)
    with pytest.raises(LaneDied, match="lane 1"):
        pool.run(_die_on, [(1, (1, [1])), (0, (1, [0]))], None)
    # the dead lane starts again on next use; the other one is the same process
    after = pool.run(_pids_and_events, _split(pool, [0, 1]), None)
    assert after[0] == before[0] and after[1] != before[1]


def _readers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "fanout-events"}


def test_shutdown_ends_the_lanes_and_their_reader_and_the_pool_starts_again(pool: FanoutPool) -> None:
    before = _readers()
    first = pool.run(_pids_and_events, _split(pool, [0, 1]), None)
    (reader,) = _readers() - before  # this pool's
    pool.shutdown()
    assert pool.pids() == []
    reader.join(10)
    assert not reader.is_alive()
    events: list[Any] = []
    again = pool.run(_pids_and_events, _split(pool, [0, 1]), events.append)
    assert len(events) == 100 and {pid for c in again for _, pid in c}.isdisjoint({pid for c in first for _, pid in c})


def test_lanes_are_used_only_from_their_threshold() -> None:
    assert not Lanes().used_for(1000)  # one process: the caller's threads
    assert not Lanes(2, 256).used_for(255) and Lanes(2, 256).used_for(256)
    assert Lanes(0, 1).count == (os.cpu_count() or 1)
