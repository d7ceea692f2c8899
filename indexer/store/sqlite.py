"""The one place that opens the index database.

Opening is enough to migrate: sqlite-vec is loaded, WAL and a busy timeout are set, then the numbered
migrations ``m001_…`` run up to ``PRAGMA user_version``. Everything else gets an ``apsw.Connection`` from
:func:`connect` and never configures one itself.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import apsw

from indexer.base.chunktext import fts_title
from indexer.base.cjk import index_form
from indexer.base.errors import IndexCorrupt, MemsearchError
from indexer.base.private import private_dirs

BUSY_TIMEOUT_MS = 10_000
#: How long opening waits out a "disk I/O error" (the -wal deleted under the warm server, which then lets go).
WAL_RETRY_SECONDS = 3.0
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"


def _sqlite_vec_path() -> str:
    """The sqlite-vec loadable extension, found without importing the package (which imports numpy)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise MemsearchError("sqlite-vec is not installed; run `make install`")
    return str(Path(next(iter(spec.submodule_search_locations))) / "vec0")


def load_sqlite_vec(conn: apsw.Connection) -> None:
    """Load sqlite-vec into ``conn`` (every connection to the index has it; ``memsearch doctor`` probes it)."""
    conn.enable_load_extension(True)
    conn.load_extension(_sqlite_vec_path())
    conn.enable_load_extension(False)


class EngineProbe(NamedTuple):
    """What ``memsearch doctor`` reports of the SQLite engine: sqlite-vec's version (or why it does not load) and
    whether FTS5 with the porter tokenizer is compiled in."""

    sqlite_version: str
    vec_version: str | None
    vec_error: str
    fts5_error: str | None


def probe_engine() -> EngineProbe:
    """Load sqlite-vec and create an FTS5 table in a memory database."""
    conn = apsw.Connection(":memory:")
    vec_version, vec_error, fts5_error = None, "", None
    try:
        load_sqlite_vec(conn)
        vec_version = str(conn.execute("SELECT vec_version()").get)
    except Exception as exc:  # any failure to load the extension is the finding itself
        vec_error = str(exc)
    try:
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FTS_TOKENIZE}')")
    except apsw.Error as exc:
        fts5_error = str(exc)
    conn.close()
    return EngineProbe(apsw.sqlite_lib_version(), vec_version, vec_error, fts5_error)


def _set_pragmas(conn: apsw.Connection) -> None:
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.pragma("journal_mode", "wal")
    conn.pragma("synchronous", "normal")
    conn.pragma("foreign_keys", True)
    conn.pragma("temp_store", "memory")
    # deleted rows are overwritten with zeros, so text `memsearch forget` removed (or b-tree balancing moved)
    # leaves no copy in the file's free space
    conn.pragma("secure_delete", True)


def m001_initial(conn: apsw.Connection) -> None:
    conn.execute(
        f"""
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
        CREATE TABLE files(
            path TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            content_hash TEXT,
            consumed INTEGER NOT NULL DEFAULT 0,
            head_hash TEXT,
            indexed_at REAL NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE chunks(
            id INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            hash TEXT NOT NULL,
            file TEXT NOT NULL REFERENCES files(path) ON DELETE CASCADE,
            path TEXT NOT NULL,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            category TEXT NOT NULL DEFAULT '',
            title TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,
            line_start INTEGER,
            line_end INTEGER,
            event_id TEXT,
            ts TEXT,
            session_id TEXT,
            project TEXT,
            status TEXT
        );
        CREATE INDEX chunks_file ON chunks(file, seq);
        CREATE INDEX chunks_hash ON chunks(hash);
        CREATE INDEX chunks_ts ON chunks(ts);
        CREATE INDEX chunks_session ON chunks(session_id);
        CREATE INDEX chunks_event ON chunks(event_id);
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            title, body, content='', contentless_delete=1, tokenize='{FTS_TOKENIZE}'
        );
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
            DELETE FROM chunks_fts WHERE rowid = old.id;
        END;
        CREATE TABLE embeddings(
            id INTEGER PRIMARY KEY,
            hash TEXT NOT NULL,
            model TEXT NOT NULL,
            UNIQUE(hash, model)
        );
        """
    )


