"""What the indexer writes to the local index: sources and their chunks (with the FTS5 rows), embeddings, and
what forget, scrub and maintenance remove. Part of :class:`indexer.store.local.SqliteStore`."""

from __future__ import annotations

import apsw


class SqliteWriter:
    """The writing half of :class:`indexer.store.local.SqliteStore`."""

    conn: apsw.Connection
