"""A writer lock on a file, with a timeout: ``fcntl.flock`` and nothing else.

The hooks take this lock on every captured event, so it must cost nothing to import; the ``filelock`` package
pulls in asyncio, logging and inspect (about 25 ms of start-up measured here), which the prompt hook cannot
afford. The lock is released by the kernel if the holder dies, so a killed indexer never leaves it stuck.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class LockTimeout(Exception):
    """Another process held the lock for longer than the timeout."""


@contextmanager
def file_lock(path: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created 0600 if missing); wait up to ``timeout`` seconds (0: try once).

    >>> with file_lock(Path("/tmp/memsearch-doctest.lock"), timeout=1):
    ...     pass
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(str(path)) from None
                time.sleep(0.01)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
