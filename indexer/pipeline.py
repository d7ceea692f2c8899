"""Incremental indexing: discover, skip what is unchanged, re-chunk what changed, drop what was deleted, then
embed only content hashes the current model has never embedded.

The contract (DESIGN §3): a second run over unchanged sources reads no file contents (mtime and size say they
are unchanged) and embeds nothing; an edited file re-chunks and only its new chunk hashes reach the model;
a deleted file's chunks disappear; event logs are read from the byte offset where the last run stopped; a change
of chunker settings rebuilds the chunks and a change of model re-embeds everything rather than mix vectors.
A source that cannot be read is reported and skipped, and whatever it had in the index stays there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

import apsw
import xxhash

from indexer import tombstones
from indexer.base.chunktext import content_hash, embed_input, fts_title
from indexer.base.cjk import index_form, model_reads
from indexer.base.embedder import Embedder, load_embedder, resolve_model
from indexer.base.errors import IndexCorrupt, MemsearchError
from indexer.base.locks import LockTimeout, file_lock
from indexer.base.paths import WRITER_LOCK
from indexer.base.private import private_dirs
from indexer.base.settings import Settings
from indexer.base.types import IndexReport, Skipped
from indexer.chunker import CHUNKER_VERSION
from indexer.sources import (
    MAX_FILE_BYTES,
    PARSERS,
    Draft,
    SourceError,
    decode,
    discover,
    parse_event_bytes,
    path_context,
)
from indexer.store import sqlite as store
from indexer.tombstones import Tombstones, chunk_key

Progress = Callable[[str, int, int], None]
EVENT_BLOCK = 8 * 1024 * 1024
HEAD_BYTES = 4096
AUTO = object()
#: A scan writes in transactions of about this many chunks or seconds, whichever comes first (below).
COMMIT_CHUNKS = 2000
COMMIT_SECONDS = 1.0
#: Chunks read, embedded (the embedder sorts them by length into batches) and committed at a time.
EMBED_WINDOW = 256


def display_path(path: Path, home: Path) -> str:
    try:
        return path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


class _Batches:
    """One write transaction over many files, committed every :data:`COMMIT_CHUNKS` chunks or
    :data:`COMMIT_SECONDS` seconds. A commit per file cost 15% of BM25-only indexing (FTS5 flushes a segment at
    every commit, and at every savepoint too, so files join the batch without one). A file still lands whole or
    not at all, with its batch: an error rolls the open batch back, and a crash loses at most that batch, whose
    files are read again by the next run. Other writers (the server storing vectors) wait about a second at most
    under the busy timeout."""

    def __init__(self, conn: apsw.Connection, run: _Run) -> None:
        self.conn, self.run = conn, run

    def __enter__(self) -> _Batches:
        self._open()
        return self

    def _open(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.mark = self._written()
        self.since = time.monotonic()

    def _written(self) -> int:
        return self.run.counts["added"] + self.run.counts["removed"]

    def maybe_commit(self) -> None:
        if self._written() - self.mark >= COMMIT_CHUNKS or time.monotonic() - self.since >= COMMIT_SECONDS:
            self.conn.execute("COMMIT")
            self._open()

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


@dataclass
class _Run:
    settings: Settings
    conn: apsw.Connection
    full: bool
    progress: Progress | None
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("scanned", "changed", "unchanged", "deleted", "added", "removed"), 0))
    skipped: list[Skipped] = field(default_factory=list)
    last_turn: dict[str, str] = field(default_factory=dict)  # session id -> its latest event chunk's text
    _stones: Tombstones | None = None

    @property
    def stones(self) -> Tombstones:
        """The chunks of the user's notes that ``forget`` hides, read when a changed note first needs them (a run
        that finds nothing changed reads no file)."""
        if self._stones is None:
            self._stones = tombstones.load(self.settings.state_dir)
        return self._stones

    def writes(self):
        """The transaction for one file's writes: inside a scan's batch (see :class:`_Batches`) they simply join
        it (a savepoint per file would make FTS5 flush a segment per file); alone, they get their own."""
        return nullcontext() if self.conn.in_transaction else self.conn

    # -- chunks ---------------------------------------------------------------------------------------------
    def insert(self, key: str, rel: str, drafts: Iterable[Draft]) -> int:
        conn, added = self.conn, 0
        for d in drafts:
            h = content_hash(d.title, d.text, d.speaker, d.ts)
            uid = xxhash.xxh3_64_hexdigest(f"{rel}\0{d.seq}\0{h}".encode("utf-8", "surrogatepass"))[:12]
            context = self.context(d)  # before the insert, which would otherwise find the chunk itself
            conn.execute(
                "INSERT OR IGNORE INTO chunks(uid, hash, file, path, seq, kind, category, title, text, line_start,"
                " line_end, event_id, ts, session_id, project, status, speaker)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (uid, h, key, rel, d.seq, d.kind, d.category, d.title, d.text, d.line_start, d.line_end,
                 d.event_id, d.ts, d.session_id, d.project, d.status, d.speaker),
            )
            if conn.changes():
                conn.execute(
                    "INSERT INTO chunks_fts(rowid, title, body, context) VALUES (?, ?, ?, ?)",
                    (conn.last_insert_rowid(), index_form(fts_title(d.kind, d.title, d.ts)), index_form(d.text),
                     index_form(context)),
                )
                added += 1
        self.counts["added"] += added
        return added

    def context(self, d: Draft) -> str:
        """The text of the turn before event ``d`` in its session, indexed as ``d``'s low-weight context column:
        a reply ("Yes, twice a week") is then found by the words of the question it answers. Notes have none.

        The previous turn is the session's last event chunk inserted by this run, or, for the first event of a
        session in a run (an incremental run, a hook's ingest), the latest one already indexed: one index seek
        per session and run, none per row.
        """
        if d.kind != "event" or not d.session_id:
            return ""
        previous = self.last_turn.get(d.session_id)
        if previous is None:
            row = self.conn.execute(
                "SELECT text FROM chunks WHERE session_id = ? AND kind = 'event' AND (? IS NULL OR ts <= ?)"
                " ORDER BY ts DESC, id DESC LIMIT 1", (d.session_id, d.ts, d.ts)).fetchone()
            previous = row[0] if row else ""
        self.last_turn[d.session_id] = d.text
        return previous

    def remove_file_chunks(self, key: str) -> None:
        removed = self.conn.execute("SELECT count(*) FROM chunks WHERE file = ?", (key,)).fetchone()[0]
        self.conn.execute("DELETE FROM chunks WHERE file = ?", (key,))
        self.counts["removed"] += removed

    def upsert_file(self, key: str, source: str, st, content: str | None, consumed: int, head: str | None) -> None:
        self.conn.execute(
            "INSERT INTO files(path, source, mtime_ns, size, content_hash, consumed, head_hash, indexed_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET source = excluded.source,"
            " mtime_ns = excluded.mtime_ns, size = excluded.size, content_hash = excluded.content_hash,"
            " consumed = excluded.consumed, head_hash = excluded.head_hash, indexed_at = excluded.indexed_at",
            (key, source, st.st_mtime_ns, st.st_size, content, consumed, head, time.time()),
        )

    def skip(self, rel: str, reason: str) -> None:
        self.skipped.append(Skipped(rel, reason))

    # -- sources --------------------------------------------------------------------------------------------
    def index_document(self, path: Path, key: str, rel: str, source: str, st, row) -> None:
        if st.st_size > MAX_FILE_BYTES:
            self.skip(rel, f"too large ({st.st_size / 1e6:.1f} MB > {MAX_FILE_BYTES / 1e6:.0f} MB)")
            return
        data = path.read_bytes()
        digest = xxhash.xxh3_128_hexdigest(data)
        if row is not None and not self.full and row[2] == digest:
            with self.writes():
                self.upsert_file(key, source, st, digest, 0, None)
            self.counts["unchanged"] += 1
            return
        s = self.settings
        try:
            text = decode(data)
            parsed = PARSERS[source](path, text, path_context(path, s.home), s.chunk_chars, s.chunk_overlap)
        except SourceError as exc:
            self.skip(rel, str(exc))
            return
        for problem in parsed.problems:
            self.skip(rel, problem)
        drafts = parsed.drafts
        if key in self.stones.notes:
            drafts = [d for d in drafts if not self.stones.is_hidden(key, digest, chunk_key(d.title, d.text),
                                                                     (d.line_start, d.line_end))]
        with self.writes():
            self.remove_file_chunks(key)
            self.upsert_file(key, source, st, digest, 0, None)
            self.insert(key, rel, drafts)
        self.counts["changed"] += 1

    def index_events(self, path: Path, key: str, rel: str, st, row) -> None:
        s = self.settings
        with path.open("rb") as f:
            head_now = f.read(HEAD_BYTES)
            start = 0
            if row is not None and not self.full and st.st_size >= row[3] and row[3] > 0:
                prefix = head_now[: min(row[3], HEAD_BYTES)]
                if xxhash.xxh3_64_hexdigest(prefix) == row[4]:
                    start = row[3]
            f.seek(start)
            consumed = start
            first = True
            while True:
                block = f.read(EVENT_BLOCK)
                if not block:
                    break
                last_nl = block.rfind(b"\n")
                if last_nl >= 0 and len(block) == EVENT_BLOCK:
                    f.seek(consumed + last_nl + 1)
                    block = block[: last_nl + 1]
                parsed = parse_event_bytes(block, consumed, s.chunk_chars, s.chunk_overlap)
                for problem in parsed.problems:
                    self.skip(rel, problem)
                with self.writes():
                    if first and start == 0:
                        self.remove_file_chunks(key)
                    consumed += parsed.consumed
                    head = xxhash.xxh3_64_hexdigest(head_now[: min(consumed, HEAD_BYTES)])
                    self.upsert_file(key, "events", st, None, consumed, head)
                    self.insert(key, rel, parsed.drafts)
                first = False
                if parsed.consumed < len(block):
                    if len(block) >= EVENT_BLOCK and parsed.consumed == 0:
                        self.skip(rel, f"line at byte {consumed}: longer than {EVENT_BLOCK // 2**20} MiB, skipped")
                        consumed = _skip_line(f, consumed)
                        continue
                    break
            if first:  # an empty file
                with self.writes():
                    if start == 0:
                        self.remove_file_chunks(key)
                    self.upsert_file(key, "events", st, None, consumed, xxhash.xxh3_64_hexdigest(b""))
        self.counts["changed"] += 1

    def index_file(self, path: Path, source: str, known: dict[str, tuple]) -> None:
        key = str(path)
        rel = display_path(path, self.settings.home)
        self.counts["scanned"] += 1
        try:
            st = path.stat()
            row = known.get(key)
            if row is not None and not self.full and row[0] == st.st_mtime_ns and row[1] == st.st_size:
                self.counts["unchanged"] += 1
                return
            if source == "events":
                self.index_events(path, key, rel, st, row)
            else:
                self.index_document(path, key, rel, source, st, row)
        except OSError as exc:
            self.skip(rel, f"cannot read: {exc.strerror or exc}")


def _skip_line(f, offset: int) -> int:
    """Seek past the line starting at ``offset``; returns the offset after it."""
    f.seek(offset)
    while True:
        block = f.read(EVENT_BLOCK)
        if not block:
            return f.tell()
        nl = block.find(b"\n")
        if nl >= 0:
            f.seek(offset + nl + 1)
            return offset + nl + 1
        offset += len(block)


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


def _in_scope(key: str, scope: list[Path]) -> bool:
    return any(key == str(p) or key.startswith(str(p).rstrip("/") + "/") for p in scope)


def pending_hashes(conn: apsw.Connection, model_id: str) -> list[tuple[str, int]]:
    """(hash, a chunk id holding it) for every content hash without a vector of ``model_id``."""
    return conn.execute(
        "SELECT hash, min(id) FROM chunks WHERE hash NOT IN (SELECT hash FROM embeddings WHERE model = ?)"
        " GROUP BY hash ORDER BY min(id)",
        (model_id,),
    ).fetchall()


def pending_count(conn: apsw.Connection, model_id: str | None) -> int:
    if model_id is None or store.get_meta(conn, "vector_model") != model_id:
        return conn.execute("SELECT count(DISTINCT hash) FROM chunks").fetchone()[0]
    return conn.execute(
        "SELECT count(*) FROM (SELECT DISTINCT hash FROM chunks) AS h WHERE NOT EXISTS"
        " (SELECT 1 FROM embeddings e WHERE e.hash = h.hash AND e.model = ?)",
        (model_id,),
    ).fetchone()[0]


def pending_estimate(conn: apsw.Connection, model_id: str | None) -> int:
    """What :func:`pending_count` says, from two index-only counts: distinct chunk hashes minus the vectors of
    the model. Exact while no orphan vectors are left (every run that removes chunks drops them); it is what every
    search reports in its health, so it must not cost a scan (130 ms at 100k chunks for the exact count)."""
    hashes = conn.execute("SELECT count(DISTINCT hash) FROM chunks").fetchone()[0]
    if model_id is None or store.get_meta(conn, "vector_model") != model_id:
        return hashes
    vectors = conn.execute("SELECT count(*) FROM embeddings WHERE model = ?", (model_id,)).fetchone()[0]
    return max(0, hashes - vectors)


def embed_pending(
    conn: apsw.Connection, embedder: Embedder, *, batch: int = 256, progress: Progress | None = None,
    limit: int | None = None,
) -> tuple[int, str | None]:
    """Embed every chunk hash the model has not embedded; returns (count, note about a model change)."""
    note = store.ensure_vector_model(conn, embedder.model_id, embedder.dim)
    todo = pending_hashes(conn, embedder.model_id)
    if limit is not None:
        todo = todo[:limit]
    done = 0
    for i in range(0, len(todo), batch):
        part = todo[i : i + batch]
        ids = [chunk_id for _, chunk_id in part]
        marks = ",".join("?" * len(ids))
        rows = {r[0]: r[1:] for r in conn.execute(
            f"SELECT id, hash, title, text, speaker, ts FROM chunks WHERE id IN ({marks})", ids)}
        # Another writer (an ingest, a full rebuild swapped in) may have replaced a chunk since the list was made:
        # embed only chunks that still hold the hash, so a vector is never stored under another content's hash.
        part = [(h, cid) for h, cid in part if cid in rows and rows[cid][0] == h]
        # Text the model cannot represent (CJK for an English-only model) gets an embeddings row and no vector:
        # it is no longer pending, the vector list never sees noise for it, and BM25 carries it (JSQuAD: 56.5 s
        # of embedding for vectors no CJK query used).
        unread = [(h, cid) for h, cid in part if not model_reads(embedder.model_id, rows[cid][2])]
        part = [(h, cid) for h, cid in part if model_reads(embedder.model_id, rows[cid][2])]
        texts = [embed_input(*rows[chunk_id][1:]) for _, chunk_id in part]
        vectors = embedder.embed_passages(texts) if texts else []
        with conn:
            for h, _ in unread:
                conn.execute("INSERT OR IGNORE INTO embeddings(hash, model) VALUES (?, ?)", (h, embedder.model_id))
            for (h, _), vector in zip(part, vectors):
                conn.execute("INSERT OR IGNORE INTO embeddings(hash, model) VALUES (?, ?)", (h, embedder.model_id))
                if conn.changes():
                    conn.execute(
                        "INSERT INTO vec_chunks(rowid, embedding) VALUES (?, ?)", (conn.last_insert_rowid(), vector)
                    )
        done += len(part) + len(unread)
        if progress:
            progress("embed", done, len(todo))
    return done, note


def drop_orphan_vectors(conn: apsw.Connection) -> int:
    """Vectors whose content hash no chunk holds any more."""
    if not store.vec_table_exists(conn):
        return 0
    with conn:
        orphans = [r[0] for r in conn.execute(
            "SELECT id FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)")]
        for i in range(0, len(orphans), 500):
            part = orphans[i : i + 500]
            marks = ",".join("?" * len(part))
            conn.execute(f"DELETE FROM vec_chunks WHERE rowid IN ({marks})", part)
            conn.execute(f"DELETE FROM embeddings WHERE id IN ({marks})", part)
    return len(orphans)


def index(
    settings: Settings,
    paths: list[Path] | None = None,
    *,
    full: bool = False,
    embedder: Embedder | None | object = AUTO,
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
    """
    try:
        if store.damage_marker(settings.db_path).exists():
            raise IndexCorrupt("an earlier command found a malformed page")
        with store.damage_guard(settings.db_path):
            return _index(settings, paths, full, embedder, progress, lock_timeout)
    except IndexCorrupt as exc:
        from indexer.rebuild import rebuild  # the rebuild builds on this module

        report = rebuild(settings, embedder=embedder, progress=progress, lock_timeout=lock_timeout)
        note = f"the index was damaged ({exc.cause}); it is derived data and was rebuilt from the sources"
        return replace(report, model_note="; ".join(filter(None, (note, report.model_note))))


def _index(settings: Settings, paths, full: bool, embedder, progress, lock_timeout: float) -> IndexReport:
    started = time.perf_counter()
    private_dirs(settings.state_dir)
    conn = store.connect(settings.db_path)
    try:
        try:
            with file_lock(settings.state_dir / WRITER_LOCK, lock_timeout):
                run, notes = _scan(settings, conn, paths, full, progress)
        except LockTimeout:
            raise MemsearchError(
                f"another memsearch index run holds {settings.state_dir / WRITER_LOCK}; wait for it and try again"
            ) from None
        embedded, model_id = 0, None
        if embedder is AUTO:
            choice = resolve_model(settings)
            model_id = choice.model_id
            if not choice.available:
                notes.append(f"BM25 only: {choice.reason}")
            elif pending_count(conn, model_id):
                embedder = load_embedder(settings)
            else:
                embedder = None
        if embedder is not None and embedder is not AUTO:
            model_id = embedder.model_id
            embedded, note = embed_pending(conn, embedder, batch=max(EMBED_WINDOW, settings.embed_batch),
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
            chunks_pending=pending_count(conn, model_id),
            model=model_id,
            model_note="; ".join(notes) or None,
            full=run.full,
            seconds=round(time.perf_counter() - started, 3),
            last_indexed=store.get_meta(conn, "last_indexed"),
        )
    finally:
        conn.close()


def _scan(settings: Settings, conn: apsw.Connection, paths, full: bool, progress) -> tuple[_Run, list[str]]:
    chunker = f"{CHUNKER_VERSION}:{settings.chunk_chars}:{settings.chunk_overlap}"
    notes: list[str] = []
    recorded = store.get_meta(conn, "chunker")
    # A scoped run (a hook's ingest) re-chunks only its own files, so it leaves the change for the next full scan.
    rechunk = recorded not in (None, chunker) and not paths
    if rechunk:
        full = True
        notes.append("chunker settings changed: every source re-chunked")
    run = _Run(settings, conn, full, progress)
    scope = [p.absolute() for p in paths] if paths else source_roots(settings)
    for p in scope:
        if not p.exists():
            run.skip(str(p), "does not exist")
    columns = "SELECT path, mtime_ns, size, content_hash, consumed, head_hash FROM files"
    if paths:  # a scoped run (a hook's ingest) reads only its own rows, not the whole table
        known = {}
        for p in scope:
            prefix = str(p).rstrip("/") + "/"
            rows = conn.execute(f"{columns} WHERE path = ? OR (path >= ? AND path < ?)",
                                (str(p), prefix, prefix[:-1] + "0"))
            known.update({r[0]: r[1:] for r in rows})
    else:
        known = {r[0]: r[1:] for r in conn.execute(columns)}
    found = list(discover([p for p in scope if p.exists()], source_roots(settings),
                          lambda p, why: run.skip(display_path(p, settings.home), why)))
    seen = {str(path) for path, _ in found}
    # Gone first: a file that is no longer found, or (in a full run) that no longer lies under any source, as
    # when the memory root moved. Its chunks must leave before the files that replace it arrive, because a chunk's
    # id comes from its path relative to the root and the same note at its new place would collide with them.
    gone = [k for k in known if k not in seen and (not paths or _in_scope(k, scope))]
    with _Batches(conn, run) as batches:
        for key in gone:
            run.remove_file_chunks(key)
            conn.execute("DELETE FROM files WHERE path = ?", (key,))
            batches.maybe_commit()
        run.counts["deleted"] = len(gone)
        for i, (path, source) in enumerate(found):
            run.index_file(path, source, known)
            batches.maybe_commit()
            if progress and (i % 50 == 0 or i == len(found) - 1):
                progress("scan", i + 1, len(found))
        if recorded is None or not paths:
            store.set_meta(conn, "chunker", chunker)
        store.set_meta(conn, "last_indexed", store.now_iso())
    if run.counts["removed"]:
        drop_orphan_vectors(conn)
    if not paths and tombstones.path(settings.state_dir).exists() and run.stones.notes:
        # a whole scan knows every file: a tombstone whose file changed (or went) has lapsed
        current = dict(conn.execute("SELECT path, content_hash FROM files WHERE content_hash IS NOT NULL"))
        if run.stones.prune(current):
            tombstones.save(settings.state_dir, run.stones)
    return run, notes


def ingest(settings: Settings, paths: list[Path], *, lock_timeout: float = 0.2) -> bool:
    """Index just ``paths`` for BM25, fast, for hooks: no embedding, no report. Returns False when another run
    holds the writer lock (that run, or the next one, picks the sources up).

    A path that is, or lies under, a symlink leading out of the memory root and the extra sources (a linked
    ``events/`` folder or log) is not read: ``memsearch index`` and the server refuse it too.
    """
    paths = inside_sources(settings, paths)
    if not paths:
        return True
    if not settings.db_path.exists():
        private_dirs(settings.state_dir)
    conn = store.connect(settings.db_path, io_wait=lock_timeout)  # a hook does not wait out a deleted -wal
    try:
        with file_lock(settings.state_dir / WRITER_LOCK, lock_timeout), store.damage_guard(settings.db_path):
            _scan(settings, conn, paths, False, None)
        return True
    except LockTimeout:
        return False
    finally:
        conn.close()
