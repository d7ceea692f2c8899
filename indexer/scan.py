"""One pass over the sources: what was deleted leaves, what changed is written again (:class:`SourceWriter`), in
write batches (:mod:`indexer.batches`); then the chunker settings and the time of the run are recorded.

A scoped scan (``paths``: a hook's ingest, a summary just written) reads only the sources under those paths and
their rows of the index; a whole scan also lets tombstones whose note changed lapse.
"""

from __future__ import annotations

import os
from pathlib import Path

from indexer import tombstones
from indexer.base.settings import Settings
from indexer.batches import WriteBatches
from indexer.chunker import CHUNKER_VERSION
from indexer.sources import discover, valid_name
from indexer.store import sqlite
from indexer.store.local import SqliteStore
from indexer.writer import Progress, SourceWriter, display_path

#: The meta key of the tombstones (:meth:`~indexer.tombstones.Tombstones.stamp`) the last whole scan applied: a
#: ``forgotten.json`` restored from a backup (or fixed by hand) hides its chunks at the next ``memsearch index``,
#: not only once their notes change or a rebuild reads every note.
TOMBSTONES_META = "tombstones"


def source_roots(settings: Settings) -> list[Path]:
    return [settings.home, *settings.extra_sources]


def inside_sources(settings: Settings, paths: list[Path]) -> list[Path]:
    """The ``paths`` whose real location (every symlink followed) lies inside the memory root or an extra source."""
    roots = [os.path.realpath(p) for p in source_roots(settings)]
    kept = []
    for path in paths:
        real = os.path.realpath(path)
        if any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots):
            kept.append(path)
    return kept


def in_scope(key: str, scope: list[Path]) -> bool:
    """Whether the source ``key`` is, or lies under, one of ``scope``."""
    return any(key == str(p) or key.startswith(str(p).rstrip("/") + "/") for p in scope)


def chunker_signature(settings: Settings) -> str:
    """What the chunks depend on besides the sources: a change re-chunks everything."""
    return f"{CHUNKER_VERSION}:{settings.chunk_chars}:{settings.chunk_overlap}"


def scan(settings: Settings, store: SqliteStore, paths: list[Path] | None, full: bool,
         progress: Progress | None, *, vanished: bool = False) -> tuple[SourceWriter, list[str]]:
    """Bring the chunks of the sources (all, or those under ``paths``) up to date; returns the run's writer
    (counts, skipped sources) and notes for the report. The caller holds the writer lock.

    ``vanished`` (a scoped scan of every source, the warm server's): the recorded sources outside ``paths`` whose
    file no longer exists go too, as a whole scan removes them: a memory root moved elsewhere. Left, its events
    would be found twice (the same turn indexed again at its new place, with another id when its reply context
    differs) until the next whole scan."""
    chunker = chunker_signature(settings)
    notes: list[str] = []
    recorded = store.get_meta("chunker")
    # A scoped run (a hook's ingest) re-chunks only its own files, so it leaves the change for the next full scan.
    if recorded not in (None, chunker) and not paths:
        full = True
        notes.append("chunker settings changed: every source re-chunked")
    run = SourceWriter(settings, store, full)
    stones_file = tombstones.path(settings.state_dir).exists()
    if not paths and stones_file and run.stones.stamp() != store.get_meta(TOMBSTONES_META):
        run.recheck = frozenset(run.stones.notes)  # changed since the last whole scan: their notes are read again
    scope = [p.absolute() for p in paths] if paths else source_roots(settings)
    for p in scope:
        if not valid_name(str(p)):
            run.skip(display_path(p, settings.home), "name is not valid UTF-8")
        elif not p.exists():
            run.skip(str(p), "does not exist")
    scope = [p for p in scope if valid_name(str(p))]  # the index holds paths as text
    # a scoped run (a hook's ingest) reads only its own rows, not the whole table
    known = store.sources_under(str(p) for p in scope) if paths else store.sources()
    found = list(discover([p for p in scope if p.exists()], source_roots(settings),
                          lambda p, why: run.skip(display_path(p, settings.home), why)))
    seen = {str(path) for path, _ in found}
    # Gone first: a file that is no longer found, or (in a full run) that no longer lies under any source, as
    # when the memory root moved. Its chunks must leave before the files that replace it arrive, because a chunk's
    # id comes from its path relative to the root and the same note at its new place would collide with them.
    gone = [k for k in known if k not in seen and (not paths or in_scope(k, scope))]
    if paths and vanished:
        gone += [k for k in store.sources() if k not in known and not in_scope(k, scope) and not os.path.lexists(k)]
    with WriteBatches(store, run.written) as batches:
        for key in gone:
            run.remove(key)
            batches.maybe_commit()
        run.counts["deleted"] = len(gone)
        for i, (path, source) in enumerate(found):
            run.index_file(path, source, known)
            batches.maybe_commit()
            if progress and (i % 50 == 0 or i == len(found) - 1):
                progress("scan", i + 1, len(found))
        if recorded is None or not paths:
            store.set_meta("chunker", chunker)
        store.set_meta("last_indexed", sqlite.now_iso())
    if run.counts["removed"]:
        store.drop_orphan_vectors()
    if not paths and stones_file and run.stones.notes:
        # a whole scan knows every file: a tombstone whose file changed (or went) has lapsed
        lapsed = run.stones.prune(store.content_hashes(), settings.extra_sources)
        if lapsed or run.stones.changed:
            tombstones.save(settings.state_dir, run.stones)
        if lapsed:
            notes.append(f"{lapsed} note(s) changed or gone since `memsearch forget` hid some of their chunks: "
                         "what they say now is indexed")
    if not paths:
        store.set_meta(TOMBSTONES_META, run.stones.stamp() if stones_file else None)
    return run, notes
