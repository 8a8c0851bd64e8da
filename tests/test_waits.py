"""A signal the kernel gives a worker thread still runs its handler while the main thread waits.

SIGTERM or SIGINT sent to the process may land in any thread; Python runs the handler in the main
thread only when that thread next runs bytecode. These tests aim the signal at the worker itself
(``pthread_kill``), the case that left `snapshot --out` waiting out a hung nvidia-smi after SIGTERM.
"""

from __future__ import annotations

import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from gpudoctor import waits

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX threads and signals")


class _Interrupted(Exception):
    pass


@pytest.fixture
def handler():
    def raise_it(signum, frame):
        raise _Interrupted(signum)

    previous = signal.signal(signal.SIGUSR1, raise_it)
    yield
    signal.signal(signal.SIGUSR1, previous)


def _worker_blocks_then_is_signalled(release: threading.Event, ident: list, rounds: list = None):
    ident.append(threading.get_ident())
    end = time.monotonic() + 10
    while not release.wait(0.05) and time.monotonic() < end:  # a signal may cut one wait short, not the loop
        if rounds is not None:
            rounds.append(1)


def _signal_worker_soon(ident: list):
    def send():
        while not ident:
            time.sleep(0.01)
        time.sleep(0.3)  # the main thread is in its wait by now
        signal.pthread_kill(ident[0], signal.SIGUSR1)

    threading.Thread(target=send, daemon=True).start()


def test_waiting_for_futures_lets_a_signal_taken_by_a_worker_through(handler):
    release, ident = threading.Event(), []
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        fut = pool.submit(_worker_blocks_then_is_signalled, release, ident)
        _signal_worker_soon(ident)
        start = time.monotonic()
        with pytest.raises(_Interrupted):
            waits.wait_all([fut], 8.0)
        assert time.monotonic() - start < 1.5  # the signal was sent 0.3 s in; the wait wakes every POLL_S
        assert not fut.done()
    finally:
        release.set()
        pool.shutdown(wait=True)


def test_joining_a_thread_lets_a_signal_taken_by_it_through(handler):
    release, ident, rounds = threading.Event(), [], []
    worker = threading.Thread(target=_worker_blocks_then_is_signalled, args=(release, ident, rounds), daemon=True)
    worker.start()
    _signal_worker_soon(ident)
    start = time.monotonic()
    try:
        with pytest.raises(_Interrupted):
            waits.join(worker, 8.0)
        assert time.monotonic() - start < 1.5  # the signal was sent 0.3 s in; the wait wakes every POLL_S
        seen = len(rounds)  # still running (Python 3.11's Thread.is_alive says otherwise after an interrupted join)
        time.sleep(0.3)
        assert len(rounds) > seen
    finally:
        release.set()
        worker.join(5)


def test_the_waits_end_at_their_timeout_or_when_the_work_is_done():
    release = threading.Event()
    pool = ThreadPoolExecutor(max_workers=2)
    try:
        slow = pool.submit(release.wait, 10)
        quick = pool.submit(lambda: 7)
        start = time.monotonic()
        waits.wait_all([slow, quick], 0.5)
        assert 0.45 <= time.monotonic() - start < 2.0 and quick.result() == 7 and not slow.done()
        release.set()
        start = time.monotonic()
        waits.wait_all([slow, quick], 8.0)
        assert slow.done() and time.monotonic() - start < 1.0
        waits.wait_all([], 8.0)
    finally:
        release.set()
        pool.shutdown(wait=True)
    done = threading.Thread(target=lambda: None)
    done.start()
    start = time.monotonic()
    waits.join(done, 8.0)
    assert not done.is_alive() and time.monotonic() - start < 1.0
    sleeper = threading.Thread(target=time.sleep, args=(5,), daemon=True)
    sleeper.start()
    start = time.monotonic()
    waits.join(sleeper, 0.3)
    assert 0.25 <= time.monotonic() - start < 1.5 and sleeper.is_alive()
