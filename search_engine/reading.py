"""Which index search reads, opened in one place: the local SQLite file (:class:`indexer.store.local.SqliteStore`)
today. Everything in :mod:`search_engine` reads through :func:`reading` or a store it is handed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from indexer.base.settings import Settings
from indexer.status import open_existing
from indexer.store import Store, sqlite
from indexer.store.local import SqliteStore


def open_store(settings: Settings) -> SqliteStore | None:
    """The index, or None when it was never built (reading never creates it)."""
    conn = open_existing(settings)
    return None if conn is None else SqliteStore(conn, settings.db_path)


@contextmanager
def reading(settings: Settings, store: Store | None = None) -> Iterator[Any]:
    """The index (``store`` when one is given: it stays open; else the local one, :func:`open_store`, opened here
    and closed after; None when it was never built), read under :func:`indexer.store.sqlite.damage_guard`, which
    marks the file damaged when SQLite finds it corrupt."""
    own = store is None
    if own:
        store = open_store(settings)
    try:
        with sqlite.damage_guard(settings.db_path):
            yield store
    finally:
        if own and store is not None:
            store.close()
