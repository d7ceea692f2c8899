"""Incremental indexing: discover, skip what is unchanged, re-chunk what changed, drop what was deleted, then
embed only content hashes the current model has never embedded.

The contract (DESIGN §3): a second run over unchanged sources reads no file contents (mtime and size say they
are unchanged) and embeds nothing; an edited file re-chunks and only its new chunk hashes reach the model;
a deleted file's chunks disappear; event logs are read from the byte offset where the last run stopped; a change
of chunker settings rebuilds the chunks and a change of model re-embeds everything rather than mix vectors.
A source that cannot be read is reported and skipped, and whatever it had in the index stays there.

The parts: :mod:`indexer.scan` (one pass over the sources, written by :mod:`indexer.writer` in the transactions
of :mod:`indexer.batches`, event logs read by :mod:`indexer.eventread`), :mod:`indexer.embedding` (the vectors);
this module runs them under the writer lock and reports.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from indexer.base.embedder import AUTO, Auto, Embedder, load_embedder, resolve_model
from indexer.base.errors import IndexCorrupt, MemsearchError, UsageError
from indexer.base.locks import LockTimeout, file_lock
from indexer.base.paths import CONFIG_NAME, WRITER_LOCK
from indexer.base.private import private_dirs
from indexer.base.reports import IndexReport
from indexer.base.settings import Settings
from indexer.embedding import EMBED_WINDOW, embed_pending, pending_count, pending_estimate
from indexer.scan import inside_sources, scan, source_roots
from indexer.sources import printable_path
from indexer.store import sqlite
from indexer.store.local import SqliteStore
from indexer.writer import Progress

__all__ = ["AUTO", "Progress", "embed_pending", "index", "ingest", "pending_count", "pending_estimate",
           "source_roots"]



def index(
    settings: Settings,
    paths: list[Path] | None = None,
    *,
    full: bool = False,
    embedder: Embedder | Auto | None = AUTO,
    progress: Progress | None = None,
    lock_timeout: float = 600.0,
) -> IndexReport:
    """Bring the index up to date with the sources; see the module docstring for the contract.

    ``embedder``: AUTO resolves the configured model (loaded only if something needs embedding); None indexes
    for BM25 only, leaving chunks pending; an :class:`Embedder` is used as given (tests pass a fake one).

    Only the scan holds the writer lock (so hooks can add their events while a long embedding runs); embedding
    needs no lock, because each vector is written once per (hash, model) whoever computes it.

    A damaged index (SQLite cannot read it, or an earlier command found a malformed page) is derived data: it is
    rebuilt from the sources as ``--full`` does, and the report's note says so.

    ``paths`` must lie inside the memory root or an extra source (a link by where it leads): a note indexed from
    anywhere else would leave the index at the next whole run, which indexes only those places, so it is a
    :class:`UsageError` instead.
    """
    if paths:
        refuse_outside(settings, paths)
    try:
        if sqlite.damage_marker(settings.db_path).exists():
            raise IndexCorrupt("an earlier command found a malformed page")
        with sqlite.damage_guard(settings.db_path):
            return _index(settings, paths, full, embedder, progress, lock_timeout)
    except IndexCorrupt as exc:
        from indexer.rebuild import rebuild  # the rebuild builds on this module

        report = rebuild(settings, embedder=embedder, progress=progress, lock_timeout=lock_timeout)
        note = f"the index was damaged ({exc.cause}); it is derived data and was rebuilt from the sources"
        return replace(report, model_note="; ".join(filter(None, (note, report.model_note))))


def refuse_outside(settings: Settings, paths: list[Path]) -> None:
    """A :class:`UsageError` naming the first of ``paths`` outside the memory root and the extra sources."""
    kept = inside_sources(settings, paths)
    outside = [p for p in paths if p not in kept]
    if not outside:
        return
    path = outside[0]
    where = f"is a link to {os.path.realpath(path)}, outside" if os.path.islink(path) else "is outside"
    raise UsageError(f"{printable_path(str(path))} {where} the memory root {settings.home}: memsearch "
                     "indexes only what lies under it; put the note there, or add its file or folder to "
                     f"extra_sources in {settings.home / CONFIG_NAME}")


def _index(settings: Settings, paths, full: bool, embedder, progress, lock_timeout: float) -> IndexReport:
    started = time.perf_counter()
    private_dirs(settings.state_dir)
    store = SqliteStore.open(settings.db_path)
    try:
        try:
            with file_lock(settings.state_dir / WRITER_LOCK, lock_timeout):
                run, notes = scan(settings, store, paths, full, progress)
        except LockTimeout:
            raise MemsearchError(
                f"another memsearch index run holds {settings.state_dir / WRITER_LOCK}; wait for it and try again"
            ) from None
        embedded, model_id, disabled = 0, None, False
        if embedder is AUTO:
            choice = resolve_model(settings)
            model_id = choice.model_id
            disabled = model_id is None  # model = "none": no chunk awaits an embedding, as status says
            if not choice.available:
                notes.append(f"BM25 only: {choice.reason}")
            elif store.pending_count(model_id):
                embedder = load_embedder(settings)
            else:
                embedder = None
        if embedder is not None and embedder is not AUTO:
            model_id = embedder.model_id
            embedded, note = embed_pending(store, embedder, batch=max(EMBED_WINDOW, settings.embed_batch),
                                           progress=progress)
            if note:
                notes.append(note)
        c = run.counts
        return IndexReport(
            files_scanned=c["scanned"],
            files_changed=c["changed"],
            files_unchanged=c["unchanged"],
            files_deleted=c["deleted"],
            skipped=tuple(run.skipped),
            chunks_added=c["added"],
            chunks_removed=c["removed"],
            chunks_embedded=embedded,
            chunks_pending=0 if disabled else store.pending_count(model_id),
            model=model_id,
            model_note="; ".join(notes) or None,
            full=run.full,
            seconds=round(time.perf_counter() - started, 3),
            last_indexed=store.get_meta("last_indexed"),
        )
    finally:
        store.close()


def ingest(settings: Settings, paths: list[Path], *, lock_timeout: float = 0.2, vanished: bool = False) -> bool:
    """Index just ``paths`` for BM25, fast, for hooks: no embedding, no report. Returns False when another run
    holds the writer lock (that run, or the next one, picks the sources up). ``vanished``: also drop recorded
    sources elsewhere whose file is gone (:func:`indexer.scan.scan`; the warm server's rescan of every source).

    A path that is, or lies under, a symlink leading out of the memory root and the extra sources (a linked
    ``events/`` folder or log) is not read: ``memsearch index`` and the server refuse it too.
    """
    paths = inside_sources(settings, paths)
    if not paths:
        return True
    if not settings.db_path.exists():
        private_dirs(settings.state_dir)
    store = SqliteStore.open(settings.db_path, io_wait=lock_timeout)  # a hook does not wait out a deleted -wal
    try:
        with file_lock(settings.state_dir / WRITER_LOCK, lock_timeout), sqlite.damage_guard(settings.db_path):
            scan(settings, store, paths, False, None, vanished=vanished)
        return True
    except LockTimeout:
        return False
    finally:
        store.close()
