"""The append-only event log: ``<root>/events/YYYY-MM-DD.jsonl``, one JSON object per line.

Every event is privacy-filtered before it is written. A line is written with one ``write()`` on a file opened
with ``O_APPEND`` while holding an exclusive ``flock``, so lines from many concurrent hooks are never interleaved
or torn, whatever their length. The same lock lets ``memsearch maintain`` move an expired log away safely: an
append that waited for it finds the file gone from its path and writes to a fresh one instead.
"""

from __future__ import annotations

import fcntl
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from .privacy import scrub

EVENT_TYPES = ("prompt", "response", "tool", "session")
MAX_CONTENT_CHARS = 64_000


@dataclass(frozen=True)
class Event:
    type: str
    content: str
    session_id: str | None = None
    project: str | None = None
    cwd: str | None = None
    tool_name: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    ts: str = field(default_factory=lambda: datetime.now().astimezone().isoformat(timespec="seconds"))


def _scrub_value(value: Any) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {str(k): _scrub_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_value(v) for v in value]
    return value


def event_path(home: Path, ts: str | None = None) -> Path:
    day = (ts or time.strftime("%Y-%m-%d"))[:10]
    return home / "events" / f"{day}.jsonl"


def encode(event: Event) -> bytes:
    """The event as one privacy-filtered JSON line."""
    content = event.content
    if len(content) > MAX_CONTENT_CHARS:
        content = content[:MAX_CONTENT_CHARS] + "\n[truncated]"
    record = {
        "id": event.id,
        "ts": event.ts,
        "session_id": event.session_id,
        "project": event.project,
        "cwd": event.cwd,
        "type": event.type,
        "tool_name": event.tool_name,
        "content": scrub(content),
        "metadata": _scrub_value(event.metadata),
    }
    return orjson.dumps({k: v for k, v in record.items() if v not in (None, {}, "")}) + b"\n"


def append(home: Path, events: list[Event] | Event) -> Path:
    """Append events to today's log (of the first event's date); returns the log path."""
    batch = [events] if isinstance(events, Event) else events
    path = event_path(home, batch[0].ts if batch else None)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(encode(e) for e in batch)
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if not _still_linked(fd, path):
                    continue  # maintenance archived the log while we waited for its lock: append to a new one
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                return path
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _still_linked(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (retention moves expired logs away under their lock)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)
