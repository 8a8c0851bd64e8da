"""Waiting for worker threads from the main thread without holding back a signal.

A process-directed signal (SIGTERM from a scheduler or ``timeout``, SIGINT from a terminal) may
be taken by any thread. Python runs the handler in the main thread, the next time that thread
executes bytecode; a main thread blocked in a lock wait with no timeout is not woken when the
kernel gave the signal to a worker thread. Waiting in short slices bounds that delay by POLL_S,
so the handlers that clean up and exit (``bundle.write.on_signals``) run at once.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, wait
from typing import Iterable

POLL_S = 0.2


def wait_all(futures: Iterable[Future], timeout: float) -> None:
    """Until every future is done or ``timeout`` seconds have passed."""
    pending = set(futures)
    end = time.monotonic() + timeout
    while pending:
        left = end - time.monotonic()
        if left <= 0:
            return
        _, pending = wait(pending, timeout=min(left, POLL_S))


def join(thread: threading.Thread, timeout: float) -> None:
    """Until ``thread`` has ended or ``timeout`` seconds have passed."""
    end = time.monotonic() + timeout
    while thread.is_alive():
        left = end - time.monotonic()
        if left <= 0:
            return
        thread.join(min(left, POLL_S))
