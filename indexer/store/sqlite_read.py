"""What search reads from the local index: the BM25 list (FTS5), the vector candidates (sqlite-vec), hit rows,
and what browsing and status count. Part of :class:`indexer.store.local.SqliteStore`."""

from __future__ import annotations

import apsw


class SqliteReader:
    """The reading half of :class:`indexer.store.local.SqliteStore`."""

    conn: apsw.Connection
