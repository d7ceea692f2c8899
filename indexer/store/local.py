"""The local index as a :class:`indexer.store.Store`: one SQLite file with FTS5 for BM25 and sqlite-vec for vectors.

Opening the file (pragmas, sqlite-vec, migrations) is :mod:`indexer.store.sqlite`; what the indexer writes is
:class:`indexer.store.sqlite_write.SqliteWriter`, what search reads :class:`indexer.store.sqlite_read.SqliteReader`.
Together they are the only place SQL runs on the local index.
"""

from __future__ import annotations

from pathlib import Path

import apsw

from indexer.store import sqlite
from indexer.store.sqlite_read import SqliteReader
from indexer.store.sqlite_write import SqliteWriter


class SqliteStore(SqliteWriter, SqliteReader):
    """The local index. Built on an open connection (the warm server keeps one) or by :meth:`open`."""

    def __init__(self, conn: apsw.Connection, db_path: Path | None = None):
        self.conn = conn
        self.db_path = db_path if db_path is not None else Path(conn.filename)

    @classmethod
    def open(cls, db_path: Path, *, create: bool = True, io_wait: float = sqlite.WAL_RETRY_SECONDS) -> SqliteStore:
        """Open (create and migrate if needed) the index at ``db_path``; see :func:`indexer.store.sqlite.connect`."""
        return cls(sqlite.connect(db_path, create=create, io_wait=io_wait), db_path)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get_meta(self, key: str) -> str | None:
        return sqlite.get_meta(self.conn, key)

    def set_meta(self, key: str, value: str | None) -> None:
        sqlite.set_meta(self.conn, key, value)


def as_store(conn: apsw.Connection | SqliteStore) -> SqliteStore:
    """A store on ``conn`` for callers that still hold a bare connection (the warm server's), or ``conn`` itself."""
    return conn if isinstance(conn, SqliteStore) else SqliteStore(conn)
