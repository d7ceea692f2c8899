"""Reading single chunks by id: ``memsearch show``."""

from __future__ import annotations

from indexer.errors import NotFound, UsageError
from indexer.settings import Settings
from indexer.status import open_existing
from indexer.types import ChunkView

from .search import _HIT_COLUMNS, _hit

MIN_PREFIX = 4


def show(settings: Settings, ident: str) -> ChunkView:
    """The chunk whose id is ``ident`` (or starts with it, when that is unambiguous), with its neighbours."""
    ident = ident.strip().lower()
    if len(ident) < MIN_PREFIX or not all(c in "0123456789abcdef" for c in ident):
        raise UsageError(f"invalid id {ident!r}: ids are hexadecimal, as printed by `memsearch search`")
    conn = open_existing(settings)
    if conn is None:
        raise NotFound("the index was never built; run `memsearch index` first")
    try:
        rows = conn.execute(
            f"SELECT {_HIT_COLUMNS}, file, seq FROM chunks WHERE uid >= ? AND uid < ? LIMIT 2",
            (ident, ident + "g"),
        ).fetchall()
        if not rows:
            raise NotFound(f"no chunk with id {ident}; ids change when their source changes, search again")
        if len(rows) > 1:
            raise UsageError(f"id prefix {ident} is ambiguous; give more characters")
        row = rows[0]
        file, seq = row[-2], row[-1]
        prev = conn.execute(
            "SELECT uid FROM chunks WHERE file = ? AND seq < ? ORDER BY seq DESC LIMIT 1", (file, seq)
        ).fetchone()
        nxt = conn.execute(
            "SELECT uid FROM chunks WHERE file = ? AND seq > ? ORDER BY seq LIMIT 1", (file, seq)
        ).fetchone()
        count = conn.execute("SELECT count(*) FROM chunks WHERE file = ?", (file,)).fetchone()[0]
        return ChunkView(_hit(row[:-2], 0.0, None, None), prev and prev[0], nxt and nxt[0], count)
    finally:
        conn.close()