def m002_turn_context(conn: apsw.Connection) -> None:
    """Events get the previous turn of their session as a third, low-weight FTS column, their date in the FTS
    title, and who spoke.

    ``chunks_fts`` is contentless, so it is recreated as (title, body, context) and refilled from ``chunks``: an
    event's context is the text of the event chunk before it in the same session (by time, then id), a note's is
    empty; titles are :func:`~indexer.base.chunktext.fts_title`. ``speaker`` (who wrote an event: the speaker its
    metadata names, else its role) is filled when the events are next re-chunked (the chunker version changed with
    this migration), since it changes what an event is embedded as and so its content hash. The session index
    gains ``ts`` so the previous turn is one index seek.
    """
    conn.execute(
        f"""
        ALTER TABLE chunks ADD COLUMN speaker TEXT;
        DROP INDEX chunks_session;
        CREATE INDEX chunks_session ON chunks(session_id, ts);
        DROP TRIGGER chunks_fts_delete;
        DROP TABLE chunks_fts;
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            title, body, context, content='', contentless_delete=1, tokenize='{FTS_TOKENIZE}'
        );
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
            DELETE FROM chunks_fts WHERE rowid = old.id;
        END;
        """
    )
    rows = conn.execute(
        "SELECT id, kind, title, ts, text, CASE WHEN kind = 'event' AND session_id IS NOT NULL THEN"
        " lag(text, 1, '') OVER (PARTITION BY kind = 'event', session_id ORDER BY ts, id) ELSE '' END FROM chunks"
    )
    conn.executemany(
        "INSERT INTO chunks_fts(rowid, title, body, context) VALUES (?, ?, ?, ?)",
        ((cid, index_form(fts_title(kind, title, ts)), index_form(text), index_form(context))
         for cid, kind, title, ts, text, context in rows),
    )


def m003_reply_to(conn: apsw.Connection) -> None:
    """Events are embedded with the turn they reply to (:func:`~indexer.base.chunktext.reply_of`), kept in a new
    column, ``reply_to``. Existing chunks hold '' in it, which is what their hash and vector were made of, so the
    index stays consistent; the events get their reply and their new hash when they are next re-chunked (the
    chunker version changed with this migration: the next ``memsearch index`` or ``maintain`` does it), and each
    is embedded once more. Notes and facts keep their hash and their vector."""
    conn.execute("ALTER TABLE chunks ADD COLUMN reply_to TEXT NOT NULL DEFAULT ''")


