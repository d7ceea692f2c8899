"""``memsearch index --full``: rebuild the whole index in a new file, then swap it in atomically.

The new index is built next to the live one (``<root>/.memsearch/rebuild-<pid>.db``) by the real pipeline, with
no lock held on the live index, so hooks keep adding their events and searches keep answering from the old index
meanwhile. Vectors are reused from the old index for every content hash it already embedded (a vector depends on
the content and the model only), so a rebuild embeds only what is new. Then, under the writer lock, the new file
catches up with what the hooks appended during the build and is copied into the live database with SQLite's
online backup, in one write transaction: a reader sees the old index or the new one, never a half-built one, and
a crash at any moment before that commit leaves the old index untouched (the leftover build file is removed by
the next rebuild).

Why a backup and not ``os.replace``: the warm server, hooks and searches hold the live file open in WAL mode, and
SQLite finds a database's ``-wal`` and ``-shm`` files by *name*. Renaming a new file over a live WAL database lets
a connection that opens at the wrong moment read the old WAL into the new file, and the last old connection to
close deletes the new file's WAL by name: both corrupt the index. The backup keeps one file, so every connection,
the warm server's included, simply sees the new content at its next read.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

from indexer.base.embedder import AUTO, Auto, Embedder, load_embedder, resolve_model
from indexer.base.errors import IndexCorrupt, MemsearchError
from indexer.base.locks import LockTimeout, file_lock
from indexer.base.paths import BUILD_PREFIX, MAINTENANCE_LOCK, WRITER_LOCK
from indexer.base.private import private_dirs
from indexer.base.reports import IndexReport
from indexer.base.settings import Settings
from indexer.embedding import EMBED_WINDOW
from indexer.scan import scan
from indexer.sources import Draft
from indexer.store import sqlite
from indexer.store.local import SqliteStore
from indexer.writer import Progress, SourceWriter, display_path

SWAP_LOCK_TIMEOUT = 600.0


@contextmanager
def maintenance_lock(settings: Settings, timeout: float = 0.0) -> Iterator[None]:
    """One full rebuild or maintenance run at a time per memory root."""
    private_dirs(settings.state_dir)
    path = settings.state_dir / MAINTENANCE_LOCK
    try:
        with file_lock(path, timeout):
            yield
    except LockTimeout:
        raise MemsearchError(
            f"another `memsearch maintain` or `memsearch index --full` is running (it holds {path}); "
            "wait for it to finish and try again"
        ) from None


def rebuild(
    settings: Settings, *, embedder: Embedder | Auto | None = AUTO, progress: Progress | None = None,
    lock_timeout: float = 0.0,
) -> IndexReport:
    """Rebuild the index from the sources into a new file and swap it in atomically; see the module docstring.

    ``embedder`` is as for :func:`indexer.pipeline.index` (AUTO: the configured model, loaded only if something
    needs embedding). The report compares the new index with the one it replaced.
    """
    with maintenance_lock(settings, lock_timeout):
        return rebuild_locked(settings, embedder=embedder, progress=progress)


def rebuild_locked(
    settings: Settings, *, embedder: Embedder | Auto | None = AUTO, progress: Progress | None = None,
) -> IndexReport:
    """:func:`rebuild` for a caller that already holds :func:`maintenance_lock` (``memsearch maintain``)."""
    started = time.perf_counter()
    remove_stale_builds(settings)
    build_path = settings.state_dir / f"{BUILD_PREFIX}{os.getpid()}.db"
    build = settings.replace(db_path=build_path)
    new = SqliteStore.open(build_path)
    notes: list[str] = []
    old = _open_old(settings.db_path, notes)
    try:
        run, scan_notes = scan(build, new, None, True, progress)
        notes += scan_notes
        skipped = list(run.skipped)
        scanned = set(run.seen)
        kept = keep_unreadable(settings, old, new, run.seen)
        if kept:
            shown = ", ".join(kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
            notes.append(f"kept the previous chunks of {len(kept)} source(s) that could not be read now: {shown}")
        vectors = _Vectors(settings, embedder, old)
        embedded = vectors.fill(new, progress)
        # Catch up with what the hooks appended during the build, and embed it, still without any lock: the last
        # catch-up, under the writer lock, is then only what arrived in the last moments.
        caught_up = scan(build, new, None, False, None)[0]
        skipped += caught_up.skipped
        scanned |= caught_up.seen
        embedded += vectors.fill(new, None)
        notes += vectors.notes
        new.optimize_fts()
        before = _snapshot(old) if old is not None else ({}, set())
        if old is not None:
            old.close()
            old = None
        try:
            with file_lock(settings.state_dir / WRITER_LOCK, SWAP_LOCK_TIMEOUT):
                scanned |= scan(build, new, None, False, None)[0].seen
                compared = _compare(before, _snapshot(new))
                try:
                    swap_in(new, settings.db_path)
                except IndexCorrupt:
                    new.close()
                    replace_damaged(build_path, settings.db_path)
                    new = SqliteStore.open(settings.db_path)
                _forget_damage(settings.db_path)
        except LockTimeout:
            raise MemsearchError(
                f"an index run held {settings.state_dir / WRITER_LOCK} for {SWAP_LOCK_TIMEOUT:.0f}s; the old index "
                "was left as it was: try again"
            ) from None
        return IndexReport(
            files_scanned=len(scanned),  # with the sources the hooks created during the build
            files_changed=compared["files_changed"],
            files_unchanged=compared["files_unchanged"],
            files_deleted=compared["files_deleted"],
            skipped=tuple(dict.fromkeys(skipped)),
            chunks_added=compared["chunks_added"],
            chunks_removed=compared["chunks_removed"],
            chunks_embedded=embedded,
            chunks_pending=new.pending_count(vectors.model_id),
            model=vectors.model_id,
            model_note="; ".join(notes) or None,
            full=True,
            seconds=round(time.perf_counter() - started, 3),
            last_indexed=new.get_meta("last_indexed"),
        )
    finally:
        if old is not None:
            old.close()
        new.close()
        _remove_db_files(build_path)


def _open_old(path: Path, notes: list[str]) -> SqliteStore | None:
    """The live index, read for what the new one can take over from it; None if there is none (or it is unusable)."""
    if not path.exists():
        return None
    try:
        return SqliteStore.open(path, create=False)
    except IndexCorrupt:
        notes.append("nothing taken over from the damaged index: everything is embedded again")
        return None
    except MemsearchError as exc:
        notes.append(f"the old index could not be read ({exc}); everything is embedded again")
        return None


def keep_unreadable(settings: Settings, old: SqliteStore | None, new: SqliteStore, scanned: set[str]) -> list[str]:
    """Carry over from the old index the chunks of sources that are still there but could not be read now, so a
    rebuild loses no more than an incremental run does (a bad file keeps what it had). Returns those sources, as
    the report shows paths.

    A source counts when the build's scan tried to read it (``scanned``: a symlink pointing outside the allowed
    roots is not found, so its old chunks are not carried) but wrote no row for it. A source made after that scan
    (an event log a hook started meanwhile) is not one: the catch-up scans index it.
    """
    if old is None:
        return []
    fresh = new.sources()
    try:
        states = [s for path, s in old.sources().items() if path in scanned and path not in fresh]
        run = SourceWriter(settings, new, True)
        for state in states:
            drafts = [(c.path, Draft(c.kind, c.category, c.title, c.text, c.line_start, c.line_end, c.event_id,
                                     c.ts, c.session_id, c.project, c.status, c.seq, c.speaker))
                      for c in old.source_chunks(state.path)]
            run.write(state, [row for rel, d in drafts for row in run.rows(rel, [d])])
        return [display_path(Path(s.path), settings.home) for s in states]
    except apsw.Error:
        return []


def swap_in(source: SqliteStore, db_path: Path, retries: int = 20) -> None:
    """Copy the database of ``source`` over the one at ``db_path`` in one write transaction (online backup).

    Readers of ``db_path`` keep their snapshot until their read ends, then see the new content; a crash before the
    commit leaves the old content. The copy waits for the write lock like any writer (busy timeout, then retries).
    A live index SQLite finds damaged raises :class:`IndexCorrupt` (then see :func:`replace_damaged`).
    """
    live = SqliteStore.open(db_path)
    try:
        with sqlite.damage_guard(db_path):
            if live.page_size() != source.page_size():
                raise MemsearchError(
                    f"{db_path} has another page size than the rebuilt index; delete it and run `memsearch index`"
                )
            if not live.copy_from(source, retries):
                raise MemsearchError(f"{db_path} stayed busy; the old index was left as it was: try again")
    finally:
        live.close()


def replace_damaged(build_path: Path, db_path: Path) -> None:
    """Put the finished build in place of a live index SQLite cannot open (a garbage header, a truncated file),
    which the online backup cannot write into. The build's connection is closed, so its file is whole. Unlike
    :func:`swap_in`, a connection still open on the damaged file (the warm server's) keeps it until it notices the
    new file, as it does for an index deleted by hand."""
    for suffix in ("-wal", "-shm"):
        try:
            os.unlink(f"{db_path}{suffix}")
        except FileNotFoundError:
            pass
    os.replace(build_path, db_path)


def _forget_damage(db_path: Path) -> None:
    try:
        os.unlink(sqlite.damage_marker(db_path))
    except FileNotFoundError:
        pass


def remove_stale_builds(settings: Settings) -> list[Path]:
    """Delete what a killed rebuild left behind. Call only under :func:`maintenance_lock`."""
    removed = []
    for path in sorted(settings.state_dir.glob(f"{BUILD_PREFIX}*.db*")):
        try:
            path.unlink()
            removed.append(path)
        except FileNotFoundError:
            pass
    return removed


def _remove_db_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass


class _Vectors:
    """The new index's vectors, written in the order a build from scratch embeds them (so that both store the same
    rows): each content hash takes the old index's vector when that index holds one of the same model, else it is
    embedded. With no model available, the old vectors are still carried over and the rest stays pending."""

    def __init__(self, settings: Settings, embedder: Embedder | Auto | None, old: SqliteStore | None):
        self.settings, self.notes = settings, []
        self.model: Embedder | None = None
        self.model_id: str | None = None
        if embedder is AUTO:
            choice = resolve_model(settings)
            if choice.available:
                self.model, self.model_id = load_embedder(settings), choice.model_id  # loads only when it embeds
            else:
                self.notes.append(f"BM25 only: {choice.reason}")
        elif embedder is not None:
            self.model, self.model_id = embedder, embedder.model_id
        self.old = old
        self.old_model: str | None = None
        self.old_dim: int | None = None
        self._read_old()
        self.target = self.model_id or self.old_model
        self.reuse = self.old_model is not None and self.old_model == self.target

    def _read_old(self) -> None:
        if self.old is None:
            return
        try:
            model, dim = self.old.get_meta("vector_model"), self.old.get_meta("vector_dim")
            if model and dim and self.old.has_vectors():
                self.old_model, self.old_dim = model, int(dim)
        except (apsw.Error, ValueError) as exc:
            self.notes.append(f"vectors of the old index not reused ({exc}); they are embedded again")

    def _old_vectors(self, hashes: list[str]) -> dict[str, bytes]:
        if not self.reuse or self.old is None or self.old_model is None:
            return {}
        try:
            return self.old.stored_vectors(self.old_model, hashes)
        except apsw.Error:
            return {}

    def fill(self, new: SqliteStore, progress: Progress | None) -> int:
        """Give every pending content hash its vector; returns how many were embedded (not reused)."""
        if self.target is None:
            return 0
        dim = self.old_dim if self.reuse else self.model.dim if self.model is not None else None
        # a target is the old index's model (reused, its dimension read with it) or the embedder's
        assert dim is not None
        note = new.ensure_vector_model(self.target, dim)
        if note:
            self.notes.append(note)
        total = new.pending_count(self.target)
        embedded, batch, done, after = 0, max(EMBED_WINDOW, self.settings.embed_batch), 0, 0
        while done < total:
            part = new.pending_embeddings(self.target, min(batch, total - done), after)
            if not part:
                break
            vectors: dict[str, bytes | None] = dict.fromkeys((p.hash for p in part), None)
            vectors.update(self._old_vectors(list(vectors)))
            missing = [p for p in part if vectors[p.hash] is None]
            if missing and self.model is not None:
                fresh = self.model.embed_passages([p.input for p in missing])
                vectors.update(zip((p.hash for p in missing), fresh))
                embedded += len(missing)
            found = [(p.hash, vectors[p.hash]) for p in part if vectors[p.hash] is not None]
            new.put_embeddings(self.target, found)
            done, after = done + len(part), part[-1].id  # what has no vector yet stays pending, passed over
            if progress:
                progress("embed", done, total)
        return embedded


Snapshot = tuple[dict[str, str], set[str]]


def _snapshot(store: SqliteStore) -> Snapshot:
    """Each file's state (content hash and bytes consumed) and every chunk id, to compare two indexes."""
    try:
        return store.snapshot()
    except apsw.Error:
        return {}, set()


def _compare(old: Snapshot, new: Snapshot) -> dict[str, int]:
    """What the new index changes compared with the old one: files changed, unchanged, deleted; chunks added and
    removed (a chunk id changes with its content or place)."""
    (old_files, old_chunks), (new_files, new_chunks) = old, new
    unchanged = sum(1 for path, state in new_files.items() if old_files.get(path) == state)
    return {
        "files_changed": len(new_files) - unchanged,
        "files_unchanged": unchanged,
        "files_deleted": len(old_files.keys() - new_files.keys()),
        "chunks_added": len(new_chunks - old_chunks),
        "chunks_removed": len(old_chunks - new_chunks),
    }
