"""The vector list: nearest chunks to the query vector in sqlite-vec, with the filters inside the query.

Vectors are stored once per content hash, so a KNN hit maps to every chunk holding that content. Unfiltered
searches use vec0's KNN; when a filter narrows the set (kind, session, dates…) the distances of just the
filtered chunks are computed exactly, so a selective filter can never starve the list.
"""

from __future__ import annotations

import apsw

from .filters import Filters

KNN_MAX = 4096


def _exact(conn: apsw.Connection, qvec: bytes, filters: Filters, limit: int, model_id: str) -> list[tuple[int, float]]:
    where, params = filters.sql("c")
    sql = (
        "SELECT c.id, vec_distance_cosine(v.embedding, ?) AS d FROM chunks c "
        "JOIN embeddings e ON e.hash = c.hash AND e.model = ? "
        f"JOIN vec_chunks v ON v.rowid = e.id WHERE {where} ORDER BY d, c.id LIMIT ?"
    )
    return [(row[0], row[1]) for row in conn.execute(sql, [qvec, model_id, *params, limit])]


def _knn(conn: apsw.Connection, qvec: bytes, filters: Filters, limit: int, k: int) -> list[tuple[int, float]]:
    neighbours = conn.execute(
        "SELECT rowid, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ? ORDER BY distance", (qvec, k)
    ).fetchall()
    if not neighbours:
        return []
    order = {row[0]: i for i, row in enumerate(neighbours)}
    distance = dict(neighbours)
    where, params = filters.sql("c")
    marks = ",".join("?" * len(order))
    rows = conn.execute(
        f"SELECT e.id, c.id FROM embeddings e JOIN chunks c ON c.hash = e.hash "
        f"WHERE e.id IN ({marks}) AND {where}",
        [*order, *params],
    ).fetchall()
    rows.sort(key=lambda r: (order[r[0]], r[1]))
    return [(chunk_id, distance[eid]) for eid, chunk_id in rows][:limit]


def vector_ranking(
    conn: apsw.Connection, qvec: bytes, filters: Filters, limit: int, model_id: str
) -> list[tuple[int, float]]:
    """``(chunk id, cosine distance)`` nearest to ``qvec``, best first."""
    if filters.selective:
        return _exact(conn, qvec, filters, limit, model_id)
    total = conn.execute("SELECT count(*) FROM embeddings WHERE model = ?", (model_id,)).fetchone()[0]
    k = min(total, max(limit * 2, 64))
    while k:
        ids = _knn(conn, qvec, filters, limit, min(k, KNN_MAX))
        if len(ids) >= limit or k >= total:
            return ids
        if k >= KNN_MAX:
            break
        k = min(total, k * 4)
    return _exact(conn, qvec, filters, limit, model_id)
