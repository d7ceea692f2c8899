"""The BM25 list: FTS5 ``bm25()`` over chunk title, body and context (an event's previous turn), with the filters
inside the same query."""

from __future__ import annotations

from dataclasses import dataclass, field

import apsw

from indexer.base.errors import UsageError
from search_engine.filters import Filters
from search_engine.query import content_terms, fts_query, terms

#: FTS5 column weights for bm25(): (title, body, context). The context column holds the previous turn of an event's
#: session: low weight, so a turn's own words count most, but a short reply ("Yes, every Sunday") is still found by
#: the question it answers (measured on LoCoMo: BM25 turn recall@5 0.530 -> 0.631).
TITLE_WEIGHT = 1.0
BODY_WEIGHT = 1.0
CONTEXT_WEIGHT = 0.4


@dataclass(frozen=True)
class LexicalResult:
    ids: list[int]
    expression: str  # the MATCH expression(s) actually run, for --explain and --json
    scores: dict[int, float] = field(default_factory=dict)  # BM25, higher is better


def bm25_ranking(conn: apsw.Connection, expression: str, filters: Filters, limit: int) -> list[tuple[int, float]]:
    """``(chunk id, BM25 score)`` matching ``expression``, best first (FTS5's bm25() is negated: higher is better)."""
    where, params = filters.sql("c")
    score = f"-bm25(chunks_fts, {TITLE_WEIGHT}, {BODY_WEIGHT}, {CONTEXT_WEIGHT})"
    if not filters.selective:
        # Rank inside FTS5 first and join only the best few (joining every match before sorting cost 2.5x at 100k
        # chunks); only the status filter can drop rows here, so a small overfetch nearly always suffices.
        inner = limit * 2
        sql = (
            f"SELECT c.id, f.score FROM (SELECT rowid, {score} AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
            f" ORDER BY score DESC LIMIT ?) AS f JOIN chunks c ON c.id = f.rowid WHERE {where}"
            " ORDER BY f.score DESC LIMIT ?"
        )
        rows = conn.execute(sql, [expression, inner, *params, limit]).fetchall()
        if len(rows) >= limit or conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)", (expression, inner + 1)
        ).fetchone()[0] <= inner:
            return [(row[0], row[1]) for row in rows]
    sql = (
        f"SELECT c.id, {score} AS score FROM chunks_fts "
        f"JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ? AND {where} "
        f"ORDER BY score DESC LIMIT ?"
    )
    return [(row[0], row[1]) for row in conn.execute(sql, [expression, *params, limit])]


def lexical_search(
    conn: apsw.Connection, query: str, filters: Filters, limit: int, *, raw: bool = False
) -> LexicalResult:
    """AND of the query's content terms first; when that finds fewer than ``limit``, the OR of them follows
    (AND matches keep their places at the top). ``raw`` passes FTS5 syntax through untouched."""
    if raw:
        try:
            ranked = bm25_ranking(conn, query, filters, limit)
            return LexicalResult([i for i, _ in ranked], query, dict(ranked))
        except apsw.SQLError as exc:
            reason = " ".join(str(exc).split())  # one line, whatever SQLite echoes back of the query
            raise UsageError(f"invalid FTS5 query {query!r}: {reason}; drop --raw to search plain text") from None
    query_terms = content_terms(terms(query))
    if not query_terms:
        return LexicalResult([], "")
    strict = fts_query(query_terms, "AND")
    ranked = bm25_ranking(conn, strict, filters, limit)
    if len(query_terms) == 1 or len(ranked) >= limit:
        return LexicalResult([i for i, _ in ranked], strict, dict(ranked))
    relaxed = fts_query(query_terms, "OR")
    seen = {i for i, _ in ranked}
    ranked += [(i, s) for i, s in bm25_ranking(conn, relaxed, filters, limit) if i not in seen][: limit - len(ranked)]
    return LexicalResult([i for i, _ in ranked], f"{strict} || {relaxed}", dict(ranked))
