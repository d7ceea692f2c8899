"""What the indexer writes to the local index: sources and their chunks (with the FTS5 rows), embeddings, and
what forget, scrub and maintenance remove or check. Part of :class:`indexer.store.local.SqliteStore`.

The :class:`indexer.store.Store` methods come first (sources and chunks, then vectors); then what only the local
index needs: the write batches of a scan, the turn context of events, what ``forget`` selects and deletes, the
upkeep of the file (FTS merge, VACUUM, WAL checkpoint, online backup, integrity), and last the counts that
``status`` and every result's health report.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import apsw

from indexer.base.chunktext import fts_title
from indexer.base.cjk import index_form
from indexer.base.types import IndexCheck
from indexer.store import ChunkRow, PendingText, SourceState, StoreHealth, sqlite

_SOURCE_COLUMNS = "path, source, mtime_ns, size, content_hash, consumed, head_hash"
_STORED_COLUMNS = ("id, uid, kind, category, title, text, path, line_start, line_end, event_id, ts, session_id,"
                   " project, file, seq, hash, status, speaker")
#: Bound parameters per statement when a list of ids or hashes is sent in pieces (SQLite allows 32766).
_PIECE = 500


@dataclass(frozen=True)
class StoredChunk:
    """A chunk as the local index holds it: its row id, the source it came from (``file``, absolute) and its
    place in it (``seq``); what ``forget`` lists and what a rebuild carries over from the old index."""

    id: int
    uid: str
    kind: str
    category: str
    title: str
    text: str
    path: str
    line_start: int | None
    line_end: int | None
    event_id: str | None
    ts: str | None
    session_id: str | None
    project: str | None
    file: str
    seq: int
    hash: str
    status: str | None = None
    speaker: str | None = None


def _vector_bytes(vector: Sequence[float] | bytes) -> bytes:
    """sqlite-vec takes float32 bytes (what the embedders return); a sequence of floats is packed."""
    if isinstance(vector, (bytes, bytearray, memoryview)):
        return bytes(vector)
    return array("f", vector).tobytes()


def _marks(values: Sequence) -> str:
    return ",".join("?" * len(values))


class SqliteWriter:
    """The writing half of :class:`indexer.store.local.SqliteStore`."""

    conn: apsw.Connection

    # -- transactions -------------------------------------------------------------------------------------------

    def transaction(self) -> AbstractContextManager:
        """One transaction for a multi-statement write, or nothing new inside an open one (a scan's batch, see
        :class:`indexer.batches.WriteBatches`): a savepoint would make FTS5 flush a segment per file."""
        return nullcontext() if self.conn.in_transaction else self.conn

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def begin(self) -> None:
        """Open a write transaction now (``IMMEDIATE``: other writers wait under the busy timeout)."""
        self.conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        self.conn.execute("ROLLBACK")

    # -- sources and chunks (the Store contract) ------------------------------------------------------------------

    def write_batch(self, source: SourceState, chunks: Sequence[ChunkRow]) -> int:
        """Record ``source`` and add ``chunks`` (uids already stored are skipped) in one transaction, or in the
        caller's open one; returns the number of chunks added. Each added chunk gets its FTS5 row: the title
        (with an event's date), the body and the low-weight context, all in :func:`index_form`."""
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
                " line_end, event_id, ts, session_id, project, status, speaker)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (c.uid, c.hash, file, c.path, c.seq, c.kind, c.category, c.title, c.text, c.line_start,
                 c.line_end, c.event_id, c.ts, c.session_id, c.project, c.status, c.speaker),
            )
            if conn.changes():
                conn.execute(
                    "INSERT INTO chunks_fts(rowid, title, body, context) VALUES (?, ?, ?, ?)",
                    (conn.last_insert_rowid(), index_form(fts_title(c.kind, c.title, c.ts)), index_form(c.text),
                     index_form(c.context)),
                )
                added += 1
        return added

    def delete_source(self, path: str) -> int:
        """Remove the source at ``path`` and its chunks (their FTS rows go by trigger); returns the chunks removed.
        Vectors stay: the same content may come back at once (an edited file), see :meth:`drop_orphan_vectors`."""
        with self.transaction():
            removed = self.conn.execute("SELECT count(*) FROM chunks WHERE file = ?", (path,)).fetchone()[0]
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

    def source_chunks(self, path: str) -> list[StoredChunk]:
        """The chunks of the source at ``path``, in order."""
        return [StoredChunk(*r) for r in self.conn.execute(
            f"SELECT {_STORED_COLUMNS} FROM chunks WHERE file = ? ORDER BY seq", (path,))]

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
            "SELECT c.hash, c.title, c.text, c.speaker, c.ts, c.id FROM chunks c WHERE c.id > ?"
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

    def has_vectors(self) -> bool:
        """Whether the vector table exists (a BM25-only index has none)."""
        return sqlite.vec_table_exists(self.conn)

    def stored_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """The vectors of ``model`` stored for ``hashes`` (a hash without one is absent): what a rebuild takes
        over from the old index."""
        if not hashes or not self.has_vectors():
            return {}
        found: dict[str, bytes] = {}
        for i in range(0, len(hashes), _PIECE):
            part = list(hashes[i : i + _PIECE])
            ids = dict(self.conn.execute(
                f"SELECT id, hash FROM embeddings WHERE model = ? AND hash IN ({_marks(part)})", [model, *part]))
            for rowid, h in ids.items():
                row = self.conn.execute("SELECT embedding FROM vec_chunks WHERE rowid = ?", (rowid,)).fetchone()
                if row:
                    found[h] = row[0]
        return found

    def drop_orphan_vectors(self) -> int:
        """Delete the vectors whose content hash no chunk holds any more; returns how many."""
        if not self.has_vectors():
            return 0
        conn = self.conn
        with self.transaction():
            orphans = [r[0] for r in conn.execute(
                "SELECT id FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)")]
            for i in range(0, len(orphans), _PIECE):
                part = orphans[i : i + _PIECE]
                conn.execute(f"DELETE FROM vec_chunks WHERE rowid IN ({_marks(part)})", part)
                conn.execute(f"DELETE FROM embeddings WHERE id IN ({_marks(part)})", part)
        return len(orphans)

    # -- what forget selects and removes -------------------------------------------------------------------------

    def ids_of(self, value: str) -> list[int]:
        """Row ids of the chunk whose id is ``value`` or of the chunks of the event ``value``."""
        return [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE uid = ? OR event_id = ?",
                                                (value, value))]

    def ids_with_prefix(self, prefix: str, limit: int = 2) -> list[int]:
        """Row ids of up to ``limit`` chunks whose id starts with the lower-case hex ``prefix``."""
        return [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE uid >= ? AND uid < ? LIMIT ?",
                                                (prefix, prefix + "g", limit))]

    def stored_chunks(self, *, ids: Sequence[int] | None = None, uids: Sequence[str] | None = None,
                      session: str | None = None, project: str | None = None, since: str | None = None,
                      before: str | None = None, file: str | None = None, event_id: str | None = None,
                      kind: str | None = None) -> list[StoredChunk]:
        """The chunks matching every condition given (``since`` inclusive, ``before`` exclusive), by time then
        id. ``ids`` or ``uids`` (one of them) are sent in pieces, so any number of them is fine."""
        conds, params = [], []
        for column, value in (("session_id", session), ("project", project), ("file", file),
                              ("event_id", event_id), ("kind", kind)):
            if value is not None:
                conds.append(f"{column} = ?")
                params.append(value)
        if since:
            conds.append("ts >= ?")
            params.append(since)
        if before:
            conds.append("ts < ?")
            params.append(before)
        if ids is not None and uids is not None:
            raise ValueError("select by ids or by uids, not both")
        if ids is None and uids is None:
            return self._stored(conds, params)
        column, values = ("id", list(ids)) if ids is not None else ("uid", list(uids or ()))
        rows: list[StoredChunk] = []
        for i in range(0, len(values), _PIECE):
            part = values[i : i + _PIECE]
            rows += self._stored([*conds, f"{column} IN ({_marks(part)})"], [*params, *part])
        return sorted(rows, key=lambda r: (r.ts is not None, r.ts or "", r.id))  # ORDER BY ts, id (NULL first)

    def _stored(self, conds: list[str], params: list) -> list[StoredChunk]:
        where = " AND ".join(conds) or "1"
        return [StoredChunk(*r) for r in self.conn.execute(
            f"SELECT {_STORED_COLUMNS} FROM chunks WHERE {where} ORDER BY ts, id", params)]

    def delete_chunks(self, ids: Iterable[int]) -> int:
        """Delete chunks by row id with FTS5's secure delete on, so their terms leave the FTS index's segments
        too (not only the chunk rows); in the caller's transaction or one of its own."""
        conn, removed = self.conn, 0
        with self.transaction():
            conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('secure-delete', 1)")
            for cid in ids:
                conn.execute("DELETE FROM chunks WHERE id = ?", (cid,))
                removed += conn.changes()
            conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('secure-delete', 0)")
        return removed

    def refresh_turn_context(self, sessions: Iterable[str]) -> None:
        """Re-index the FTS rows of the events of ``sessions``: each event's context column holds the text of the
        turn before it, which may have been removed."""
        conn = self.conn
        with self.transaction():
            for session in sorted(sessions):
                rows = conn.execute(
                    "SELECT id, kind, title, ts, text, lag(text, 1, '') OVER (ORDER BY ts, id) FROM chunks"
                    " WHERE kind = 'event' AND session_id = ?", (session,)).fetchall()
                for cid, kind, title, ts, text, context in rows:
                    conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (cid,))
                    conn.execute("INSERT INTO chunks_fts(rowid, title, body, context) VALUES (?, ?, ?, ?)",
                                 (cid, index_form(fts_title(kind, title, ts)), index_form(text),
                                  index_form(context)))

    def session_of_source(self, path: str) -> str | None:
        """The session id the chunks of the source at ``path`` carry (a session summary's), if any."""
        row = self.conn.execute("SELECT session_id FROM chunks WHERE file = ? AND session_id IS NOT NULL LIMIT 1",
                                (path,)).fetchone()
        return row[0] if row else None

    def session_events(self, session_id: str) -> list[StoredChunk]:
        """The event chunks of one session, by time then place: what its summary is built from."""
        return [StoredChunk(*r) for r in self.conn.execute(
            f"SELECT {_STORED_COLUMNS} FROM chunks WHERE kind = 'event' AND session_id = ? ORDER BY ts, seq",
            (session_id,))]

    def known_event_ids(self, event_ids: Sequence[str]) -> set[str]:
        """Which of ``event_ids`` some chunk already holds."""
        known: set[str] = set()
        for i in range(0, len(event_ids), _PIECE):
            part = list(event_ids[i : i + _PIECE])
            known |= {r[0] for r in self.conn.execute(
                f"SELECT event_id FROM chunks WHERE event_id IN ({_marks(part)})", part)}
        return known

    def chunk_texts(self) -> Iterator[tuple[str, str]]:
        """(title, text) of every chunk, streamed: what ``scrub`` checks against the current filter."""
        return iter(self.conn.execute("SELECT title, text FROM chunks"))

    def snapshot(self) -> tuple[dict[str, str], set[str]]:
        """Each source's state (content hash and bytes consumed) and every chunk id, to compare two indexes."""
        files = dict(self.conn.execute("SELECT path, coalesce(content_hash, '') || ':' || consumed FROM files"))
        return files, {row[0] for row in self.conn.execute("SELECT uid FROM chunks")}

    # -- upkeep of the file ---------------------------------------------------------------------------------------

    def optimize_fts(self) -> None:
        """Merge the FTS5 segments into one (no segment keeps the terms of deleted rows)."""
        with self.transaction():
            self.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")

    def vacuum(self) -> None:
        """Rebuild the file (with ``secure_delete`` on, as every connection has it): freed pages leave it."""
        self.conn.pragma("secure_delete", True)
        self.conn.execute("VACUUM")

    def checkpoint(self, mode: str = "TRUNCATE") -> bool:
        """Copy the WAL into the database file (``TRUNCATE``: and empty the WAL); False when a reader kept it
        busy."""
        if mode not in ("PASSIVE", "FULL", "RESTART", "TRUNCATE"):
            raise ValueError(mode)
        busy, _, _ = self.conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        return not busy

    def page_size(self) -> int:
        return self.conn.pragma("page_size")

    def copy_from(self, source: SqliteWriter, retries: int = 20) -> bool:
        """Replace this database's content with ``source``'s by SQLite's online backup, in one write transaction
        that waits for the write lock like any writer; returns False when it stayed busy through ``retries``."""
        for attempt in range(retries):
            try:
                with self.conn.backup("main", source.conn, "main") as backup:
                    backup.step(-1)
                break
            except apsw.BusyError:
                if attempt == retries - 1:
                    return False
                time.sleep(0.1 * (attempt + 1))
        self.checkpoint("PASSIVE")
        return True

    def check(self) -> IndexCheck:
        """SQLite's and FTS5's integrity checks, and whether the chunk, FTS and vector tables agree row for row."""
        conn = self.conn
        integrity = "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check(20)"))
        try:
            with self.transaction():
                conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 0)")
            fts_integrity = "ok"
        except apsw.Error as exc:
            fts_integrity = f"{type(exc).__name__}: {exc}"

        def one(sql: str) -> int:
            return conn.execute(sql).fetchone()[0]

        has_vectors = self.has_vectors()
        return IndexCheck(
            integrity=integrity,
            fts_integrity=fts_integrity,
            chunks=one("SELECT count(*) FROM chunks"),
            fts_rows=one("SELECT count(*) FROM chunks_fts_docsize"),
            chunks_without_fts=one("SELECT count(*) FROM chunks WHERE id NOT IN (SELECT id FROM chunks_fts_docsize)"),
            fts_without_chunk=one("SELECT count(*) FROM chunks_fts_docsize WHERE id NOT IN (SELECT id FROM chunks)"),
            embeddings=one("SELECT count(*) FROM embeddings"),
            vectors=one("SELECT count(*) FROM vec_chunks") if has_vectors else 0,
            embeddings_without_vector=one(
                "SELECT count(*) FROM embeddings WHERE id NOT IN (SELECT rowid FROM vec_chunks)"
            ) if has_vectors else one("SELECT count(*) FROM embeddings"),
            vectors_without_embedding=one(
                "SELECT count(*) FROM vec_chunks WHERE rowid NOT IN (SELECT id FROM embeddings)"
            ) if has_vectors else 0,
            orphan_embeddings=one("SELECT count(*) FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)"),
        )

    # -- counts: status and the health of every result ------------------------------------------------------------

    def health(self, model: str | None) -> StoreHealth:
        """The Store contract's counts. ``pending_embeddings`` is :meth:`pending_estimate` (exact while no orphan
        vector is left; every run that removes chunks drops them)."""
        by_kind = dict(self.conn.execute("SELECT kind, count(*) FROM chunks GROUP BY kind ORDER BY kind"))
        chunks = sum(by_kind.values())
        vectors = 0
        if model is not None and self.has_vectors() and sqlite.get_meta(self.conn, "vector_model") == model:
            vectors = self.conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0]
        return StoreHealth(chunks=chunks, by_kind=by_kind, sources=self.source_count(),
                           pending_embeddings=self.pending_estimate(model) if model else 0, vectors=vectors, own_chunks=chunks)

    def chunk_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]

    def source_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM files").fetchone()[0]

    def event_chunks_by_source(self) -> dict[str, int]:
        """How many event chunks each source holds."""
        return dict(self.conn.execute("SELECT file, count(*) FROM chunks WHERE kind = 'event' GROUP BY file"))

    def pending_count(self, model: str | None) -> int:
        """Distinct content hashes without a vector of ``model`` (all of them when the index's vectors are of
        another model, or no model is given): exact, a scan of the chunks."""
        if model is None or sqlite.get_meta(self.conn, "vector_model") != model:
            return self.conn.execute("SELECT count(DISTINCT hash) FROM chunks").fetchone()[0]
        return self.conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT hash FROM chunks) AS h WHERE NOT EXISTS"
            " (SELECT 1 FROM embeddings e WHERE e.hash = h.hash AND e.model = ?)",
            (model,),
        ).fetchone()[0]

    def pending_estimate(self, model: str | None) -> int:
        """What :meth:`pending_count` says, from two index-only counts: distinct chunk hashes minus the vectors of
        the model. Exact while no orphan vectors are left (every run that removes chunks drops them); it is what
        every search reports in its health, so it must not cost a scan (130 ms at 100k chunks for the exact
        count)."""
        hashes = self.conn.execute("SELECT count(DISTINCT hash) FROM chunks").fetchone()[0]
        if model is None or sqlite.get_meta(self.conn, "vector_model") != model:
            return hashes
        vectors = self.conn.execute("SELECT count(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]
        return max(0, hashes - vectors)

    def not_embedded(self) -> int:
        """Content hashes the index's model saw and left without a vector: text it cannot represent (CJK for an
        English-only model), which BM25 alone serves."""
        model = sqlite.get_meta(self.conn, "vector_model")
        if model is None or not self.has_vectors():
            return 0
        seen = self.conn.execute("SELECT count(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]
        return max(0, seen - self.conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0])

    def state_version(self) -> tuple[int, int]:
        """Changes whenever anything is committed to the file: another connection's commits (``data_version``)
        and this connection's own writes. Caches of counts are keyed by it."""
        return self.conn.pragma("data_version"), self.conn.total_changes()
