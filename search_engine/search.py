"""The search API used by the CLI, the hooks and the MCP server.

``search()`` runs the BM25 list and the vector list over a candidate pool (at least ``settings.candidates`` each),
fuses them (by min-max normalised scores, 60% BM25, by default; or weighted reciprocal rank fusion), hides near-duplicates by character-trigram Jaccard and returns
a :class:`SearchResult` that also says which mode actually ran, why, and how healthy the index is.

>>> from indexer.base.settings import resolve_settings
>>> search(resolve_settings("/tmp/memsearch-doctest-empty"), "anything", mode="bm25").health.index_exists
False
"""

from __future__ import annotations

from datetime import datetime

import apsw

from indexer.base.cjk import CJK_SHARE_LIMIT, cjk_share, english_only
from indexer.base.embedder import Embedder, ModelChoice, load_embedder, resolve_model
from indexer.base.errors import ModelUnavailable, UsageError
from indexer.base.settings import Settings
from indexer.base.types import Explanation, Hit, SearchResult
from indexer.status import health, open_existing
from indexer.store import sqlite as store
from search_engine.filters import Filters
from search_engine.fusion import boost, dedup, min_max, reciprocal_rank_fusion, score_fusion
from search_engine.lexical import lexical_search
from search_engine.timeexpr import time_window
from search_engine.vector import VectorMatrix, vector_ranking

MODES = ("hybrid", "bm25", "vector")
CJK_QUERY_SHARE = CJK_SHARE_LIMIT
MAX_K = 200
#: A hit dated inside a time expression of the query ("in May 2023", "last week") has its fused score raised by
#: this share; explicit --since/--until filters instead of boosting. Chosen from a sweep on LoCoMo dev, hybrid
#: (turn recall@5 overall / questions that name a time): 0 -> .664/.708, 0.25 -> .668/.742, 0.5 -> .667/.735,
#: 1.0 -> .666/.725.
TIME_BOOST = 0.25
_AUTO = object()
_HIT_COLUMNS = (
    "id, uid, kind, category, title, text, path, line_start, line_end, ts, session_id, project, status, event_id"
)


def _vectors_ready(conn: apsw.Connection, model_id: str | None) -> str | None:
    """None when the index holds vectors of ``model_id``; otherwise why not."""
    indexed = store.get_meta(conn, "vector_model")
    if indexed is None or not store.vec_table_exists(conn):
        return "the index has no vectors yet; run `memsearch index` to embed"
    if indexed != model_id:
        return f"the index holds vectors of {indexed}, not of the current model {model_id}; run `memsearch index`"
    return None


def _fetch(conn: apsw.Connection, ids: list[int]) -> dict[int, tuple]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {row[0]: row for row in conn.execute(f"SELECT {_HIT_COLUMNS} FROM chunks WHERE id IN ({marks})", ids)}


def model_choice(settings: Settings, embedder: Embedder | None | object = _AUTO) -> ModelChoice:
    """The model a search with ``embedder`` uses (the configured one by default; None: none)."""
    if embedder is _AUTO:
        return resolve_model(settings)
    if embedder is None:
        return ModelChoice(False, None, reason="embeddings disabled for this search")
    return ModelChoice(True, embedder.model_id, dim=embedder.dim)


def search(
    settings: Settings,
    query: str,
    *,
    mode: str = "hybrid",
    k: int = 10,
    filters: Filters | None = None,
    raw: bool = False,
    explain: bool = False,
    embedder: Embedder | None | object = _AUTO,
    conn: apsw.Connection | None = None,
    vectors: VectorMatrix | None = None,
    now: datetime | None = None,
) -> SearchResult:
    """Search the index; see the module docstring. ``embedder`` may be a loaded one (the warm server) or a
    fake (tests); by default the configured model is loaded only if the vector list is needed. ``now`` is when
    relative time expressions in the query ("last week") are counted from (default: now)."""
    if mode not in MODES:
        raise UsageError(f"invalid mode {mode!r}: use hybrid, bm25 or vector")
    if not 1 <= k <= MAX_K:
        raise UsageError(f"-k must be between 1 and {MAX_K}")
    filters = filters or Filters()
    choice = model_choice(settings, embedder)
    if mode == "vector" and not choice.available:
        raise ModelUnavailable(f"--mode vector needs an embedding model: {choice.reason}")

    own = conn is None
    conn = open_existing(settings) if own else conn
    try:
        with store.damage_guard(settings.db_path):
            return _search(settings, conn, query, mode, k, filters, raw, explain, embedder, choice, vectors, now)
    finally:
        if own and conn is not None:
            conn.close()


