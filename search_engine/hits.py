"""A search hit built from the store's row: :class:`indexer.base.types.Hit` is the one shape of a hit everywhere
(search, show, recent, the warm server's answer, the prompt hook)."""

from __future__ import annotations

from typing import NamedTuple

from indexer.base.types import Hit
from indexer.store import HitRow


class Scores(NamedTuple):
    """Where a hit ranked: its fused score, its rank in each list and its score there (None: not in that list)."""

    score: float = 0.0
    bm25_rank: int | None = None
    vector_rank: int | None = None
    bm25_score: float | None = None  # FTS5 BM25 (a CJK query: plus its overlap bonus), higher is better
    similarity: float | None = None  # cosine similarity to the query vector


UNRANKED = Scores()


def make_hit(row: HitRow, scores: Scores = UNRANKED) -> Hit:
    """The hit of ``row``; ``scores`` default to none (a chunk shown by id or by time, not found by a query)."""
    return Hit(
        id=row.uid, kind=row.kind, category=row.category, title=row.title, text=row.text, path=row.path,
        line_start=row.line_start, line_end=row.line_end, ts=row.ts, session_id=row.session_id, project=row.project,
        status=row.status, score=round(scores.score, 6), bm25_rank=scores.bm25_rank, vector_rank=scores.vector_rank,
        event_id=row.event_id, bm25_score=scores.bm25_score, similarity=scores.similarity,
    )
