"""Reading single chunks by id: ``memsearch show``."""

from __future__ import annotations

from contextlib import contextmanager

from indexer.base.errors import NotFound, UsageError
from indexer.base.settings import Settings
from indexer.base.types import ChunkView, Hit, Timeline
from indexer.status import open_existing
from indexer.store import sqlite as store
from search_engine.search import _HIT_COLUMNS, _hit

MIN_PREFIX = 4


@contextmanager
def _open(settings: Settings):
    """The index, read under :func:`indexer.store.sqlite.damage_guard` and closed after."""
    conn = open_existing(settings)
    if conn is None:
        raise NotFound("the index was never built; run `memsearch index` first")
    try:
        with store.damage_guard(settings.db_path):
            yield conn
    finally:
        conn.close()


def _find(conn, ident: str) -> tuple:
    """The row of the chunk whose id is ``ident`` or starts with it (unambiguously), plus its file and seq."""
    ident = ident.strip().lower()
    if len(ident) < MIN_PREFIX or len(ident) > 32 or not all(c in "0123456789abcdef" for c in ident):
        raise UsageError(f"invalid id {ident!r}: ids are hexadecimal, as printed by `memsearch search`")
    rows = conn.execute(
        f"SELECT {_HIT_COLUMNS}, file, seq FROM chunks WHERE uid >= ? AND uid < ? LIMIT 2", (ident, ident + "g")
    ).fetchall()
    if not rows:
        raise NotFound(f"no chunk with id {ident}; ids change when their source changes, search again")
    if len(rows) > 1:
        raise UsageError(f"id prefix {ident} is ambiguous; give more characters")
    return rows[0]


def get_many(settings: Settings, idents: list[str]) -> list[Hit]:
    """Full chunks for several ids (unknown ones are skipped)."""
    with _open(settings) as conn:
        out = []
        for ident in idents:
            try:
                out.append(_hit(_find(conn, ident)[:-2], 0.0, None, None))
            except NotFound:
                continue
        return out


def timeline(settings: Settings, ident: str, window: int = 5) -> Timeline:
    """The ``window`` chunks before and after a chunk in time. With a session, its own session's chunks;
    otherwise everything dated."""
    if not 1 <= window <= 100:
        raise UsageError("--window must be between 1 and 100")
    with _open(settings) as conn:
        row = _find(conn, ident)
        center = _hit(row[:-2], 0.0, None, None)
        ts, cid = center.ts or "", row[0]
        scope, params = ("session_id = ?", [center.session_id]) if center.session_id else ("ts IS NOT NULL", [])
        before = conn.execute(
            f"SELECT {_HIT_COLUMNS} FROM chunks WHERE {scope} AND (ts < ? OR (ts = ? AND id < ?))"
            " ORDER BY ts DESC, id DESC LIMIT ?", [*params, ts, ts, cid, window]).fetchall()
        after = conn.execute(
            f"SELECT {_HIT_COLUMNS} FROM chunks WHERE {scope} AND (ts > ? OR (ts = ? AND id > ?))"
            " ORDER BY ts, id LIMIT ?", [*params, ts, ts, cid, window]).fetchall()
        return Timeline(center, tuple(_hit(r, 0.0, None, None) for r in reversed(before)),
                        tuple(_hit(r, 0.0, None, None) for r in after))


def show(settings: Settings, ident: str) -> ChunkView:
    """The chunk whose id is ``ident`` (or starts with it, when that is unambiguous), with its neighbours."""
    with _open(settings) as conn:
        row = _find(conn, ident)
        file, seq = row[-2], row[-1]
        prev = conn.execute(
            "SELECT uid FROM chunks WHERE file = ? AND seq < ? ORDER BY seq DESC LIMIT 1", (file, seq)
        ).fetchone()
        nxt = conn.execute(
            "SELECT uid FROM chunks WHERE file = ? AND seq > ? ORDER BY seq LIMIT 1", (file, seq)
        ).fetchone()
        count = conn.execute("SELECT count(*) FROM chunks WHERE file = ?", (file,)).fetchone()[0]
        return ChunkView(_hit(row[:-2], 0.0, None, None), prev and prev[0], nxt and nxt[0], count)
