"""The append-only event log: ``<root>/events/YYYY-MM-DD.jsonl``, one JSON object per line.

Every event is privacy-filtered before it is written, and holds no character a store cannot (a NUL: see
:mod:`indexer.base.storable`). A line is written with one ``write()`` on a file opened with ``O_APPEND`` while
holding an exclusive ``flock``, so lines from many concurrent hooks are never interleaved or torn, whatever their
length. The same lock lets ``memsearch maintain`` move an expired log away safely: an append that waited for it
finds the file gone from its path and writes to a fresh one instead. A write that fails part way (a full disk) is
cut back off the log, and an append after a line torn by a crash starts on a fresh line, so one lost event never
takes the next one with it.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

from indexer.base.paths import EVENTS_DIR
from indexer.base.private import private_dirs
from indexer.base.storable import storable
from indexer.privacy import cut_head, scrub

MAX_CONTENT_CHARS = 64_000


def now_local() -> str:
    """The local time with its UTC offset, to the second: ``2026-11-22T09:15:02+01:00``."""
    t = time.localtime()
    offset = t.tm_gmtoff or 0
    sign = "-" if offset < 0 else "+"
    offset = abs(offset)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', t)}{sign}{offset // 3600:02d}:{offset % 3600 // 60:02d}"


class Event:
    """One event to record. A plain class (and stdlib json below) rather than a dataclass and orjson: this
    module is on every hook's start-up path, where those imports cost more than the work."""

    __slots__ = ("type", "content", "session_id", "project", "cwd", "tool_name", "metadata", "id", "ts")

    def __init__(self, type: str, content: str, session_id: str | None = None, project: str | None = None,
                 cwd: str | None = None, tool_name: str | None = None, metadata: dict[str, Any] | None = None,
                 id: str | None = None, ts: str | None = None) -> None:
        self.type, self.content, self.session_id, self.project, self.cwd = type, content, session_id, project, cwd
        self.tool_name = tool_name
        self.metadata = {} if metadata is None else metadata
        self.id = os.urandom(16).hex() if id is None else id
        self.ts = now_local() if ts is None else ts

    def __repr__(self) -> str:
        return f"Event(type={self.type!r}, id={self.id!r}, ts={self.ts!r}, session_id={self.session_id!r})"


def _scrub_value(value: Any) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, float) and value - value != 0:  # NaN or infinity: not JSON, stored as null
        return None
    if isinstance(value, dict):
        return {storable(str(k)): _scrub_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_value(v) for v in value]
    return value


def event_path(home: Path, ts: str | None = None) -> Path:
    day = (ts or time.strftime("%Y-%m-%d"))[:10]
    return home / EVENTS_DIR / f"{day}.jsonl"


def encode(event: Event) -> bytes:
    """The event as one privacy-filtered JSON line."""
    content = scrub(event.content)  # the whole text first: a span or key block the cap cuts is still found
    if len(content) > MAX_CONTENT_CHARS:
        content = scrub(cut_head(content, MAX_CONTENT_CHARS) + "\n[truncated]")
    record = {
        "id": event.id,
        "ts": event.ts,
        "session_id": event.session_id,
        "project": event.project,
        "cwd": event.cwd,
        "type": event.type,
        "tool_name": event.tool_name,
        "content": content,
        "metadata": event.metadata,
    }
    # metadata is filtered here, once; the other fields come from hook payloads too, whose types are not
    # guaranteed (a NaN or an infinite number is stored as null), and whose text may hold a NUL
    kept = {k: storable(v) if isinstance(v, str) else _scrub_value(v) for k, v in record.items()
            if v not in (None, {}, "")}
    # a lone surrogate left in a nested value (possible in a JSON \\u escape) cannot be UTF-8: "?", not a lost event
    return json.dumps(kept, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace") + b"\n"


def append(home: Path, events: list[Event] | Event) -> Path:
    """Append events to today's log (of the first event's date); returns the log path."""
    batch = [events] if isinstance(events, Event) else events
    path = event_path(home, batch[0].ts if batch else None)
    private_dirs(path.parent)
    data = b"".join(encode(e) for e in batch)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if not _still_linked(fd, path):
                    continue  # maintenance archived the log while we waited for its lock: append to a new one
                size = os.fstat(fd).st_size
                view = memoryview(_on_fresh_line(fd, data))
                try:
                    while view:
                        written = os.write(fd, view)
                        view = view[written:]
                except OSError:
                    _truncate(fd, size)
                    raise
                return path
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _truncate(fd: int, size: int) -> None:
    """Take back the part of a line a failed write left (a full disk): the log keeps whole lines only."""
    try:
        os.ftruncate(fd, size)
    except OSError:
        pass  # then the next append starts on a fresh line, and the indexer reports the torn one


def _on_fresh_line(fd: int, data: bytes) -> bytes:
    """``data`` preceded by a newline when the log does not end with one: a line torn by a crash or a full disk
    mid-write would otherwise swallow the next event into one unreadable line. Called under the log's lock."""
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        return b"\n" + data
    return data


def _still_linked(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (retention moves expired logs away under their lock)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)
