"""``memsearch scrub``: re-apply the current privacy filter to everything memsearch wrote earlier.

A newer filter masks what an older one let through, but only in what it captures from now on; the event logs,
archives, session summaries and the index keep the old text (and stored text is injected into later prompts).
Scrub re-runs the filter over:

- the files memsearch writes itself: ``events/*.jsonl`` (every string of every event), ``archive/events/*.gz``,
  ``sessions/*.md``, its state files (``.memsearch/*.json``) and logs. Each changed file is rewritten atomically
  (a temporary file, fsync, rename, mode 0600); an event log is rewritten under its append lock, so a hook
  appending meanwhile writes to the new file (see :mod:`indexer.eventlog`). Notes, facts and records are the
  user's own files and are left as they are: the index holds them filtered anyway.
- the index: when any chunk would change, or any source was rewritten, the index is rebuilt from the sources
  into a new file and swapped in (:mod:`indexer.rebuild`): chunks, FTS rows and the turn context all come from
  filtered text; unchanged chunks keep their vectors, changed ones are embedded or left pending. Then the old
  bytes are made to leave the file: ``secure_delete``, ``VACUUM``, ``wal_checkpoint(TRUNCATE)``; leftover
  ``rebuild-*.db*`` files of a killed rebuild are deleted.

The report counts what changed by kind, never the text. ``--dry-run`` computes the same counts and writes
nothing, not even a lock file (it works on a read-only memory root). The version of the filter last applied is
kept in ``.memsearch/privacy.json``; ``memsearch maintain`` scrubs when it differs from
:data:`indexer.privacy.FILTER_VERSION`.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import apsw

from indexer.base.embedder import Auto, Embedder
from indexer.base.errors import MemsearchError
from indexer.base.locks import LockTimeout, file_lock
from indexer.base.paths import BUILD_PREFIX, EVENTS_DIR, PRIVACY_STATE, WRITER_LOCK
from indexer.base.private import write_private
from indexer.base.reports import ScrubReport
from indexer.base.settings import Settings
from indexer.privacy import FILTER_VERSION, kinds, scrub
from indexer.rebuild import maintenance_lock, rebuild_locked, remove_stale_builds
from indexer.status import open_existing
from indexer.store.local import SqliteStore

_KEEP_FIELDS = ("id", "ts")


def stored_filter_version(settings: Settings) -> int | None:
    try:
        return int(json.loads((settings.state_dir / PRIVACY_STATE).read_text())["filter_version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_filter_version(settings: Settings) -> None:
    write_private(settings.state_dir / PRIVACY_STATE, json.dumps({"filter_version": FILTER_VERSION}).encode(),
                  durable=True)


class _Tally:
    def __init__(self) -> None:
        self.files: Counter[str] = Counter()
        self.records = 0
        self.redactions: Counter[str] = Counter()
        self.problems: list[str] = []

    def text(self, old: str) -> str:
        new = scrub(old)
        if new != old:
            self.redactions.update({k: max(0, n - kinds(old).get(k, 0)) for k, n in kinds(new).items()})
        return new


def _scrub_value(value: Any, tally: _Tally) -> Any:
    if isinstance(value, str):
        return tally.text(value)
    if isinstance(value, dict):
        return {k: v if k in _KEEP_FIELDS else _scrub_value(v, tally) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_value(v, tally) for v in value]
    return value


def scrub_event_lines(data: bytes, tally: _Tally) -> bytes:
    """The event log ``data`` with every event filtered again; unchanged lines keep their exact bytes."""
    out: list[bytes] = []
    for line in data.splitlines(keepends=True):
        body = line.rstrip(b"\n")
        try:
            record = json.loads(body)
        except ValueError:
            record = None
        if isinstance(record, dict):
            new = _scrub_value(record, tally)
            if new != record:
                tally.records += 1
                body = json.dumps(new, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")
        elif body.strip():  # a torn or foreign line: filtered as text, never dropped
            text = body.decode("utf-8", "replace")
            new_text = tally.text(text)
            if new_text != text:
                tally.records += 1
                body = new_text.encode("utf-8")
        out.append(body + (b"\n" if line.endswith(b"\n") else b""))
    return b"".join(out)


def _scrub_event_log(path: Path, tally: _Tally, dry_run: bool) -> bool:
    fd = os.open(path, os.O_RDONLY if dry_run else os.O_RDWR)  # a dry run reads, on a read-only root too
    try:
        # the append lock: no hook writes to this log while it is rewritten (or read whole, in a dry run)
        fcntl.flock(fd, fcntl.LOCK_SH if dry_run else fcntl.LOCK_EX)
        try:
            chunks = []
            while block := os.read(fd, 1 << 20):
                chunks.append(block)
            data = b"".join(chunks)
            new = scrub_event_lines(data, tally)
            if new == data:
                return False
            if not dry_run:
                write_private(path, new, durable=True)
            return True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _scrub_archive(path: Path, tally: _Tally, dry_run: bool) -> bool:
    data = gzip.decompress(path.read_bytes())
    new = scrub_event_lines(data, tally)
    if new == data:
        return False
    if not dry_run:
        write_private(path, gzip.compress(new), durable=True)
    return True


def _scrub_text_file(path: Path, tally: _Tally, dry_run: bool) -> bool:
    data = path.read_bytes()
    text = data.decode("utf-8", "replace")
    new = tally.text(text)
    if new == text:
        return False
    if not dry_run:
        write_private(path, new.encode("utf-8"), durable=True)
    return True


def _own_files(settings: Settings) -> list[tuple[str, Path]]:
    home, state = settings.home, settings.state_dir
    found: list[tuple[str, Path]] = []
    for kind, folder, pattern in (
        ("event logs", home / EVENTS_DIR, "*.jsonl"),
        ("archives", home / "archive" / "events", "*.gz"),
        ("session summaries", home / "sessions", "*.md"),
        ("state files", state, "*.json"),
        ("logs", settings.log_dir, "*.log"),
    ):
        if folder.is_dir() and not folder.is_symlink():
            found += [(kind, p) for p in sorted(folder.glob(pattern)) if p.is_file() and not p.is_symlink()]
    return found


def scrub_sources(settings: Settings, *, dry_run: bool = False, tally: _Tally | None = None) -> _Tally:
    """Filter the files memsearch wrote again (see the module docstring); returns what changed."""
    tally = tally or _Tally()
    for kind, path in _own_files(settings):
        try:
            if kind == "event logs":
                changed = _scrub_event_log(path, tally, dry_run)
            elif kind == "archives":
                changed = _scrub_archive(path, tally, dry_run)
            else:
                changed = _scrub_text_file(path, tally, dry_run)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            tally.problems.append(f"{path.relative_to(settings.home)}: cannot scrub: {exc}")
            continue
        if changed:
            tally.files[kind] += 1
    return tally


def _changed_chunks(settings: Settings, tally: _Tally) -> int:
    """How many indexed chunks the current filter would change (their new markers are tallied)."""
    conn = open_existing(settings)  # read-only on a read-only memory root (a dry run works there)
    if conn is None:
        return 0
    changed = 0
    with SqliteStore(conn, settings.db_path) as store:
        for title, text in store.chunk_texts():
            if tally.text(title) != title or tally.text(text) != text:
                changed += 1
    return changed


def _purge_old_bytes(settings: Settings) -> str:
    """secure_delete, VACUUM and a truncating checkpoint, so no deleted text stays in the file or its WAL."""
    store = SqliteStore.open(settings.db_path)
    try:
        with file_lock(settings.state_dir / WRITER_LOCK, 120.0):
            store.optimize_fts()
            store.vacuum()
            truncated = store.checkpoint("TRUNCATE")
        return "vacuumed; WAL truncated" if truncated else "vacuumed; WAL not truncated (a reader holds it: run again)"
    except apsw.FullError:
        return ("vacuum failed: the disk is full (VACUUM writes a copy of the index), so the old bytes are still in "
                "the index; free some space and run `memsearch scrub` again")
    except (apsw.Error, LockTimeout) as exc:
        return f"vacuum failed: {type(exc).__name__}: {exc}"
    finally:
        store.close()


def scrub_memory(settings: Settings, *, dry_run: bool = False, embedder: Embedder | Auto | None = None,
                 lock_timeout: float = 0.0) -> ScrubReport:
    """Run the scrub; see the module docstring. ``embedder`` as for :func:`indexer.rebuild.rebuild` (default:
    none, so changed chunks wait for the next ``index`` or the warm server to embed them)."""
    started = time.perf_counter()
    previous = stored_filter_version(settings)
    # a dry run writes nothing, not even the lock file, so it reports on a read-only memory root too
    with contextlib.nullcontext() if dry_run else maintenance_lock(settings, lock_timeout):
        in_index = _Tally()
        chunks = _changed_chunks(settings, in_index)  # before the sources: counts what the index holds today
        tally = scrub_sources(settings, dry_run=dry_run)
        stale = sorted(settings.state_dir.glob(f"{BUILD_PREFIX}*.db*"))
        rebuilt, purge = False, ""
        if not dry_run:
            remove_stale_builds(settings)
            if chunks or sum(tally.files.values()):
                try:
                    rebuild_locked(settings, embedder=embedder)
                except MemsearchError as exc:
                    tally.problems.append(f"index not rebuilt: {exc}")
                else:
                    rebuilt = True
            if settings.db_path.exists():
                purge = _purge_old_bytes(settings)
                if purge.startswith("vacuum failed"):
                    tally.problems.append(purge)
            if not tally.problems:
                save_filter_version(settings)
    return ScrubReport(
        dry_run=dry_run,
        filter_version=FILTER_VERSION,
        previous_filter_version=previous,
        files_changed=dict(sorted(tally.files.items())),
        events_changed=tally.records,
        chunks_changed=chunks,
        redactions=dict(sorted((k, v) for k, v in tally.redactions.items() if v)),
        index_redactions=dict(sorted((k, v) for k, v in in_index.redactions.items() if v)),
        stale_builds=len(stale),
        index_rebuilt=rebuilt,
        database=purge or ("not touched (dry run)" if dry_run else "no index"),
        problems=tuple(tally.problems),
        seconds=round(time.perf_counter() - started, 3),
    )
