"""What the index holds and what it would use: the health every result carries, and ``memsearch status``."""

from __future__ import annotations

import os
from typing import Any
from weakref import WeakKeyDictionary

import apsw

from indexer.base import lost
from indexer.base.embedder import ModelChoice, resolve_model
from indexer.base.errors import IndexCorrupt, MemsearchError
from indexer.base.settings import Settings, root_problem
from indexer.base.types import Health
from indexer.store import sqlite as store
from indexer.store.local import SqliteStore, as_store


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


def health(index: SqliteStore | apsw.Connection | None, choice: ModelChoice) -> Health:
    """What every result says of the index it came from (cached per connection until anything is written)."""
    if index is None:
        return Health(False, 0, 0, None, choice.model_id, choice.available, choice.reason)
    local = as_store(index)
    state = (local.state_version(), choice.model_id, choice.available, choice.reason)
    last = _LAST.get(local.conn)
    if last is not None and last[0] == state:
        return last[1]
    _LAST[local.conn] = (state, result := _compute_health(local, choice))
    return result


def _compute_health(local: SqliteStore, choice: ModelChoice) -> Health:
    chunks = local.chunk_count()
    pending = local.pending_estimate(choice.model_id) if choice.available else 0
    last_indexed = local.get_meta("last_indexed")
    return Health(
        index_exists=last_indexed is not None,
        chunks=chunks,
        pending_embeddings=pending,
        last_indexed=last_indexed,
        model=choice.model_id,
        model_available=choice.available,
        model_reason=choice.reason,
    )


def _gate(settings: Settings) -> dict[str, Any]:
    """Whether capture and injection apply in the current project, and why not (see indexer.optout)."""
    from indexer.base.settings import project_dir
    from indexer.optout import gate

    return {"project": str(project_dir()), **gate(settings).as_dict()}


def not_embedded(index: SqliteStore | apsw.Connection) -> int:
    """Content hashes the index's model saw and left without a vector (see
    :meth:`indexer.store.sqlite_write.SqliteWriter.not_embedded`)."""
    return as_store(index).not_embedded()


def status(settings: Settings) -> dict[str, Any]:
    """Resolved paths and settings, the model, chunk counts by kind, pending embeddings, last index, sizes;
    ``rechunk_due``: the index was chunked by another chunker version or settings (an upgrade: events are now
    embedded with the turn they reply to), which the next full ``memsearch index`` or ``maintain`` redoes."""
    choice = resolve_model(settings)
    conn = open_existing(settings)
    with store.damage_guard(settings.db_path):
        out = _status(settings, choice, conn)
    if settings.db_url is not None:
        from indexer.team import team_status

        out["team"] = team_status(settings, choice.model_id if choice.available else None)
    return out


def _status(settings: Settings, choice: ModelChoice, conn: apsw.Connection | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "home": str(settings.home),
        "home_exists": settings.home.is_dir(),
        "home_problem": root_problem(settings.home),
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
                   db_bytes=0, index_model=None, rechunk_due=False)
        return out
    # imported here: the hooks read health from this module and must not load the chunker
    from indexer.scan import chunker_signature

    local = as_store(conn)
    try:
        counts = local.health(None)
        h = health(local, choice)
        out.update(
            chunks=h.chunks,
            chunks_by_kind=dict(counts.by_kind),
            files=counts.sources,
            pending_embeddings=h.pending_embeddings,
            not_embedded=local.not_embedded(),
            last_indexed=h.last_indexed,
            index_model=local.get_meta("vector_model"),
            rechunk_due=local.get_meta("chunker") not in (None, chunker_signature(settings)),
            db_bytes=sum(p.stat().st_size for p in settings.db_path.parent.glob(settings.db_path.name + "*")),
        )
    finally:
        conn.close()
    return out
