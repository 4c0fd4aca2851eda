"""The supervised loops: a dead thread is restarted once, a starting or stopping one never."""

from __future__ import annotations

import threading

import pytest

from sliceportal.core.loops import LoopRegistry, SupervisedLoop


def test_a_check_while_loops_start_and_stop_never_runs_a_step_twice_at_once() -> None:
    registry = LoopRegistry()
    running, most, lock = 0, 0, threading.Lock()

    def step() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        with lock:
            running -= 1

    done = threading.Event()

    def checker() -> None:  # the controller's supervision, as fast as it can go
        while not done.is_set():
            registry.check()

    t = threading.Thread(target=checker, daemon=True)
    t.start()
    loops = []
    try:
        for i in range(100):
            loop = SupervisedLoop(f"l{i}", 0.001, step, registry)
            loops.append(loop)
            loop.start()
            loop.stop(timeout_s=5)
            loop.start()  # restarted by its owner, not by the registry
            loop.stop(timeout_s=5)
    finally:
        done.set()
        t.join(timeout=10)
    assert sum(lp.status.restarts for lp in loops) == 0
    assert not any(lp.running for lp in loops)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_loop_whose_thread_died_is_restarted_once() -> None:
    registry = LoopRegistry()
    calls = threading.Semaphore(0)
    first = threading.Event()

    def step() -> None:
        calls.release()
        if not first.is_set():
            first.set()
            raise SystemExit  # not an Exception: ends the thread as a crash would

    loop = SupervisedLoop("dies", 0.01, step, registry)
    loop.start()
    assert first.wait(10)
    assert loop._thread is not None
    loop._thread.join(timeout=10)
    registry.check()
    registry.check()
    assert loop.status.restarts == 1
    assert calls.acquire(timeout=10) and calls.acquire(timeout=10)  # the first call and the restarted one's
    loop.stop()
    assert not loop.running
