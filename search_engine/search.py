"""The search API used by the CLI, the hooks and the MCP server.

``search()`` runs the BM25 list and the vector list over a candidate pool (at least ``settings.candidates`` each),
fuses them (by min-max normalised scores, 60% BM25, by default; or weighted reciprocal rank fusion), blends in a
second BM25 list of the query and the words of the first result's best hits (``feedback_share``,
:mod:`~search_engine.feedback`), raises an event
by the best candidates of its session (``session_share``, :func:`~search_engine.fusion.group_evidence`), raises
the events of a speaker the query names (``speaker_share``) and those of a time it names, hides near-duplicates by
character-trigram Jaccard and returns
a :class:`SearchResult` that also says which mode actually ran, why, and how healthy the index is.

>>> from indexer.base.settings import resolve_settings
>>> search(resolve_settings("/tmp/memsearch-doctest-empty"), "anything", mode="bm25").health.index_exists
False
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple, cast

from indexer.base.chunktext import is_role
from indexer.base.cjk import CJK_SHARE_LIMIT, cjk_share, english_only
from indexer.base.embedder import ModelChoice
from indexer.base.errors import ModelUnavailable, UsageError, one_line
from indexer.base.settings import Settings
from indexer.base.types import Explanation, Health, SearchResult
from indexer.status import health
from indexer.store import HitRow, Scored, Store
from indexer.store.local import SqliteStore
from search_engine.embedding import EmbedderArg, QueryEmbedder
from search_engine.feedback import FEEDBACK_HITS, feedback_list
from search_engine.filters import Filters
from search_engine.fusion import (
    Fused,
    blend,
    boost,
    dedup,
    fuse_by_rank,
    fuse_by_score,
    group_evidence,
    scale_to_best,
)
from search_engine.hits import Scores, make_hit
from search_engine.lexical import lexical_search
from search_engine.query import ParsedQuery, named_speakers
from search_engine.reading import open_team_for_search, reading, team_errors
from search_engine.timeexpr import TOLD_KINDS, EventAnchor, TimeWindow, time_window

if TYPE_CHECKING:
    from datetime import datetime

MODES = ("hybrid", "bm25", "vector")
CJK_QUERY_SHARE = CJK_SHARE_LIMIT
MAX_K = 200
#: The most candidates per list a search reads. The lists are cut at ``settings.candidates`` (or k) first; when
#: near-duplicates leave fewer than k distinct hits and a list was full, the search runs again on a pool twice as
#: wide, until k are kept, the matches run out or the pool reaches this (60 copies of one tool output ranked first
#: left 1 hit of the 10 asked for at 50 candidates).
MAX_POOL = 1600
#: A hit dated inside a time expression of the query ("in May 2023", "last week") has its score raised by this
#: share (times 3); explicit --since/--until filter instead of boosting. Chosen on half A of the timeline set's
#: temporal questions and confirmed on half B (hybrid recall@1 A / B): 0.25 -> .55/.64, 1.0 -> .75/.93,
#: 2.0 -> .85/.98, 3.0 -> .85/.98 (on A, the smaller of the two best); LoCoMo dev hybrid turn recall@5 was the same
#: from 1.0 to 3.0 on either half (A .777, B .667; .772 / .669 at 0.25). It was 0.25 when LoCoMo, whose questions
#: name a time in the words the turns use, was the only measure.
TIME_BOOST = 2.0
#: What happened in a window is often told in the days after it ("yesterday I deployed…", "on Friday we…"): hits
#: dated up to this many days after the window are raised by TOLD_AFTER_BOOST (times 2). On the timeline set (hybrid
#: recall@1 / @5, all 41 questions; the 4 told after the time they name): none .87 / .93, .50 / .50; 2 days
#: .92 / .98, 1.0 / 1.0, and the same with 1 or 4 days or half the boost. LoCoMo dev hybrid turn recall@5 .722 with
#: or without it, BM25 .681 -> .682. A hit raised by TIME_BOOST (its date, or the time it tells: see
#: :func:`_tells_a_time_in`) is not raised again by this.
TOLD_AFTER_DAYS = 2
TOLD_AFTER_BOOST = 1.0
#: How many of the best matches of an event's words ("the concert") are read for the first one with a date.
ANCHOR_CANDIDATES = 3
#: A query that names a time also reads the events of that time (and of the TOLD_AFTER_DAYS after it) nearest to
#: it in meaning, this many, beside the vector list of the whole memory: what happened then is often told in other
#: words ("which country was Tim visiting in the second week of November" / "my trip to the UK last Friday") and
#: is not among a large memory's nearest. Chosen on half A of LoCoMo dev (hybrid turn recall@5 of the questions
#: that name a time 0.891 -> 0.909 / 0.927 / 0.927 at 5 / 10 / 20; temporal 0.896 -> 0.920 at 10; the timeline
#: set's hybrid recall@1 0.955 -> 1.000) and checked on half B (0.765 at 0, 5 and 10, 0.745 at 20).
WINDOW_NEAREST = 10


class Request(NamedTuple):
    """One search as :func:`search` checked it: the parsed query, what to run and how, and with which model."""

    settings: Settings
    query: ParsedQuery
    mode: str
    k: int
    filters: Filters
    raw: bool
    explain: bool
    embedding: QueryEmbedder
    now: datetime | None = None
    #: chunk ids left out of the results: on the team store, those a ``forget`` could not remove there yet
    hidden: frozenset[str] = frozenset()

    @property
    def choice(self) -> ModelChoice:
        return self.embedding.choice


def _vectors_ready(store: Store, model_id: str | None) -> str | None:
    """None when the store searched holds vectors of ``model_id`` (on a team store: any the member sees, whoever
    sent them); otherwise why not."""
    if model_id is not None and store.holds_vectors(model_id):
        return None
    indexed = store.vector_model()
    if indexed is None and not isinstance(store, SqliteStore):
        return "the team database holds no vectors you can see yet; `memsearch index` embeds and sends yours"
    if indexed is None:
        return "the index has no vectors yet; run `memsearch index` to embed"
    if indexed != model_id:
        return f"the index holds vectors of {indexed}, not of the current model {model_id}; run `memsearch index`"
    return None


def result_health(store: Store | None, choice: ModelChoice) -> Health:
    """What a result says of the index it came from (see :class:`indexer.base.types.Health`). The local index's
    counts are cached on its connection until anything is written (:func:`indexer.status.health`); another
    backend answers with its :meth:`~indexer.store.Store.health`."""
    if store is None or isinstance(store, SqliteStore):
        return health(store, choice)
    counts = store.health(choice.model_id if choice.available else None)
    indexed = store.get_meta("last_indexed")  # the member's last sync: None for one who synced nothing yet
    # reached, the team database is there: a member who sees nothing on it is told so (index_note), never that
    # an index was never built
    return Health(index_exists=True, chunks=counts.chunks,
                  pending_embeddings=counts.pending_embeddings,
                  last_indexed=indexed, model=choice.model_id, model_available=choice.available,
                  model_reason=choice.reason, store="team")


def model_choice(settings: Settings, embedder: EmbedderArg = "configured") -> ModelChoice:
    """The model a search with ``embedder`` uses (the configured one by default; None: none)."""
    return QueryEmbedder.resolve(settings, embedder).choice


def search(
    settings: Settings,
    query: str | ParsedQuery,
    *,
    mode: str = "hybrid",
    k: int = 10,
    filters: Filters | None = None,
    raw: bool = False,
    explain: bool = False,
    embedder: EmbedderArg = "configured",
    store: Store | None = None,
    team: Store | None = None,
    now: datetime | None = None,
) -> SearchResult:
    """Search the index; see the module docstring. ``query``: the user's text, or the prompt hook's, already
    parsed (its relevance gate reads the same terms). ``embedder`` may be a loaded one (the warm server) or a
    fake (tests), None for BM25 only; by default the configured model is loaded only if the vector list is needed.
    ``store``: an open index to read (the warm server keeps one; default: the settings' index, opened here).
    ``team``: with ``db_url`` set, an open team store to read (the warm server keeps one, with its connection pool;
    default: one opened for this search and closed after); if it fails mid-search the local index answers and
    ``health.store_reason`` says why.
    ``now`` is when relative time expressions in the query ("last week") are counted from (default: now)."""
    if mode not in MODES:
        raise UsageError(f"invalid mode {mode!r}: use hybrid, bm25 or vector")
    if not 1 <= k <= MAX_K:
        raise UsageError(f"-k must be between 1 and {MAX_K}")
    if isinstance(query, ParsedQuery):  # the prompt hook's, parsed already: its time was read as of now
        parsed = query if now is None else ParsedQuery.parse(query.text, now)
    else:
        parsed = ParsedQuery.parse(query, now)
    request = Request(settings, parsed, mode, k, Filters() if filters is None else filters.checked(), raw, explain,
                      QueryEmbedder.resolve(settings, embedder), now)
    if mode == "vector" and not request.choice.available:
        raise ModelUnavailable(f"--mode vector needs an embedding model: {request.choice.reason}")
    if store is not None or settings.db_url is None:
        with reading(settings, store) as index:
            return _search(request, index)
    own = team is None
    reason = None
    if own:
        team, reason = open_team_for_search(settings)
    if team is not None:
        from indexer.team import pending_forgets

        # forgotten here while the team database was unreachable: never shown from its copy meanwhile
        request = request._replace(hidden=frozenset(pending_forgets(settings)))
        try:
            return _search(request, team)
        except team_errors() as exc:  # the server went away mid-search: the local index answers
            reason = f"the team database failed mid-search ({one_line(exc)})"
        finally:
            if own:
                team.close()
    with reading(settings) as index:
        result = _search(request, index)
    return result._replace(health=result.health._replace(store_reason=f"{reason}: searched the local index"))


def _search(request: Request, store: Store | None) -> SearchResult:
    settings, choice, query, filters = request.settings, request.choice, request.query, request.filters
    state = result_health(store, choice)
    mode, mode_used, reason = request.mode, request.mode, None
    if store is None:
        if mode == "hybrid":
            mode_used = "bm25" if not choice.available else "hybrid"
            reason = choice.reason
        return SearchResult(query.text, mode, mode_used, reason, state, (), 0, None, () if request.explain else None)

    not_ready = _vectors_ready(store, choice.model_id) if choice.available else choice.reason
    if mode == "vector" and not_ready:
        raise ModelUnavailable(f"--mode vector cannot run: {not_ready}")
    unreadable = mode != "bm25" and english_only(choice.model_id) and cjk_share(query.text) > CJK_QUERY_SHARE
    if mode == "vector" and unreadable:
        raise ModelUnavailable("--mode vector cannot answer a CJK query: the embedding model is English-only "
                               "(use --mode bm25 or hybrid, or the model multilingual-e5-small)")
    if mode == "hybrid" and not_ready:
        mode_used, reason = "bm25", not_ready
    elif mode == "hybrid" and unreadable:
        mode_used, reason = "bm25", "the embedding model is English-only: a CJK query is answered by BM25 alone"

    pool = max(settings.candidates, request.k)
    wants_vectors = mode_used in ("hybrid", "vector") and bool(query.text.strip())

    def embed() -> bytes:
        return request.embedding.load().embed_query(query.text if request.raw else query.embedded)

    # Hybrid: the query embedding (ONNX Runtime releases the GIL) runs in a second thread while the lexical list is
    # ranked in this one. The store is read from this thread only: one SQLite connection serves one thread at a
    # time (apsw raises ThreadingViolationError rather than wait).
    pending = _background().submit(embed) if wants_vectors and mode_used == "hybrid" else None
    window, anchor = (None, frozenset()) if request.raw or filters.since or filters.until else _time_window(
        store, query.time, filters)
    qvec: bytes | None = None
    then_nearest: list[Scored] | None = None  # the events of the time the query names nearest to it
    while True:  # once, unless near-duplicates leave fewer than k distinct hits: then on a pool twice as wide
        lexical_ids: list[int] = []
        bm25_scores: Mapping[int, float] = {}
        expression = None
        rows: Mapping[int, HitRow] = {}
        if mode_used in ("hybrid", "bm25"):
            lexical = lexical_search(store, query, filters, pool, raw=request.raw)
            lexical_ids, expression, bm25_scores, rows = lexical.ids, lexical.expression, lexical.scores, lexical.rows
        vector_ids: list[int] = []
        similarity: dict[int, float] = {}
        if wants_vectors and mode_used != "bm25":
            try:
                if qvec is None:
                    qvec = pending.result() if pending is not None else embed()
                nearest = store.vector_candidates(qvec, cast(str, choice.model_id), filters, pool,  # a model
                                                  ef_search=settings.ef_search)
                if window is not None and WINDOW_NEAREST:
                    if then_nearest is None:  # (read once: a wider pool on a second pass does not change them)
                        then = filters._replace(since=window.start, until=window.after(TOLD_AFTER_DAYS).end)
                        then_nearest = store.vector_candidates(qvec, cast(str, choice.model_id), then, WINDOW_NEAREST)
                    seen = {s.id for s in nearest}
                    nearest += [s for s in then_nearest if s.id not in seen]
                vector_ids = [s.id for s in nearest]
                similarity = {s.id: round(1.0 - s.score, 4) for s in nearest if s.score is not None}
            except ModelUnavailable as exc:
                if mode_used == "vector":
                    raise
                mode_used, reason = "bm25", str(exc)

        if mode_used == "hybrid" and settings.fusion == "score":
            fusion: Fused[int] = fuse_by_score({i: bm25_scores[i] for i in lexical_ids},
                                               {i: similarity.get(i, 0.0) for i in vector_ids},
                                               alpha=settings.bm25_share)
        elif mode_used == "bm25" and settings.fusion == "score":
            fusion = scale_to_best({i: bm25_scores[i] for i in lexical_ids})
        else:
            rankings = [lexical_ids if mode_used != "vector" else [], vector_ids if mode_used != "bm25" else []]
            fusion = fuse_by_rank(rankings, k=settings.rrf_k, weights=[settings.bm25_weight, settings.vector_weight])
        rows = _with_rows(store, fusion, rows)
        ranked = _raise(request, mode_used, fusion, rows, window, anchor)
        # score fusion only: its scores lie in [0, 1] as the feedback list's do (rank scores are ~0.03)
        if (mode_used == "hybrid" and settings.fusion == "score" and settings.feedback_share and ranked.fused
                and query.terms and not request.raw):
            # events only: a conversation spreads an answer over turns in other words, while a note holds its own
            # (SciFact hybrid nDCG@10 0.726 -> 0.710 with notes' words read too)
            best = [rows[cid].text for cid, _ in ranked.fused[:FEEDBACK_HITS] if rows[cid].kind == "event"]
            second = feedback_list(store, query, filters, pool, best, (row.text for row in rows.values())) if best else {}
            if second:
                fusion = blend(fusion, second, settings.feedback_share)
                rows = _with_rows(store, fusion, rows)
                ranked = _raise(request, mode_used, fusion, rows, window, anchor)
        fused, raised, named, timely, late = ranked
        days = {cid: ts[:10] for cid, _ in fused if rows[cid].kind == "event" and (ts := rows[cid].ts)}
        kept, hidden = dedup([(cid, rows[cid].text) for cid, _ in fused], settings.dedup_threshold, limit=request.k,
                             day_of=days)
        more = len(lexical_ids) >= pool or len(vector_ids) >= pool  # a full list: it may hold further matches
        if len(kept) >= request.k or not hidden or not more or pool >= MAX_POOL:
            break
        pool = min(pool * 2, MAX_POOL)

    unscored = [cid for cid in kept if cid not in similarity]
    if qvec is not None and mode_used == "hybrid" and unscored:
        # a hit the vector list did not reach still has a cosine: the hook's gate must weigh a far meaning too
        similarity.update({cid: round(s, 4) for cid, s in store.similarities(qvec, cast(str, choice.model_id),
                                                                               unscored).items() if s is not None})
    bm25_rank = {cid: r for r, cid in enumerate(lexical_ids, start=1)}
    vec_rank = {cid: r for r, cid in enumerate(vector_ids, start=1)}
    scores = dict(fused)
    hits = tuple(
        make_hit(rows[cid], Scores(scores[cid], bm25_rank.get(cid), vec_rank.get(cid),
                                   round(bm25_scores[cid], 4) if cid in bm25_scores else None, similarity.get(cid)))
        for cid in kept
    )
    explanation = None
    if request.explain:
        uid = {cid: rows[cid].uid for cid in rows}
        hidden_of = {cast(int, d.key): d for d in hidden}
        explanation = tuple(
            Explanation(
                id=uid[cid],
                bm25_rank=bm25_rank.get(cid),
                vector_rank=vec_rank.get(cid),
                bm25_contribution=fusion.parts.get(cid, (0.0, 0.0))[0],
                vector_contribution=fusion.parts.get(cid, (0.0, 0.0))[1],
                score=scores[cid],
                duplicate_of=uid[cast(int, hidden_of[cid].duplicate_of)] if cid in hidden_of else None,
                similarity=hidden_of[cid].similarity if cid in hidden_of else None,
                group_contribution=raised.get(cid, 0.0),
                feedback_contribution=(fusion.parts.get(cid, ()) + (0.0, 0.0, 0.0))[2],
                boosts=tuple(factor for factor, raised_by in ((f"speaker {1 + settings.speaker_share:g}", named),
                                                              (f"time {1 + TIME_BOOST:g}", timely),
                                                              (f"told after {1 + TOLD_AFTER_BOOST:g}", late))
                             if cid in raised_by),
            )
            for cid in [*kept, *hidden_of]
        )
    return SearchResult(query.text, mode, mode_used, reason, state, hits, len(hidden), expression, explanation)


def _with_rows(store: Store, fusion: Fused[int], rows: Mapping[int, HitRow]) -> Mapping[int, HitRow]:
    """``rows`` and those of the fused candidates it lacks, read from the store."""
    missing = [cid for cid, _ in fusion.ranked if cid not in rows]
    return {**rows, **store.fetch_hits(missing)} if missing else rows


class Raised(NamedTuple):
    """The fused list once raised (best first), what each hit's session added, and the hits each factor raised."""

    fused: list[tuple[int, float]]
    by_group: dict[int, float]
    named: set[int]
    timely: set[int]
    late: set[int]


def _raise(request: Request, mode_used: str, fusion: Fused[int], rows: Mapping[int, HitRow],
           window: TimeWindow | None, anchor: frozenset[int]) -> Raised:
    """The fused candidates raised by the evidence of their session (hybrid), a speaker the query names and the
    time it names, and re-sorted; those the request hides left out."""
    settings = request.settings
    fused = [(cid, score) for cid, score in fusion.ranked if cid in rows and rows[cid].uid not in request.hidden]
    raised: dict[int, float] = {}
    if mode_used == "hybrid" and settings.session_share:
        sessions = {cid: row.session_id for cid, row in rows.items() if row.kind == "event" and row.session_id}
        plain = dict(fused)
        fused = group_evidence(fused, sessions, settings.session_share)
        raised = {cid: score - plain[cid] for cid, score in fused}
    named = set() if request.raw or not settings.speaker_share else _named_speakers(request.query.text, rows)
    if named:
        fused = boost(fused, named, settings.speaker_share)
    timely = set() if window is None else {cid for cid in rows if cid not in anchor and (
        window.holds(rows[cid].ts) or _tells_a_time_in(rows[cid], window))}
    if timely:
        fused = boost(fused, timely, TIME_BOOST)
    told = None if window is None else window.after(TOLD_AFTER_DAYS)
    late = set() if told is None else {cid for cid in rows if told.holds(rows[cid].ts) and cid not in anchor
                                       and cid not in timely}  # raised once: by the time it tells, or its date
    if late:
        fused = boost(fused, late, TOLD_AFTER_BOOST)
    return Raised(fused, raised, named, timely, late)


def _time_window(store: Store, time: TimeWindow | EventAnchor | None,
                 filters: Filters) -> tuple[TimeWindow | None, frozenset[int]]:
    """The window of the time a query names (:attr:`ParsedQuery.time`): a window already, or an offset from an event
    the memory tells ("two days before the concert"), dated by the best BM25 match of its words that has a date;
    and the event itself, which the query does not ask about and which is not raised: the best matches of its words
    dated that day (the concert, and the answer about it)."""
    if not isinstance(time, EventAnchor):
        return time, frozenset()
    found = lexical_search(store, ParsedQuery.parse(time.phrase), filters, ANCHOR_CANDIDATES)
    rows = found.rows or store.fetch_hits(found.ids)
    day = next((ts[:10] for cid in found.ids if cid in rows and (ts := rows[cid].ts)), None)
    if day is None:
        return None, frozenset()
    from datetime import date

    itself = frozenset(cid for cid in found.ids if cid in rows and (rows[cid].ts or "")[:10] == day)
    return time.window(date.fromisoformat(day)), itself


#: Characters of an event's text read for the time it tells (:func:`_tells_a_time_in`).
TOLD_TIME_CHARS = 400


def _tells_a_time_in(row: HitRow, window: TimeWindow) -> bool:
    """Whether an event tells of a time inside ``window``, read from its own words as of when it was written: "On
    Saturday I went hiking", written on Wednesday, happened on Saturday, though the event is dated Wednesday. The
    time it tells must lie inside the window ("last year" does not fall in "last June"). Only a query that names a
    time reads them, and only its candidates' (its first :data:`TOLD_TIME_CHARS` characters)."""
    if row.kind != "event" or not row.ts:
        return False
    told = _told_window(row.text[:TOLD_TIME_CHARS], row.ts)
    if told is None:
        return False
    if window.start <= told.start and told.end <= window.end:
        return True
    # A night is told as a day and the morning after ("last night", written on the 2nd, is the 1st's): a told time
    # of two days at most counts by the day it starts.
    return told.end <= _days_after(told.start, 2) and window.start <= told.start < window.end


@functools.lru_cache(maxsize=1024)
def _days_after(ts: str, days: int) -> str:
    from datetime import datetime, timedelta

    return (datetime.fromisoformat(ts) + timedelta(days=days)).isoformat(timespec="seconds")


@functools.lru_cache(maxsize=4096)
def _told_window(text: str, ts: str) -> TimeWindow | None:
    """The time ``text``, written at ``ts``, tells of (kept for the warm server's next query that names a time)."""
    from datetime import datetime

    try:
        return time_window(text, datetime.fromisoformat(ts), TOLD_KINDS)
    except ValueError:
        return None


def _named_speakers(text: str, rows: Mapping[int, HitRow]) -> set[int]:
    """The candidate events written by a speaker the query names (:func:`~search_engine.query.named_speakers`):
    names their metadata carried, never a role (``user``, ``assistant``, ``tool``). A question about what someone
    did is answered in their own words: on LoCoMo dev, 931 of the 968 gold turns of questions naming one speaker
    are that speaker's, against 960 of the 3,390 places of hybrid's top 5 that went to the other speaker."""
    speakers = {cid: row.speaker for cid, row in rows.items()
                if row.kind == "event" and row.speaker and not is_role(row.speaker, row.category)}
    if not speakers:
        return set()
    named = named_speakers(text, set(speakers.values()))
    return {cid for cid, speaker in speakers.items() if speaker in named}


_BACKGROUND = None


def _background():
    """One worker thread for the query embedding of hybrid searches (imported only when a hybrid search runs)."""
    global _BACKGROUND
    if _BACKGROUND is None:
        from concurrent.futures import ThreadPoolExecutor

        _BACKGROUND = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memsearch-vector")
    return _BACKGROUND
