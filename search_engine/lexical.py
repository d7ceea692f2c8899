"""The lexical list: the store's ranking of the chunks holding the query's terms (BM25 on the local index: FTS5's
``bm25()`` over title, body and context), with the filters inside the same query."""

from __future__ import annotations

from dataclasses import dataclass, field

from indexer.store import FilterSpec, Store
from search_engine.query import ParsedQuery


@dataclass(frozen=True)
class LexicalResult:
    ids: list[int]
    expression: str  # the query(s) the store actually ran, for --explain and --json
    scores: dict[int, float] = field(default_factory=dict)  # BM25, higher is better


def lexical_search(store: Store, query: ParsedQuery, filters: FilterSpec, limit: int, *,
                   raw: bool = False) -> LexicalResult:
    """AND of the query's content terms first; when that finds fewer than ``limit``, the OR of them follows
    (AND matches keep their places at the top). ``raw`` passes the query text to the store untouched, in its own
    syntax (FTS5 on the local index)."""
    if raw:
        ranked = store.lexical_native(query.text, filters, limit)
        return LexicalResult([s.id for s in ranked], query.text, {s.id: s.score for s in ranked})
    if not query.terms:
        return LexicalResult([], "")
    ranked = store.lexical_top_k(query.terms, "AND", filters, limit)
    strict = store.lexical_expression(query.terms, "AND")
    if len(query.terms) == 1 or len(ranked) >= limit:
        return LexicalResult([s.id for s in ranked], strict, {s.id: s.score for s in ranked})
    relaxed = store.lexical_expression(query.terms, "OR")
    seen = {s.id for s in ranked}
    ranked += [s for s in store.lexical_top_k(query.terms, "OR", filters, limit) if s.id not in seen][
        : limit - len(ranked)]
    return LexicalResult([s.id for s in ranked], f"{strict} || {relaxed}", {s.id: s.score for s in ranked})
