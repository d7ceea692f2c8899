"""The upkeep of the local index: what ``forget`` selects and removes, what ``scrub`` checks, what a rebuild
carries over and compares, the FTS merge, VACUUM, WAL checkpoint, online backup and integrity checks, and the
write transactions of a scan. The base of :class:`indexer.store.sqlite_write.SqliteWriter`, so part of
:class:`indexer.store.local.SqliteStore`; none of it is in the :class:`indexer.store.Store` contract.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, NamedTuple

import apsw

from indexer.base.chunktext import fts_title
from indexer.base.cjk import index_form
from indexer.base.errors import MemsearchError
from indexer.store import ChunkRow, sqlite

if TYPE_CHECKING:  # the prompt hook opens the store and never checks it: no report types on its path
    from indexer.base.reports import IndexCheck

_STORED_COLUMNS = ("id, uid, kind, category, title, text, path, line_start, line_end, event_id, ts, session_id,"
                   " project, file, seq, hash, status, speaker, reply_to")
#: Bound parameters per statement when a list of ids or hashes is sent in pieces (SQLite allows 32766).
PIECE = 500


class StoredChunk(NamedTuple):
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
    reply_to: str = ""


def marks(values: Sequence) -> str:
    """``?,?,…``: one placeholder per value."""
    return ",".join("?" * len(values))


class SqliteUpkeep:
    """What the local index needs beside the store contract (see the module docstring)."""

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

    def has_vectors(self) -> bool:
        """Whether the vector table exists (a BM25-only index has none)."""
        return sqlite.vec_table_exists(self.conn)

    # -- chunks as stored ---------------------------------------------------------------------------------------

    def source_chunks(self, path: str) -> list[StoredChunk]:
        """The chunks of the source at ``path``, in order."""
        return [StoredChunk(*r) for r in self.conn.execute(
            f"SELECT {_STORED_COLUMNS} FROM chunks WHERE file = ? ORDER BY seq", (path,))]

    def chunk_rows(self, path: str) -> list[ChunkRow]:
        """The chunks of the source at ``path`` as :class:`~indexer.store.ChunkRow` (what another store's
        :meth:`~indexer.store.Store.write_batch` takes, for ``memsearch sync``), in order; an event's ``context`` is
        the text of the event before it in its session (by time, then id), as the writer indexed it."""
        return [ChunkRow(*r) for r in self.conn.execute(
            "SELECT c.uid, c.hash, c.kind, c.text, c.path, c.seq, c.category, c.title, c.line_start, c.line_end,"
            " c.event_id, c.ts, c.session_id, c.project, c.status, c.speaker,"
            " CASE WHEN c.kind = 'event' AND c.session_id IS NOT NULL THEN coalesce((SELECT p.text FROM chunks p"
            "  WHERE p.session_id = c.session_id AND p.kind = 'event' AND p.id <> c.id"
            "  AND (p.ts < c.ts OR (p.ts IS c.ts AND p.id < c.id)) ORDER BY p.ts DESC, p.id DESC LIMIT 1), '')"
            " ELSE '' END, c.reply_to"
            " FROM chunks c WHERE c.file = ? ORDER BY c.seq", (path,))]

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
        for i in range(0, len(values), PIECE):
            part = values[i : i + PIECE]
            rows += self._stored([*conds, f"{column} IN ({marks(part)})"], [*params, *part])
        return sorted(rows, key=lambda r: (r.ts is not None, r.ts or "", r.id))  # ORDER BY ts, id (NULL first)

    def _stored(self, conds: list[str], params: list) -> list[StoredChunk]:
        where = " AND ".join(conds) or "1"
        return [StoredChunk(*r) for r in self.conn.execute(
            f"SELECT {_STORED_COLUMNS} FROM chunks WHERE {where} ORDER BY ts, id", params)]

    def delete_uids(self, uids: Sequence[str]) -> int:
        """Delete the chunks with these ids (:meth:`delete_chunks`); ``forget`` itself does more (the logs, the
        turn context, tombstones)."""
        return self.delete_chunks([r.id for r in self.stored_chunks(uids=list(uids))]) if uids else 0

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
                rows = list(conn.execute(
                    "SELECT id, kind, title, ts, text, lag(text, 1, '') OVER (ORDER BY ts, id) FROM chunks"
                    " WHERE kind = 'event' AND session_id = ?", (session,)))
                for cid, kind, title, ts, text, context in rows:
                    conn.execute("UPDATE counts SET n = n + 1 WHERE name = 'removed'")  # see m004_counts
                    conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (cid,))
                    conn.execute("INSERT INTO chunks_fts(rowid, title, body, context) VALUES (?, ?, ?, ?)",
                                 (cid, index_form(fts_title(kind, title, ts)), index_form(text),
                                  index_form(context)))

    def set_replies(self, changes: Iterable[tuple[int, str, str, str]]) -> None:
        """Give chunks (row id) the turn they reply to, with the hash and uid that go with it: ``(id, reply_to,
        hash, uid)`` each. Their FTS rows do not change (the reply is not indexed for BM25)."""
        with self.transaction():
            self.conn.executemany("UPDATE chunks SET reply_to = ?, hash = ?, uid = ? WHERE id = ?",
                                  [(reply, h, uid, cid) for cid, reply, h, uid in changes])

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
        for i in range(0, len(event_ids), PIECE):
            part = list(event_ids[i : i + PIECE])
            known |= {r[0] for r in self.conn.execute(
                f"SELECT event_id FROM chunks WHERE event_id IN ({marks(part)})", part)}
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
        busy, _, _ = self.conn.execute(f"PRAGMA wal_checkpoint({mode})").get  # always one row
        return not busy

    def page_size(self) -> int:
        return self.conn.pragma("page_size")

    def copy_from(self, source: SqliteUpkeep, retries: int = 20) -> bool:
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

    def quick_check(self) -> list[str]:
        """SQLite's ``quick_check``: ``["ok"]``, or the problems it found."""
        return [row[0] for row in self.conn.execute("PRAGMA quick_check")]

    def check(self) -> IndexCheck:
        """SQLite's and FTS5's integrity checks, and whether the chunk, FTS and vector tables agree row for row."""
        conn = self.conn
        try:
            with self.transaction():  # FTS5's 'integrity-check' is a write: it waits for other writers
                conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 0)")
            fts_integrity = "ok"
        except apsw.BusyError:  # another writer held the file past the busy timeout: no verdict, not damage
            raise MemsearchError("the index stayed busy with another writer during its integrity check; nothing "
                                 "was changed by the check: run it again") from None
        except apsw.Error as exc:
            fts_integrity = f"{type(exc).__name__}: {exc}"
        # after FTS5's own check, which reloads the table's structure: on a connection that read the table before
        # another connection rewrote it (a full re-index), PRAGMA integrity_check alone reported "fts5: corruption
        # found reading blob" where a fresh connection found none
        integrity = "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check(20)"))

        def one(sql: str) -> int:
            return conn.execute(sql).get

        has_vectors = self.has_vectors()
        from indexer.base.reports import IndexCheck

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
            miscounted=self._miscounted(),
        )

    def recount(self) -> None:
        """Set the kept counts from a count of the rows (the triggers keep them exact; a hand edit could not)."""
        with self.transaction():
            self.conn.execute(sqlite.RECOUNT)

    def _miscounted(self) -> tuple[str, ...]:
        """The kept counts (:func:`indexer.store.sqlite.m004_counts`) that differ from a recount, by name."""
        counted = {"chunks": self.conn.execute("SELECT count(*) FROM chunks").get,
                   "hashes": self.conn.execute("SELECT count(DISTINCT hash) FROM chunks").get}
        counted |= {f"embeddings:{model}": n
                    for model, n in self.conn.execute("SELECT model, count(*) FROM embeddings GROUP BY model")}
        kept = {name: n for name, n in self.conn.execute("SELECT name, n FROM counts WHERE name <> 'removed'")
                if n or name in counted}
        return tuple(sorted(name for name in counted.keys() | kept.keys() if counted.get(name, 0) != kept.get(name, 0)))