def m004_counts(conn: apsw.Connection) -> None:
    """The counts every result's health carries, kept by triggers as rows change (``counts``: the chunks, their
    distinct content hashes, the embeddings rows of each model), so reading them costs a lookup. Counted, they cost
    a scan: at 100k chunks ``count(DISTINCT hash)`` held the warm server 17-50 ms after each prompt it indexed, and
    ``count(*)`` a cold prompt hook 2-14 ms. A hash is counted while any chunk holds it (an index seek per row
    written); the weekly ``maintain`` checks them against a recount and sets them from it. ``removed`` counts the
    chunks deleted and the FTS rows rewritten, ever: the warm server's in-memory BM25 postings
    (:mod:`indexer.store.lexicon`) are read anew when it moves."""
    conn.execute(
        """
        CREATE TABLE counts(name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TRIGGER chunks_count_insert AFTER INSERT ON chunks BEGIN
            UPDATE counts SET n = n + 1 WHERE name = 'chunks';
            UPDATE counts SET n = n + 1 WHERE name = 'hashes'
                AND NOT EXISTS (SELECT 1 FROM chunks WHERE hash = new.hash AND id != new.id);
        END;
        CREATE TRIGGER chunks_count_delete AFTER DELETE ON chunks BEGIN
            UPDATE counts SET n = n - 1 WHERE name = 'chunks';
            UPDATE counts SET n = n + 1 WHERE name = 'removed';
            UPDATE counts SET n = n - 1 WHERE name = 'hashes'
                AND NOT EXISTS (SELECT 1 FROM chunks WHERE hash = old.hash);
        END;
        CREATE TRIGGER chunks_count_rehash AFTER UPDATE OF hash ON chunks WHEN old.hash IS NOT new.hash BEGIN
            UPDATE counts SET n = n - 1 WHERE name = 'hashes'
                AND NOT EXISTS (SELECT 1 FROM chunks WHERE hash = old.hash);
            UPDATE counts SET n = n + 1 WHERE name = 'hashes'
                AND NOT EXISTS (SELECT 1 FROM chunks WHERE hash = new.hash AND id != new.id);
        END;
        CREATE TRIGGER embeddings_count_insert AFTER INSERT ON embeddings BEGIN
            INSERT OR IGNORE INTO counts VALUES ('embeddings:' || new.model, 0);
            UPDATE counts SET n = n + 1 WHERE name = 'embeddings:' || new.model;
        END;
        CREATE TRIGGER embeddings_count_delete AFTER DELETE ON embeddings BEGIN
            UPDATE counts SET n = n - 1 WHERE name = 'embeddings:' || old.model;
        END;
        CREATE TRIGGER embeddings_count_model AFTER UPDATE OF model ON embeddings WHEN old.model IS NOT new.model
        BEGIN
            UPDATE counts SET n = n - 1 WHERE name = 'embeddings:' || old.model;
            INSERT OR IGNORE INTO counts VALUES ('embeddings:' || new.model, 0);
            UPDATE counts SET n = n + 1 WHERE name = 'embeddings:' || new.model;
        END;
        """
    )
    conn.execute("INSERT INTO counts VALUES ('removed', 0)")
    conn.execute(RECOUNT)


#: Sets the kept counts from a count of the rows (:func:`m004_counts`); ``removed`` is not a count of rows.
RECOUNT = """
    DELETE FROM counts WHERE name <> 'removed';
    INSERT INTO counts VALUES ('chunks', (SELECT count(*) FROM chunks)),
                              ('hashes', (SELECT count(DISTINCT hash) FROM chunks));
    INSERT INTO counts SELECT 'embeddings:' || model, count(*) FROM embeddings GROUP BY model;
"""


MIGRATIONS: list[Callable[[apsw.Connection], None]] = [m001_initial, m002_turn_context, m003_reply_to,
                                                       m004_counts]


def migrate(conn: apsw.Connection) -> int:
    """Run every migration above ``PRAGMA user_version``, each in its own transaction."""
    version = conn.pragma("user_version")
    for number, step in enumerate(MIGRATIONS[version:], start=version + 1):
        with conn:
            step(conn)
            conn.pragma("user_version", number)
    return len(MIGRATIONS)


def connect(db_path: Path, *, create: bool = True, io_wait: float = WAL_RETRY_SECONDS) -> apsw.Connection:
    """Open (and if needed create and migrate) the index at ``db_path``.

    A "disk I/O error" is waited out for up to ``io_wait`` seconds: it is what every process sees while the warm
    server still holds a ``-wal`` deleted under it, until the server lets go (within half a second). Anything
    else SQLite refuses is one line saying why (:func:`open_error`).

    >>> conn = connect(Path("/tmp/memsearch-doctest/index.db"))
    >>> conn.pragma("journal_mode")
    'wal'
    """
    if not create and not db_path.exists():
        raise MemsearchError(f"no index at {db_path}; run `memsearch index` first")
    private_dirs(db_path.parent)
    _create_private(db_path)
    deadline = time.monotonic() + io_wait
    while True:
        if wal_behind(db_path):
            if time.monotonic() < deadline:
                time.sleep(0.1)  # the warm server lets go of a deleted -wal within half a second
                continue
            raise MemsearchError(f"{db_path}-wal was deleted while a process (`memsearch serve`?) still holds the "
                                 "index open; stop it (`memsearch serve --stop`) and try again")
        conn = None
        try:
            conn = apsw.Connection(str(db_path))
            load_sqlite_vec(conn)
            _set_pragmas(conn)
            migrate(conn)
            return conn
        except apsw.Error as exc:
            if conn is not None:
                conn.close()
            if type(exc) is apsw.IOError and time.monotonic() < deadline and not disk_full(db_path.parent):
                # its -wal deleted while the warm server holds the index open: the server lets go within a second
                time.sleep(0.1)
                continue
            raise open_error(db_path, exc) from exc


