"""What the index holds and what it would use: the health every result carries, and ``memsearch status``."""

from __future__ import annotations

import os
from typing import Any
from weakref import WeakKeyDictionary

import apsw

from indexer.base import lost
from indexer.base.embedder import ModelChoice, resolve_model
from indexer.base.errors import IndexCorrupt, MemsearchError
from indexer.base.settings import Settings
from indexer.base.types import Health
from indexer.store import sqlite as store


def open_existing(settings: Settings) -> apsw.Connection | None:
    """The index connection, or None when it was never built (reading never creates it). On a memory root that
    cannot be written (a read-only mount), read-only when that is safe (see :func:`store.connect_read_only`)."""
    if not settings.db_path.exists():
        return None
    try:
        return store.connect(settings.db_path)
    except IndexCorrupt:
        raise
    except MemsearchError:
        if os.access(settings.db_path.parent, os.W_OK):
            raise
        conn = store.connect_read_only(settings.db_path)
        if conn is None:
            raise
        return conn


#: The last health computed on a connection, with the state it was computed for: a long-lived connection (the
#: server's) answers many searches between two writes, and the counts cost ~25 ms at 100k chunks.
_LAST: WeakKeyDictionary[apsw.Connection, tuple[tuple, Health]] = WeakKeyDictionary()


def health(conn: apsw.Connection | None, choice: ModelChoice) -> Health:
    if conn is None:
        return Health(False, 0, 0, None, choice.model_id, choice.available, choice.reason)
    # data_version changes when another connection commits; total_changes() counts this connection's own writes
    state = (conn.pragma("data_version"), conn.total_changes(), choice.model_id, choice.available, choice.reason)
    last = _LAST.get(conn)
    if last is not None and last[0] == state:
        return last[1]
    _LAST[conn] = (state, result := _compute_health(conn, choice))
    return result


def _compute_health(conn: apsw.Connection, choice: ModelChoice) -> Health:
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    pending = 0
    if choice.available:
        # imported here: a BM25 search (the prompt hook's cold path) needs none of the indexer
        from indexer.pipeline import pending_estimate

        pending = pending_estimate(conn, choice.model_id)
    return Health(
        index_exists=store.get_meta(conn, "last_indexed") is not None,
        chunks=chunks,
        pending_embeddings=pending,
        last_indexed=store.get_meta(conn, "last_indexed"),
        model=choice.model_id,
        model_available=choice.available,
        model_reason=choice.reason,
    )


def _gate(settings: Settings) -> dict[str, Any]:
    """Whether capture and injection apply in the current project, and why not (see indexer.optout)."""
    from indexer.base.settings import project_dir
    from indexer.optout import gate

    return {"project": str(project_dir()), **gate(settings).as_dict()}


def not_embedded(conn: apsw.Connection) -> int:
    """Content hashes the index's model saw and left without a vector: text it cannot represent (CJK for an
    English-only model), which BM25 alone serves."""
    model = store.get_meta(conn, "vector_model")
    if model is None or not store.vec_table_exists(conn):
        return 0
    seen = conn.execute("SELECT count(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]
    return max(0, seen - conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0])


def status(settings: Settings) -> dict[str, Any]:
    """Resolved paths and settings, the model, chunk counts by kind, pending embeddings, last index, sizes."""
    choice = resolve_model(settings)
    conn = open_existing(settings)
    with store.damage_guard(settings.db_path):
        return _status(settings, choice, conn)


def _status(settings: Settings, choice: ModelChoice, conn: apsw.Connection | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "home": str(settings.home),
        "db_path": str(settings.db_path),
        "index_exists": conn is not None,
        "settings": settings.describe(),
        "capture": _gate(settings),
        "model": {
            "available": choice.available,
            "id": choice.model_id,
            "name": choice.name,
            "source": choice.source,
            "path": str(choice.path) if choice.path else None,
            "reason": choice.reason,
        },
    }
    lost_events = lost.summary(settings.state_dir)
    out["lost_events"] = lost_events and {**lost_events, "note": lost.describe(lost_events)}
    if conn is None:
        out.update(chunks=0, chunks_by_kind={}, files=0, pending_embeddings=0, not_embedded=0, last_indexed=None,
                   db_bytes=0, index_model=None)
        return out
    try:
        by_kind = dict(conn.execute("SELECT kind, count(*) FROM chunks GROUP BY kind ORDER BY kind").fetchall())
        h = health(conn, choice)
        out.update(
            chunks=h.chunks,
            chunks_by_kind=by_kind,
            files=conn.execute("SELECT count(*) FROM files").fetchone()[0],
            pending_embeddings=h.pending_embeddings,
            not_embedded=not_embedded(conn),
            last_indexed=h.last_indexed,
            index_model=store.get_meta(conn, "vector_model"),
            db_bytes=sum(p.stat().st_size for p in settings.db_path.parent.glob(settings.db_path.name + "*")),
        )
    finally:
        conn.close()
    return out
