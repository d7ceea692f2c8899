"""The BM25 list: FTS5 ``bm25()`` over chunk title and body, with the filters inside the same query."""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from indexer.errors import UsageError

from .filters import Filters
from .query import content_terms, fts_query, terms

#: FTS5 column weights for bm25(): (title, body).
TITLE_WEIGHT = 1.0
BODY_WEIGHT = 1.0


@dataclass(frozen=True)
class LexicalResult:
    ids: list[int]
    expression: str  # the MATCH expression(s) actually run, for --explain and --json


def bm25_ranking(conn: apsw.Connection, expression: str, filters: Filters, limit: int) -> list[int]:
    """Chunk ids matching ``expression``, best BM25 first (FTS5's bm25() is lower-is-better)."""
    where, params = filters.sql("c")
    sql = (
        f"SELECT c.id FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
        f"WHERE chunks_fts MATCH ? AND {where} "
        f"ORDER BY bm25(chunks_fts, {TITLE_WEIGHT}, {BODY_WEIGHT}) LIMIT ?"
    )
    return [row[0] for row in conn.execute(sql, [expression, *params, limit])]


def lexical_search(
    conn: apsw.Connection, query: str, filters: Filters, limit: int, *, raw: bool = False
) -> LexicalResult:
    """AND of the query's content terms first; when that finds fewer than ``limit``, the OR of them follows
    (AND matches keep their places at the top). ``raw`` passes FTS5 syntax through untouched."""
    if raw:
        try:
            return LexicalResult(bm25_ranking(conn, query, filters, limit), query)
        except apsw.SQLError as exc:
            raise UsageError(f"invalid FTS5 query {query!r}: {exc}; drop --raw to search plain text") from None
    query_terms = content_terms(terms(query))
    if not query_terms:
        return LexicalResult([], "")
    strict = fts_query(query_terms, "AND")
    ids = bm25_ranking(conn, strict, filters, limit)
    if len(query_terms) == 1 or len(ids) >= limit:
        return LexicalResult(ids, strict)
    relaxed = fts_query(query_terms, "OR")
    seen = set(ids)
    ids += [i for i in bm25_ranking(conn, relaxed, filters, limit) if i not in seen][: limit - len(ids)]
    return LexicalResult(ids, f"{strict} || {relaxed}")