def connect_read_only(db_path: Path) -> apsw.Connection | None:
    """The index opened for reading only, on a memory root memsearch cannot write (a read-only mount); None when
    that cannot be done safely.

    A WAL database normally needs its ``-shm`` file written even to read. Opened as immutable it does not, and that
    is safe only when nothing waits in the ``-wal`` (the last writer closed cleanly: the file is gone or empty),
    since an immutable connection ignores it; nobody can write the file while its folder is read-only.
    """
    wal = Path(f"{db_path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return None
    conn = None
    try:
        conn = apsw.Connection(f"file:{quote(str(db_path))}?immutable=1",
                               flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        load_sqlite_vec(conn)
        if conn.pragma("user_version") != len(MIGRATIONS):
            conn.close()
            return None
        return conn
    except apsw.Error as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
            raise open_error(db_path, exc) from exc
        return None


def damage_marker(db_path: Path) -> Path:
    """A file saying the index was found damaged while reading it: the next ``memsearch index`` rebuilds it."""
    return Path(f"{db_path}-damaged")


@contextmanager
def damage_guard(db_path: Path) -> Iterator[None]:
    """Turn SQLite's "malformed" and "not a database" into :class:`IndexCorrupt` (one line saying how to
    rebuild; an I/O error and a full disk are one line too), and leave :func:`damage_marker` behind so that
    ``memsearch index`` knows to rebuild: a damaged page may sit where an incremental run never reads."""
    try:
        yield
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        mark_damaged(db_path)
        raise open_error(db_path, exc) from exc
    except apsw.FullError as exc:  # at a COMMIT as often as at a write
        raise open_error(db_path, exc) from exc
    except apsw.IOError as exc:  # not damage: a failing disk, or a -wal deleted under the warm server
        raise MemsearchError(f"cannot read the index {db_path}: {exc}; try again, and if it persists run "
                             "`memsearch doctor`") from exc


def mark_damaged(db_path: Path) -> None:
    """Leave :func:`damage_marker` (best effort: a read-only or full disk is said elsewhere)."""
    try:
        os.close(os.open(damage_marker(db_path), os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:
        pass


def wal_behind(db_path: Path) -> bool:
    """Whether the shared WAL index (``-shm``) counts more WAL frames than the ``-wal`` file holds: the ``-wal``
    was deleted while a connection (the warm server's) kept the index open. Reading then fails with "disk I/O
    error" as soon as a page of a missing frame is needed, so opening waits instead.

    The header at the start of ``-shm`` (two copies, native byte order): ``isInit`` at byte 12, the page size at
    14 (u16), ``mxFrame``, the last valid frame, at 16 (u32). The WAL holds a 32-byte header, then frames of a
    24-byte header and one page. A writer appends its frames before it counts them, so a healthy WAL is never
    shorter; two copies that differ are a header being written, not a verdict.

    Never in a process that already holds the index open (the warm server): closing any descriptor of a file
    drops every POSIX lock the process holds on it, SQLite's own included, and another process could then reset
    the shared memory under the server's map (a bus error). Such a process has SQLite's own view of the WAL.
    """
    target = os.path.realpath(db_path)
    for held in apsw.connections():
        try:
            name = held.filename
        except apsw.ThreadingViolationError:
            return False  # busy in another thread (the warm server's, a sync's): this process holds an index open
        except apsw.ConnectionClosedError:
            continue  # closed by another thread since it was listed (a search ending beside a sync): it holds nothing
        if name and os.path.realpath(name) == target:
            return False
    try:
        with open(f"{db_path}-shm", "rb") as f:
            head = f.read(96)
    except OSError:
        return False
    try:
        wal_size = os.path.getsize(f"{db_path}-wal")
    except FileNotFoundError:
        wal_size = 0
    except OSError:
        return False
    if len(head) < 96 or head[:48] != head[48:96] or not head[12]:
        return False
    page = int.from_bytes(head[14:16], sys.byteorder)
    page = 65536 if page == 1 else page
    frames = int.from_bytes(head[16:20], sys.byteorder)
    return frames > 0 and wal_size < 32 + frames * (24 + page)


def open_error(db_path: Path, exc: apsw.Error) -> MemsearchError:
    """What an index that SQLite cannot open means for the user, in one line."""
    if isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
        return IndexCorrupt(f"the index {db_path} is damaged ({exc}); it is derived data: `memsearch index` "
                            "rebuilds it from your sources", cause=str(exc))
    folder = db_path.parent
    if isinstance(exc, (apsw.CantOpenError, apsw.ReadOnlyError, apsw.IOError, apsw.FullError)) and not os.access(
            folder, os.W_OK):
        return MemsearchError(f"cannot open the index {db_path}: {folder} is not writable (a read-only file system "
                              "or another user's folder); memsearch needs to write there")
    if isinstance(exc, apsw.FullError) or (isinstance(exc, apsw.IOError) and disk_full(folder)):
        # a full disk fails the open as an I/O error: the -shm SQLite maps cannot be made or grown
        return MemsearchError(f"cannot write the index {db_path}: the disk is full; free some space and try again")
    return MemsearchError(f"cannot open the index {db_path}: {exc}; stop `memsearch serve` if it runs and try "
                          "again, or delete the index and run `memsearch index` (it is rebuilt from your sources)")


def disk_full(folder: Path) -> bool:
    """Whether the file system holding ``folder`` has no block left (to this user, or to root either)."""
    try:
        space = os.statvfs(folder)
    except OSError:
        return False
    return (space.f_bfree if os.geteuid() == 0 else space.f_bavail) == 0


def _create_private(db_path: Path) -> None:
    """Create a missing index file readable by its owner only (SQLite gives its -wal and -shm the same mode): it
    holds the memory's text, and the warm server's socket is private for the same reason."""
    try:
        os.close(os.open(db_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def get_meta(conn: apsw.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: apsw.Connection, key: str, value: str | None) -> None:
    if value is None:
        conn.execute("DELETE FROM meta WHERE key = ?", (key,))
    else:
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def vec_table_exists(conn: apsw.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vec_chunks'").fetchone()
    return row is not None


def ensure_vector_model(conn: apsw.Connection, model_id: str, dim: int) -> str | None:
    """Make the vector table hold vectors of ``model_id``; returns a note when the model changed.

    Vectors of two models are never mixed: when the model (or its dimension) differs from the one the table was
    built with, the old vectors are dropped and every chunk is pending again. What ``model_id`` itself recorded as
    content it cannot represent (rows without a vector) is kept.
    """
    current = get_meta(conn, "vector_model")
    if current == model_id and vec_table_exists(conn):
        return None
    with conn:
        conn.execute("DROP TABLE IF EXISTS vec_chunks")
        if current == model_id:  # its vector table was lost: so were the vectors its rows stand for
            conn.execute("DELETE FROM embeddings")
        else:
            conn.execute("DELETE FROM embeddings WHERE model <> ?", (model_id,))
        conn.execute(
            f"CREATE VIRTUAL TABLE vec_chunks USING vec0(embedding float[{int(dim)}] distance_metric=cosine)"
        )
        set_meta(conn, "vector_model", model_id)
        set_meta(conn, "vector_dim", str(dim))
    if current is None:
        return None
    return f"model changed from {current} to {model_id}: all chunks will be re-embedded"


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
