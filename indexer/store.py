"""The one place that opens the index database.

Opening is enough to migrate: sqlite-vec is loaded, WAL and a busy timeout are set, then the numbered
migrations ``m001_…`` run up to ``PRAGMA user_version``. Everything else gets an ``apsw.Connection`` from
:func:`connect` and never configures one itself.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable
from pathlib import Path

import apsw

from .chunktext import fts_title
from .cjk import index_form
from .errors import MemsearchError

BUSY_TIMEOUT_MS = 10_000
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"


def _sqlite_vec_path() -> str:
    """The sqlite-vec loadable extension, found without importing the package (which imports numpy)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise MemsearchError("sqlite-vec is not installed; run `make install`")
    return str(Path(next(iter(spec.submodule_search_locations))) / "vec0")


def _load_sqlite_vec(conn: apsw.Connection) -> None:
    conn.enable_load_extension(True)
    conn.load_extension(_sqlite_vec_path())
    conn.enable_load_extension(False)


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
    empty; titles are :func:`~indexer.chunktext.fts_title`. ``speaker`` (who wrote an event: the speaker its
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


MIGRATIONS: list[Callable[[apsw.Connection], None]] = [m001_initial, m002_turn_context]


def migrate(conn: apsw.Connection) -> int:
    """Run every migration above ``PRAGMA user_version``, each in its own transaction."""
    version = conn.pragma("user_version")
    for number, step in enumerate(MIGRATIONS[version:], start=version + 1):
        with conn:
            step(conn)
            conn.pragma("user_version", number)
    return len(MIGRATIONS)


def connect(db_path: Path, *, create: bool = True) -> apsw.Connection:
    """Open (and if needed create and migrate) the index at ``db_path``.

    >>> conn = connect(Path("/tmp/memsearch-doctest/index.db"))
    >>> conn.pragma("journal_mode")
    'wal'
    """
    if not create and not db_path.exists():
        raise MemsearchError(f"no index at {db_path}; run `memsearch index` first")
    db_path.parent.mkdir(parents=True, exist_ok=True)
    _create_private(db_path)
    try:
        conn = apsw.Connection(str(db_path))
        _load_sqlite_vec(conn)
        _set_pragmas(conn)
        migrate(conn)
    except apsw.Error as exc:
        raise MemsearchError(f"cannot open the index {db_path}: {exc}; delete it and run `memsearch index`") from exc
    return conn


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
    built with, the old vectors are dropped and every chunk is pending again.
    """
    current = get_meta(conn, "vector_model")
    if current == model_id and vec_table_exists(conn):
        return None
    with conn:
        conn.execute("DROP TABLE IF EXISTS vec_chunks")
        conn.execute("DELETE FROM embeddings")
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
