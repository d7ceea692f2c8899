"""``memsearch maintain``: the weekly upkeep of an index that hooks write to many times a minute.

In order: retention (event logs past ``retention_days_event`` leave the memory root, archived or deleted), a full
rescan rebuilt into a new file and swapped in atomically (:mod:`indexer.rebuild`, which also embeds everything
pending), orphan vectors dropped, FTS5 ``optimize``, ``VACUUM``, then ``PRAGMA integrity_check``, FTS5's own
integrity check and a check that the chunk, FTS and vector tables agree; the report says what changed, the sizes
before and after, and how long each step took.

Retention acts on the sources, not only on the index, so that it lasts: a later ``memsearch index --full`` (or a
deleted index rebuilt from scratch) does not bring expired events back. Only the event logs that memsearch writes
itself expire; notes, facts and records are the user's own files and are never touched. An expired log is moved
under its append lock (:mod:`indexer.eventlog`), so a hook appending at that moment writes to a fresh log instead
of losing its event.

Nothing here blocks a hook or a search for long: searches read a WAL snapshot throughout; the writer lock that
hook ingestion takes is held only for the swap, the optimize and the vacuum, and a hook that cannot get it within
its short timeout leaves its event in the log for the next run.
"""

from __future__ import annotations

import fcntl
import gzip
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import apsw
import orjson

from indexer.base.embedder import AUTO, Auto, Embedder
from indexer.base.errors import IndexCorrupt, MemsearchError
from indexer.base.locks import LockTimeout, file_lock
from indexer.base.paths import EVENTS_DIR, WRITER_LOCK
from indexer.base.private import private_dirs, write_private
from indexer.base.reports import Expired, IndexCheck, MaintainReport
from indexer.base.settings import Settings
from indexer.privacy import FILTER_VERSION
from indexer.rebuild import maintenance_lock, rebuild_locked
from indexer.scrub import save_filter_version, scrub_sources, stored_filter_version
from indexer.sources import normalize_ts
from indexer.store import sqlite
from indexer.store.local import SqliteStore, as_store
from indexer.writer import Progress

ARCHIVE_DIR = Path("archive") / "events"
_DAY_RE = re.compile(r"(\d{4}-\d{2}-\d{2})")
WRITER_LOCK_TIMEOUT = 120.0


def maintain(
    settings: Settings, *, embedder: Embedder | Auto | None = AUTO, progress: Progress | None = None,
    now: datetime | None = None, lock_timeout: float = 0.0,
) -> MaintainReport:
    """Run every maintenance step; see the module docstring. ``now`` fixes the clock for retention (tests).

    Raises :class:`MemsearchError` when another maintenance run or full rebuild holds the lock. A failed integrity
    check does not raise: the report says ``ok: false`` and what failed.
    """
    with maintenance_lock(settings, lock_timeout):
        started = time.perf_counter()
        steps: list[tuple[str, float]] = []

        def step(name: str, since: float) -> float:
            at = time.perf_counter()
            steps.append((name, round(at - since, 3)))
            return at

        bytes_before, chunks_before = db_bytes(settings.db_path), _chunk_count(settings.db_path)
        t = time.perf_counter()
        scrubbed = None
        if stored_filter_version(settings) != FILTER_VERSION:  # the rebuild below re-filters the index
            tally = scrub_sources(settings)
            scrubbed = dict(sorted(tally.files.items()))
            t = step("privacy scrub", t)
        expired = expire_event_logs(settings, now)
        t = step("retention", t)
        damaged = sqlite.damage_marker(settings.db_path).exists()  # found by retention, or by an earlier command
        report = rebuild_locked(settings, embedder=embedder, progress=progress)
        if damaged:
            note = "the index was damaged; it is derived data and was rebuilt from the sources"
            report = replace(report, model_note="; ".join(filter(None, (note, report.model_note))))
        t = step("rescan and embed", t)
        store = SqliteStore.open(settings.db_path)
        try:
            with _writer_lock(settings):
                dropped = store.drop_orphan_vectors()
                store.optimize_fts()
                store.recount()
            t = step("optimize", t)
            vacuum_error = None
            try:
                with _writer_lock(settings):
                    store.vacuum()
                store.checkpoint("TRUNCATE")
            except apsw.Error as exc:
                vacuum_error = f"vacuum failed: {type(exc).__name__}: {exc}"
            t = step("vacuum", t)
            with _writer_lock(settings):  # FTS5's check writes: hooks wait for it, not it for them
                check = check_index(store)
            if vacuum_error:
                check = _with_problem(check, vacuum_error)
            elif scrubbed is not None and not tally.problems:
                save_filter_version(settings)
            step("integrity check", t)
            chunks_after = check.chunks
        finally:
            store.close()
        return MaintainReport(
            ok=check.ok,
            index=report,
            expired=tuple(expired),
            retention_days_event=settings.retention_days_event,
            orphan_vectors_dropped=dropped,
            check=check,
            chunks_before=chunks_before,
            chunks_after=chunks_after,
            bytes_before=bytes_before,
            bytes_after=db_bytes(settings.db_path),
            seconds=round(time.perf_counter() - started, 3),
            steps=tuple(steps),
            scrubbed=scrubbed,
        )


