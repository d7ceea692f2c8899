"""Events that could not be recorded (a full disk, a read-only memory root, a payload too large to read), counted
so that the user hears of them: the failing hook says so at once, the next hook that records an event says how
many were lost and when, and ``memsearch status`` and ``doctor`` keep saying it.

The counter must be writable exactly when the disk is full, so it lives in a small file of fixed size,
``<root>/.memsearch/lost-events``, reserved while there is room (the first time an event is recorded) and then
only overwritten in place: rewriting bytes a file already holds needs no new blocks on the file systems memsearch
runs on (ext4, xfs, tmpfs, APFS). On a read-only file system nothing can be written; the failing hook's message
is then the only trace. Standard library only: this runs in every hook.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

from indexer.base.paths import LOST_EVENTS

SIZE = 512


def _path(state_dir: Path) -> Path:
    return state_dir / LOST_EVENTS


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def _read(fd: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(fd, SIZE, 0).decode("utf-8", "replace").strip() or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _write(fd: int, record: dict[str, Any]) -> None:
    data = json.dumps(record, separators=(",", ":")).encode()[: SIZE - 1]
    os.pwrite(fd, data.ljust(SIZE - 1) + b"\n", 0)


def reserve(state_dir: Path) -> None:
    """Give the counter file its full size if it is missing or short (call when writing works).

    The state folder is made if missing (only it: the memory root exists, an event was just written there), since
    the first hook of a new root runs before any command made it. A file left short (made when the disk was
    already full) is written again whole, keeping what it counts."""
    path = _path(state_dir)
    try:
        if os.stat(path).st_size >= SIZE:
            return
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        os.mkdir(state_dir, 0o700)
    except OSError:
        pass  # there already, or it cannot be made: the open below says which
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_size < SIZE:
            _write(fd, _read(fd) or {"count": 0})
    except OSError:
        return
    finally:
        os.close(fd)


def record(state_dir: Path, reason: str, count: int = 1, *, told: bool = False) -> bool:
    """Count ``count`` lost events with their reason and time; False when even the counter cannot be written.
    ``told``: the failing hook tells the user of them itself, so they count as announced and the next hook's
    :func:`unannounced` does not tell of them a second time."""
    try:
        fd = os.open(_path(state_dir), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        current = _read(fd)
        now = _now()
        total = int(current.get("count") or 0) + count
        _write(fd, {"count": total, "first": current.get("first") or now, "last": now, "reason": reason[:200],
                    "announced": int(current.get("announced") or 0) + (count if told else 0)})
        return True
    except (OSError, ValueError, TypeError):
        return False
    finally:
        os.close(fd)


def unannounced(state_dir: Path) -> dict[str, Any] | None:
    """Lost events no hook has told the user of yet (then marked as told), or None. Never raises."""
    path = _path(state_dir)
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        current = _read(fd)
        count, told = int(current.get("count") or 0), int(current.get("announced") or 0)
        if count <= told:
            return None
        _write(fd, {**current, "announced": count})
        return {**current, "new": count - told}
    except (OSError, ValueError, TypeError):
        return None
    finally:
        os.close(fd)


def summary(state_dir: Path) -> dict[str, Any] | None:
    """What was lost so far, for ``status`` and ``doctor``: count, first, last, reason; None if nothing."""
    try:
        with open(_path(state_dir), "rb") as f:
            data = json.loads(f.read(SIZE).decode("utf-8", "replace").strip() or "{}")
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not int(data.get("count") or 0):
        return None
    return {k: data.get(k) for k in ("count", "first", "last", "reason")}


def describe(lost: dict[str, Any], count: int | None = None) -> str:
    """One line for the user.

    >>> describe({"count": 71, "first": "2026-11-20T10:02:11", "last": "2026-11-20T10:31:40",
    ...           "reason": "No space left on device"})
    '71 events could not be recorded between 2026-11-20T10:02:11 and 2026-11-20T10:31:40 (No space left on device); they are lost'
    """
    n = lost["count"] if count is None else count
    when = f"at {lost['last']}" if lost.get("first") == lost.get("last") else \
        f"between {lost.get('first')} and {lost.get('last')}"
    return f"{n} event{'s' if n != 1 else ''} could not be recorded {when} ({lost.get('reason')}); they are lost"
