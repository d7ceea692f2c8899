"""Rewriting the files memsearch itself wrote, for ``memsearch forget``: event logs and their gzipped archives.

An event log line is overwritten by a ``{"forgotten":true}`` line of the same length (padded with spaces), so
every other event keeps its byte offset, and with it its chunk id and the indexer's place in the log. The new
content is written to a private temporary file, synced and renamed over the log while holding the log's append
lock (:mod:`indexer.eventlog`): a hook that waited for the lock finds the log replaced and appends to the new one.
Archives are not indexed, so their matching lines are simply dropped.
"""

from __future__ import annotations

import fcntl
import gzip
import os
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import orjson

from indexer.base.private import write_private
from indexer.base.reports import ForgetSelector
from indexer.base.settings import Settings
from indexer.maintain import ARCHIVE_DIR
from indexer.sources import normalize_ts

FORGOTTEN_LINE = b'{"forgotten":true}'


def _archives(settings: Settings) -> Iterator[tuple[Path, bytes]]:
    """Each archived log with its decompressed bytes (one that cannot be read is passed over)."""
    folder = settings.home / ARCHIVE_DIR
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.jsonl*.gz")):
        try:
            yield path, gzip.decompress(path.read_bytes())
        except (OSError, EOFError, gzip.BadGzipFile):
            continue


def archive_matches(settings: Settings, selector: ForgetSelector, event_ids: set[str]) -> dict[Path, int]:
    """Archived logs and how many of their events the selector takes. Archives are not indexed, so a chunk id
    cannot reach them: event ids do (for ``--match``, those of the archived events holding its words:
    :func:`archived_events`), and the session, project and date criteria."""
    out = {}
    for path, data in _archives(settings):
        n = sum(1 for line in data.splitlines() if archived_match(line, selector, event_ids))
        if n:
            out[path] = n
    return out


def archived_events(settings: Settings, selector: ForgetSelector) -> Iterator[dict]:
    """The archived events with an id and a text that meet the selector's session, project and date criteria:
    what ``forget --match`` reads for its words (:func:`search_engine.lookup.matching`)."""
    for _, data in _archives(settings):
        for line in data.splitlines():
            event = _event(line)
            if event is not None and event.get("id") and isinstance(event.get("content"), str) \
                    and _within(event, selector):
                yield event


def _event(line: bytes) -> dict | None:
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return event if isinstance(event, dict) else None


def archived_match(line: bytes, selector: ForgetSelector, event_ids: set[str]) -> bool:
    event = _event(line)
    if event is None:
        return False
    if selector.match or selector.ids:
        if str(event.get("id")) not in event_ids and str(event.get("id")) not in selector.ids:
            return False
    elif not (selector.session or selector.project or selector.since or selector.before):
        return False
    return _within(event, selector)


def _within(event: dict, selector: ForgetSelector) -> bool:
    """Whether ``event`` meets the selector's session, project and date criteria (all of them)."""
    ts = normalize_ts(event.get("ts"))
    return ((not selector.session or event.get("session_id") == selector.session)
            and (not selector.project or event.get("project") == selector.project)
            and (not selector.since or (ts is not None and ts >= selector.since))
            and (not selector.before or (ts is not None and ts < selector.before)))


def blank_lines(path: Path, offsets: dict[int, str]) -> list[dict]:
    """Overwrite the event lines starting at ``offsets`` (offset -> event id, checked) with a forgotten line of the
    same length, in a copy swapped in atomically while holding the log's append lock. Returns the events blanked
    (what :func:`indexer.transcripts.remember_forgotten` keeps hashes of)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            data = bytearray(_read_all(fd))
            blanked: list[dict] = []
            for offset, event_id in sorted(offsets.items()):
                end = data.find(b"\n", offset)
                end = len(data) if end < 0 else end
                try:
                    event = orjson.loads(bytes(data[offset:end]))
                except orjson.JSONDecodeError:
                    continue
                if not isinstance(event, dict) or str(event.get("id")) != event_id:
                    continue  # the log is not what the index says: leave it to the next index run
                length = end - offset
                line = FORGOTTEN_LINE if length >= len(FORGOTTEN_LINE) else b""
                data[offset:end] = line + b" " * (length - len(line))
                blanked.append(event)
            if blanked:
                replace_file(path, bytes(data))
            return blanked
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    parts: list[bytes] = []
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            return b"".join(parts)
        parts.append(block)


def replace_file(path: Path, data: bytes) -> None:
    """Write ``data`` to a private temporary file beside ``path``, durably, and rename it over ``path``."""
    write_private(path, data, durable=True)


def rewrite_archive(path: Path, selector: ForgetSelector, event_ids: set[str]) -> list[dict]:
    """Rewrite the archived log ``path`` without the events the selector takes; returns them."""
    try:
        data = gzip.decompress(path.read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile):
        return []
    kept: list[bytes] = []
    removed: list[dict] = []
    for line in data.splitlines(keepends=True):
        if archived_match(line, selector, event_ids):
            removed.append(cast(dict, _event(line)))  # a line that matches is an event
        else:
            kept.append(line)
    if removed:
        replace_file(path, gzip.compress(b"".join(kept), mtime=0))
    return removed