def _search(settings, conn, query, mode, k, filters, raw, explain, embedder, choice, vectors=None,
            now=None) -> SearchResult:
    state = health(conn, choice)
    mode_used, reason = mode, None
    if conn is None:
        if mode == "hybrid":
            mode_used = "bm25" if not choice.available else "hybrid"
            reason = choice.reason
        return SearchResult(query, mode, mode_used, reason, state, (), 0, None, () if explain else None)

    not_ready = _vectors_ready(conn, choice.model_id) if choice.available else choice.reason
    if mode == "vector" and not_ready:
        raise ModelUnavailable(f"--mode vector cannot run: {not_ready}")
    if mode == "hybrid" and not_ready:
        mode_used, reason = "bm25", not_ready
    elif mode == "hybrid" and english_only(choice.model_id) and cjk_share(query) > CJK_QUERY_SHARE:
        mode_used, reason = "bm25", "the embedding model is English-only: a CJK query is answered by BM25 alone"

    pool = max(settings.candidates, k)
    wants_vectors = mode_used in ("hybrid", "vector") and bool(query.strip())

    def vector_side() -> list[tuple[int, float]]:
        model = load_embedder(settings) if embedder is _AUTO else embedder
        return vector_ranking(conn, model.embed_query(query), filters, pool, choice.model_id, vectors)

    # Hybrid: the query embedding and the vector list (ONNX Runtime and NumPy release the GIL) run in a second
    # thread while FTS5 ranks in this one.
    pending = _background().submit(vector_side) if wants_vectors and mode_used == "hybrid" else None
    lexical_ids: list[int] = []
    bm25_scores: dict[int, float] = {}
    expression = None
    if mode_used in ("hybrid", "bm25"):
        lexical = lexical_search(conn, query, filters, pool, raw=raw)
        lexical_ids, expression, bm25_scores = lexical.ids, lexical.expression, lexical.scores
    vector_ids: list[int] = []
    similarity: dict[int, float] = {}
    if wants_vectors:
        try:
            nearest = pending.result() if pending is not None else vector_side()
            vector_ids = [i for i, _ in nearest]
            similarity = {i: round(1.0 - d, 4) for i, d in nearest if d is not None}
        except ModelUnavailable as exc:
            if mode_used == "vector":
                raise
            mode_used, reason = "bm25", str(exc)

    if mode_used == "hybrid":
        rankings, weights = [lexical_ids, vector_ids], [settings.bm25_weight, settings.vector_weight]
    elif mode_used == "bm25":
        rankings, weights = [lexical_ids, []], [settings.bm25_weight, settings.vector_weight]
    else:
        rankings, weights = [[], vector_ids], [settings.bm25_weight, settings.vector_weight]
    by_score = mode_used == "hybrid" and settings.fusion == "score"
    if by_score:
        share = settings.bm25_share
        fused = score_fusion({i: bm25_scores[i] for i in lexical_ids}, {i: similarity.get(i, 0.0) for i in vector_ids},
                             alpha=share)
        nb, nv = min_max({i: bm25_scores[i] for i in lexical_ids}), min_max({i: similarity.get(i, 0.0) for i in vector_ids})
    else:
        fused = reciprocal_rank_fusion(rankings, k=settings.rrf_k, weights=weights)
    rows = _fetch(conn, [cid for cid, _ in fused])
    fused = [(cid, score) for cid, score in fused if cid in rows]
    window = None if raw or filters.since or filters.until else time_window(query, now)
    if window is not None:
        fused = boost(fused, {cid for cid in rows if window.holds(rows[cid][9])}, TIME_BOOST)
    kept, hidden = dedup([(cid, rows[cid][5]) for cid, _ in fused], settings.dedup_threshold, limit=k)

    bm25_rank = {cid: r for r, cid in enumerate(lexical_ids, start=1)}
    vec_rank = {cid: r for r, cid in enumerate(vector_ids, start=1)}
    scores = dict(fused)
    hits = tuple(
        _hit(rows[cid], scores[cid], bm25_rank.get(cid), vec_rank.get(cid),
             round(bm25_scores[cid], 4) if cid in bm25_scores else None, similarity.get(cid))
        for cid in kept
    )
    explanation = None
    if explain:
        uid = {cid: rows[cid][1] for cid in rows}
        hidden_of = {d.key: d for d in hidden}
        explanation = tuple(
            Explanation(
                id=uid[cid],
                bm25_rank=bm25_rank.get(cid),
                vector_rank=vec_rank.get(cid),
                bm25_contribution=share * nb.get(cid, 0.0) if by_score
                else _contribution(weights[0], settings.rrf_k, bm25_rank.get(cid)),
                vector_contribution=(1 - share) * nv.get(cid, 0.0) if by_score
                else _contribution(weights[1], settings.rrf_k, vec_rank.get(cid)),
                score=scores[cid],
                duplicate_of=uid[hidden_of[cid].duplicate_of] if cid in hidden_of else None,
                similarity=hidden_of[cid].similarity if cid in hidden_of else None,
            )
            for cid in [*kept, *hidden_of]
        )
    return SearchResult(query, mode, mode_used, reason, state, hits, len(hidden), expression, explanation)


_BACKGROUND = None


def _background():
    """One worker thread for the vector side of hybrid searches (imported only when a hybrid search runs)."""
    global _BACKGROUND
    if _BACKGROUND is None:
        from concurrent.futures import ThreadPoolExecutor

        _BACKGROUND = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memsearch-vector")
    return _BACKGROUND


def _contribution(weight: float, k: int, rank: int | None) -> float:
    return 0.0 if rank is None else weight / (k + rank)


def _hit(row: tuple, score: float, bm25_rank: int | None, vector_rank: int | None,
         bm25_score: float | None = None, similarity: float | None = None) -> Hit:
    (_, uid, kind, category, title, text, path, line_start, line_end, ts, session_id, project, status,
     event_id) = row
    return Hit(uid, kind, category, title, text, path, line_start, line_end, ts, session_id, project, status,
               round(score, 6), bm25_rank, vector_rank, event_id, bm25_score, similarity)
