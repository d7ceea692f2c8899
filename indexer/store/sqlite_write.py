"""What the indexer writes to the local index: sources and their chunks (with the FTS5 rows) and embeddings, and
the counts ``status`` and every result's health report. Part of :class:`indexer.store.local.SqliteStore`.

The :class:`indexer.store.Store` methods come first (sources and chunks, then vectors), with what only the local
index needs beside them (the turn context of events, the scoped sources of a hook's ingest, the vectors a rebuild
takes over); the counts come last. What ``forget``, ``scrub`` and maintenance need, and the transactions of a
scan, are :class:`indexer.store.sqlite_upkeep.SqliteUpkeep`.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterable, Sequence

import apsw

from indexer.base.chunktext import TURN_TYPES, Turn, fts_title
from indexer.base.cjk import index_form
from indexer.store import ChunkRow, PendingText, SourceState, StoreHealth, sqlite
from indexer.store.sqlite_upkeep import PIECE, SqliteUpkeep, marks

_SOURCE_COLUMNS = "path, source, mtime_ns, size, content_hash, consumed, head_hash"


def _vector_bytes(vector: Sequence[float] | bytes) -> bytes:
    """sqlite-vec takes float32 bytes (what the embedders return); a sequence of floats is packed."""
    if isinstance(vector, (bytes, bytearray, memoryview)):
        return bytes(vector)
    return array("f", vector).tobytes()


class SqliteWriter(SqliteUpkeep):
    """The writing half of :class:`indexer.store.local.SqliteStore` (with the upkeep of :class:`SqliteUpkeep`)."""

    conn: apsw.Connection

    # -- sources and chunks (the Store contract) ------------------------------------------------------------------

    def write_batch(self, source: SourceState, chunks: Sequence[ChunkRow]) -> int:
        """Record ``source`` and add ``chunks`` (uids already stored are skipped) in one transaction, or in the
        caller's open one; returns the number of chunks added. Each added chunk gets its FTS5 row: the title
        (with an event's date), the body and the low-weight context, all in :func:`index_form`.

        A uid another source holds moves to this one (a chunk's uid is its path under the memory root, its place
        and its content, so only a copy of the same file elsewhere can hold it: a moved or copied memory root).
        Left with the other source, it would go when that source goes, while this one, recorded as read, would
        never be read again."""
        with self.transaction():
            self._upsert_source(source)
            return self._add_chunks(source.path, chunks)

    def _upsert_source(self, s: SourceState) -> None:
        self.conn.execute(
            "INSERT INTO files(path, source, mtime_ns, size, content_hash, consumed, head_hash, indexed_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET source = excluded.source,"
            " mtime_ns = excluded.mtime_ns, size = excluded.size, content_hash = excluded.content_hash,"
            " consumed = excluded.consumed, head_hash = excluded.head_hash, indexed_at = excluded.indexed_at",
            (s.path, s.source, s.mtime_ns, s.size, s.content_hash, s.consumed, s.head_hash, time.time()),
        )

    def _add_chunks(self, file: str, chunks: Iterable[ChunkRow]) -> int:
        conn, added = self.conn, 0
        for c in chunks:
            conn.execute(
                "INSERT OR IGNORE INTO chunks(uid, hash, file, path, seq, kind, category, title, text, line_start,"
                " line_end, event_id, ts, session_id, project, status, speaker, reply_to)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (c.uid, c.hash, file, c.path, c.seq, c.kind, c.category, c.title, c.text, c.line_start,
                 c.line_end, c.event_id, c.ts, c.session_id, c.project, c.status, c.speaker, c.reply_to),
            )
            if conn.changes():
                conn.execute(
                    "INSERT INTO chunks_fts(rowid, title, body, context) VALUES (?, ?, ?, ?)",
                    (conn.last_insert_rowid(), index_form(fts_title(c.kind, c.title, c.ts)), index_form(c.text),
                     index_form(c.context)),
                )
                added += 1
            else:
                conn.execute("UPDATE chunks SET file = ? WHERE uid = ? AND file <> ?", (file, c.uid, file))
        return added

    def delete_source(self, path: str) -> int:
        """Remove the source at ``path`` and its chunks (their FTS rows go by trigger); returns the chunks removed.
        Vectors stay: the same content may come back at once (an edited file), see :meth:`drop_orphan_vectors`."""
        with self.transaction():
            removed = self.conn.execute("SELECT count(*) FROM chunks WHERE file = ?", (path,)).get
            self.conn.execute("DELETE FROM chunks WHERE file = ?", (path,))
            self.conn.execute("DELETE FROM files WHERE path = ?", (path,))
        return removed

    def sources(self) -> dict[str, SourceState]:
        return {r[0]: SourceState(*r) for r in self.conn.execute(f"SELECT {_SOURCE_COLUMNS} FROM files")}

    def sources_under(self, roots: Iterable[str]) -> dict[str, SourceState]:
        """The recorded sources at or below each of ``roots`` (a hook's ingest reads its own rows, not the
        whole table)."""
        found: dict[str, SourceState] = {}
        for root in roots:
            prefix = root.rstrip("/") + "/"
            rows = self.conn.execute(f"SELECT {_SOURCE_COLUMNS} FROM files WHERE path = ? OR (path >= ? AND"
                                     " path < ?)", (root, prefix, prefix[:-1] + "0"))
            found.update({r[0]: SourceState(*r) for r in rows})
        return found

    def content_hashes(self) -> dict[str, str]:
        """Each document source's content hash, by path (event logs have none)."""
        return dict(self.conn.execute("SELECT path, content_hash FROM files WHERE content_hash IS NOT NULL"))

    def previous_turn(self, session_id: str, ts: str | None) -> str:
        """The text of the latest event chunk of ``session_id`` at or before ``ts`` ('' when there is none):
        one index seek on ``chunks_session``."""
        row = self.conn.execute(
            "SELECT text FROM chunks WHERE session_id = ? AND kind = 'event' AND (? IS NULL OR ts <= ?)"
            " ORDER BY ts DESC, id DESC LIMIT 1", (session_id, ts, ts)).fetchone()
        return row[0] if row else ""

    def latest_turn(self, session_id: str, ts: str | None) -> Turn | None:
        """The latest turn (a prompt or response event) of ``session_id`` at or before ``ts``: its speaker, the
        text of its first chunk and the turn it replied to (None when there is none). Two index seeks."""
        row = self.conn.execute(
            "SELECT file, event_id, speaker, reply_to FROM chunks WHERE session_id = ? AND kind = 'event'"
            f" AND category IN ({marks(TURN_TYPES)}) AND (? IS NULL OR ts <= ?) ORDER BY ts DESC, id DESC LIMIT 1",
            (session_id, *TURN_TYPES, ts, ts)).fetchone()
        if row is None:
            return None
        file, event_id, speaker, reply = row
        first = self.conn.execute("SELECT text FROM chunks WHERE file = ? AND event_id IS ? ORDER BY seq LIMIT 1",
                                  (file, event_id)).get
        return Turn(speaker, first if isinstance(first, str) else "", reply)

    def touch_source(self, path: str, mtime_ns: int, size: int, head_hash: str | None) -> None:
        """Record a new mtime, size and head hash for a source whose content kept its offsets (an event log that
        ``forget`` rewrote in place), so the next run goes on from where it was."""
        self.conn.execute("UPDATE files SET mtime_ns = ?, size = ?, head_hash = ? WHERE path = ?",
                          (mtime_ns, size, head_hash, path))

    def source_state(self, path: str) -> SourceState | None:
        row = self.conn.execute(f"SELECT {_SOURCE_COLUMNS} FROM files WHERE path = ?", (path,)).fetchone()
        return SourceState(*row) if row else None

    # -- vectors (the Store contract) -------------------------------------------------------------------------

    def pending_embeddings(self, model: str, limit: int | None = None, after: int = 0) -> list[PendingText]:
        """One row per content hash without an embeddings row of ``model``, read from the oldest chunk holding it,
        oldest first, from chunk ids above ``after``. Each window walks the chunks by id from ``after`` with two
        index probes per row (measured at 100k chunks: a window of 256 took 130 ms by grouping all chunks by
        hash, which a run paid once per window)."""
        rows = self.conn.execute(
            "SELECT c.hash, c.title, c.text, c.speaker, c.ts, c.id, c.reply_to FROM chunks c WHERE c.id > ?"
            " AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.hash = c.hash AND e.model = ?)"
            " AND NOT EXISTS (SELECT 1 FROM chunks o WHERE o.hash = c.hash AND o.id < c.id)"
            " ORDER BY c.id LIMIT ?",
            (after, model, -1 if limit is None else limit))
        return [PendingText(*r) for r in rows]

    def put_embeddings(self, model: str, vectors: Sequence[tuple[str, Sequence[float] | bytes | None]]) -> int:
        """Store ``(hash, vector or None)`` for ``model`` in one transaction; returns how many were new.

        The local index holds the vectors of one model (:meth:`ensure_vector_model`): a vector of another model
        first replaces them all, as a change of the configured model does."""
        given = next((v for _, v in vectors if v is not None), None)
        if given is not None:
            self.ensure_vector_model(model, len(_vector_bytes(given)) // 4)
        conn, added = self.conn, 0
        with self.transaction():
            for h, vector in vectors:
                conn.execute("INSERT OR IGNORE INTO embeddings(hash, model) VALUES (?, ?)", (h, model))
                if conn.changes():
                    added += 1
                    if vector is not None:
                        conn.execute("INSERT INTO vec_chunks(rowid, embedding) VALUES (?, ?)",
                                     (conn.last_insert_rowid(), _vector_bytes(vector)))
        return added

    def ensure_vector_model(self, model: str, dim: int) -> str | None:
        """See :func:`indexer.store.sqlite.ensure_vector_model`: a note when the model changed."""
        return sqlite.ensure_vector_model(self.conn, model, dim)

    def stored_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """The vectors of ``model`` stored for ``hashes`` (a hash without one is absent): what a rebuild takes
        over from the old index."""
        if not hashes or not self.has_vectors():
            return {}
        found: dict[str, bytes] = {}
        for i in range(0, len(hashes), PIECE):
            part = list(hashes[i : i + PIECE])
            ids = dict(self.conn.execute(
                f"SELECT id, hash FROM embeddings WHERE model = ? AND hash IN ({marks(part)})", [model, *part]))
            for rowid, h in ids.items():
                row = self.conn.execute("SELECT embedding FROM vec_chunks WHERE rowid = ?", (rowid,)).fetchone()
                if row:
                    found[h] = row[0]
        return found

    def unrepresentable(self, model: str, hashes: Sequence[str]) -> set[str]:
        """Those of ``hashes`` that ``model`` was given and returned no vector for (stored with ``None``)."""
        if not hashes:
            return set()
        vec = self.has_vectors()
        found: set[str] = set()
        for i in range(0, len(hashes), PIECE):
            part = list(hashes[i : i + PIECE])
            missing = "NOT EXISTS (SELECT 1 FROM vec_chunks v WHERE v.rowid = e.id)" if vec else "1"
            found.update(r[0] for r in self.conn.execute(
                f"SELECT e.hash FROM embeddings e WHERE e.model = ? AND e.hash IN ({marks(part)}) AND {missing}",
                [model, *part]))
        return found

    def drop_orphan_vectors(self) -> int:
        """Delete the vectors whose content hash no chunk holds any more; returns how many."""
        if not self.has_vectors():
            return 0
        conn = self.conn
        with self.transaction():
            orphans = [r[0] for r in conn.execute(
                "SELECT id FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)")]
            for i in range(0, len(orphans), PIECE):
                part = orphans[i : i + PIECE]
                conn.execute(f"DELETE FROM vec_chunks WHERE rowid IN ({marks(part)})", part)
                conn.execute(f"DELETE FROM embeddings WHERE id IN ({marks(part)})", part)
            top = conn.execute("SELECT max(id) FROM embeddings").get or 0
            if orphans and max(orphans) > top:
                # the next vectors take these ids again: a warm server's in-memory matrix must load anew (the
                # epoch is part of its stamp), as after a forget; ids below the top are never given out again
                sqlite.set_meta(conn, "forget_epoch", str(int(sqlite.get_meta(conn, "forget_epoch") or 0) + 1))
        return len(orphans)

    # -- counts: status and the health of every result ------------------------------------------------------------

    def health(self, model: str | None) -> StoreHealth:
        """The Store contract's counts. ``pending_embeddings`` is :meth:`pending_estimate` (exact while no orphan
        vector is left; every run that removes chunks drops them)."""
        by_kind = dict(self.conn.execute("SELECT kind, count(*) FROM chunks GROUP BY kind ORDER BY kind"))
        chunks = sum(by_kind.values())
        vectors = 0
        if model is not None and self.has_vectors() and sqlite.get_meta(self.conn, "vector_model") == model:
            vectors = self.conn.execute("SELECT count(*) FROM vec_chunks").get
        pending = self.pending_estimate(model) if model is not None else 0
        return StoreHealth(chunks=chunks, by_kind=by_kind, sources=self.source_count(), pending_embeddings=pending,
                           vectors=vectors, own_chunks=chunks)

    def chunk_count(self) -> int:
        """From the ``counts`` the index's triggers keep (a lookup; counting the chunks is a scan)."""
        return self.kept_count("chunks")

    def kept_count(self, name: str) -> int:
        """One of the counts the triggers keep (:func:`indexer.store.sqlite.m004_counts`): ``chunks``, ``hashes``
        (distinct content hashes) or ``embeddings:<model>``; 0 when there is none of it."""
        row = self.conn.execute("SELECT n FROM counts WHERE name = ?", (name,)).fetchone()
        return row[0] if row else 0

    def source_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM files").get

    def event_chunks_by_source(self) -> dict[str, int]:
        """How many event chunks each source holds."""
        return dict(self.conn.execute("SELECT file, count(*) FROM chunks WHERE kind = 'event' GROUP BY file"))

    def pending_count(self, model: str | None) -> int:
        """Distinct content hashes without an embeddings row of ``model`` (all of them when no model is given; the
        index keeps the rows of its vectors' model only): exact, a scan of the chunks."""
        if model is None:
            return self.conn.execute("SELECT count(DISTINCT hash) FROM chunks").get
        return self.conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT hash FROM chunks) AS h WHERE NOT EXISTS"
            " (SELECT 1 FROM embeddings e WHERE e.hash = h.hash AND e.model = ?)",
            (model,),
        ).get

    def vector_mark(self, model: str) -> str:
        """Changes whenever the vectors of ``model`` do (one added, removed or replaced): the highest vector row
        id and the kept count of ``model``'s vectors. Two index-only reads."""
        top = self.conn.execute("SELECT max(id) FROM embeddings").get
        return f"{top or 0}:{self.kept_count(f'embeddings:{model}')}"

    def pending_estimate(self, model: str | None) -> int:
        """What :meth:`pending_count` says, from two kept counts: distinct chunk hashes minus the embeddings rows of
        the model. Exact while no orphan vectors are left (every run that removes chunks drops them); it is what
        every search reports in its health, so it must not cost a scan (130 ms at 100k chunks for the exact count,
        17-50 ms for the distinct hashes alone)."""
        hashes = self.kept_count("hashes")
        if model is None:
            return hashes
        return max(0, hashes - self.kept_count(f"embeddings:{model}"))

    def not_embedded(self) -> int:
        """Content hashes the index's model saw and left without a vector: text it cannot represent (CJK for an
        English-only model), which BM25 alone serves."""
        model = sqlite.get_meta(self.conn, "vector_model")
        if model is None or not self.has_vectors():
            return 0
        seen = self.conn.execute("SELECT count(*) FROM embeddings WHERE model = ?", (model,)).get
        return max(0, seen - self.conn.execute("SELECT count(*) FROM vec_chunks").get)

    def state_version(self) -> tuple[int, int]:
        """Changes whenever anything is committed to the file: another connection's commits (``data_version``)
        and this connection's own writes. Caches of counts are keyed by it."""
        return self.conn.pragma("data_version"), self.conn.total_changes()