def check_index(store: SqliteStore | apsw.Connection) -> IndexCheck:
    """Whether the index is sound: SQLite's and FTS5's integrity checks, and chunk, FTS and vector tables that
    agree row for row (:meth:`indexer.store.sqlite_write.SqliteWriter.check`).

    >>> check_index(SqliteStore.open(Path("/tmp/memsearch-doctest-check/index.db"))).ok
    True
    """
    return as_store(store).check()


def expire_event_logs(settings: Settings, now: datetime | None = None) -> list[Expired]:
    """Move event logs whose newest event is older than ``retention_days_event`` days out of the memory root's
    ``events/``: gzipped into ``archive/events/`` when ``archive`` is on, else deleted. 0 days keeps everything.

    A log named by a day inside the retention window is kept without being read; an older one (or one without a
    date in its name) is read to find its newest event, so a log that received recent events is kept.
    """
    days = settings.retention_days_event
    events = settings.home / EVENTS_DIR
    if days <= 0 or not events.is_dir():
        return []
    cutoff = ((now or datetime.now()) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S")
    chunks = _event_chunks(settings.db_path)
    out = []
    for path in sorted(events.glob("*.jsonl")):
        if path.is_symlink() or not path.is_file():
            continue
        day = _DAY_RE.search(path.stem)
        if day and f"{day.group(1)}T23:59:59" >= cutoff:
            continue
        expired = _expire(path, settings, cutoff, chunks.get(str(path), 0))
        if expired:
            out.append(expired)
    return out


def _expire(path: Path, settings: Settings, cutoff: str, chunks: int) -> Expired | None:
    """Archive or delete one log if its newest event is older than ``cutoff``, under the log's append lock."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        st = os.fstat(fd)
        try:
            current = os.stat(path)
        except FileNotFoundError:
            return None
        if (current.st_dev, current.st_ino) != (st.st_dev, st.st_ino):
            return None
        data = _read_all(fd)
        newest = newest_event(data)
        day = _DAY_RE.search(path.stem)
        if newest is None and day:
            newest = f"{day.group(1)}T00:00:00"
        if newest is None or newest >= cutoff:
            return None
        target = None
        if settings.archive:
            target = _archive(data, settings.home / ARCHIVE_DIR, path.name)
        os.unlink(path)
        shown = str(target.relative_to(settings.home)) if target else None
        return Expired(str(path.relative_to(settings.home)), newest, chunks, shown)
    finally:
        os.close(fd)  # closing releases the lock


def newest_event(data: bytes) -> str | None:
    """The latest ``ts`` of the readable events in a JSONL log (unreadable lines are ignored).

    >>> newest_event(b'{"ts": "2026-01-02T10:00:00"}\\nnot json\\n{"ts": "2026-01-01T09:00:00"}\\n')
    '2026-01-02T10:00:00'
    """
    newest = None
    for line in data.splitlines():
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        ts = normalize_ts(event.get("ts")) if isinstance(event, dict) else None
        if ts and (newest is None or ts > newest):
            newest = ts
    return newest


def _archive(data: bytes, folder: Path, name: str) -> Path:
    """Write ``data`` gzipped as ``folder/name.gz`` (``name.1.gz``… if taken), durably, and return its path."""
    private_dirs(folder)
    target, n = folder / f"{name}.gz", 0
    while target.exists():
        n += 1
        target = folder / f"{name}.{n}.gz"
    return write_private(target, gzip.compress(data), durable=True)


def _read_all(fd: int) -> bytes:
    parts: list[bytes] = []
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            return b"".join(parts)
        parts.append(block)


def _event_chunks(db_path: Path) -> dict[str, int]:
    """How many chunks each event log has in the index (what the report says retention took out of it); none
    from a damaged index, which is marked so that the rescan after retention rebuilds it from the sources."""
    if not db_path.exists():
        return {}
    try:
        with SqliteStore.open(db_path) as store, sqlite.damage_guard(db_path):
            return store.event_chunks_by_source()
    except IndexCorrupt:
        sqlite.mark_damaged(db_path)
        return {}


def _chunk_count(db_path: Path) -> int:
    if not db_path.exists():
        return 0
    try:
        store = SqliteStore.open(db_path, create=False)
    except MemsearchError:
        return 0
    try:
        return store.chunk_count()
    except apsw.Error:
        return 0
    finally:
        store.close()


def db_bytes(db_path: Path) -> int:
    """The size of the index on disk, its WAL and shared-memory files included."""
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.path.getsize(f"{db_path}{suffix}")
        except FileNotFoundError:
            pass
    return total


@contextmanager
def _writer_lock(settings: Settings) -> Iterator[None]:
    """The writer lock hooks take to ingest, held while maintenance rewrites the file, so that a hook gives up
    within its short timeout (its event stays in the log) instead of waiting on SQLite's busy handler."""
    try:
        with file_lock(settings.state_dir / WRITER_LOCK, WRITER_LOCK_TIMEOUT):
            yield
    except LockTimeout:
        raise MemsearchError(
            f"an index run held the writer lock for {WRITER_LOCK_TIMEOUT:.0f}s; maintenance stopped, run it again"
        ) from None


def _with_problem(check: IndexCheck, problem: str) -> IndexCheck:
    integrity = problem if check.integrity == "ok" else f"{check.integrity}; {problem}"
    return replace(check, integrity=integrity)
