"""Reading single chunks by id: ``memsearch show``, ``timeline`` (and MCP ``get``), from the index search reads:
the team store when ``db_url`` is set (the local index when it cannot be reached, and the view says so)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import NamedTuple, TypeVar

from indexer.base.errors import NotFound, UsageError, forgotten_id, id_problem, shown_id, unknown_id
from indexer.base.reports import ChunkView, ForgetSelector, Matched, Timeline
from indexer.base.settings import Settings
from indexer.base.types import Hit
from indexer.store import HitRow, QueryTerm, Store
from search_engine.hits import make_hit
from search_engine.reading import read_configured

T = TypeVar("T")


def _read(settings: Settings, read: Callable[[Store], T]) -> tuple[T, str | None]:
    """``read(store)`` on the index search reads (the team store with ``db_url``, else or when it fails the local
    one: :func:`search_engine.reading.read_configured`), and why the local one answered instead of the team's."""

    def checked(store: Store | None) -> T:
        if store is None:
            raise NotFound("the index was never built; run `memsearch index` first")
        return read(store)

    return read_configured(settings, checked)


def valid_id(ident: str) -> bool:
    """Whether ``ident`` can name a chunk: 4 to 32 hexadecimal digits (a whole id or a prefix of one), any case.

    >>> valid_id("deadbeef0000"), valid_id("DEADBEEF"), valid_id("zz"), valid_id("abc")
    (True, True, False, False)
    """
    return id_problem(ident) is None


def _find(store: Store, ident: str, settings: Settings) -> tuple[HitRow, str, int]:
    """The row of the chunk whose id is ``ident`` or starts with it (unambiguously), plus its file and seq. An id
    the index does not hold that ``memsearch forget`` took says so (the forget log records ids)."""
    ident = ident.strip().lower()
    problem = id_problem(ident)
    if problem is not None:
        raise UsageError(f"invalid id {shown_id(ident)!r}: {problem}")
    rows = store.find_uid_prefix(ident, limit=2)
    if not rows:
        from indexer.forget import forgotten_on  # only for an id not found: forget's imports are not cheap

        day = forgotten_on(settings, ident)
        raise unknown_id(ident) if day is None else forgotten_id(ident, day)
    if len(rows) > 1:
        raise UsageError(f"id prefix {ident} is ambiguous; give more characters")
    return rows[0]


class Got(NamedTuple):
    """What :func:`get_each` found, and each id it skipped (as shown back: cut at 40 characters) with why."""

    hits: list[Hit]
    skipped: list[tuple[str, str]]


def get_each(settings: Settings, idents: list[str]) -> Got:
    """Full chunks for several ids; an unknown, ambiguous or malformed id is skipped, and said (MCP ``get``: one
    bad id among good ones does not fail the call)."""
    def read(store: Store) -> Got:
        got = Got([], [])
        for ident in idents:
            try:
                got.hits.append(make_hit(_find(store, ident, settings)[0]))
            except (NotFound, UsageError) as exc:
                got.skipped.append((shown_id(ident.strip()), str(exc)))
        return got

    return _read(settings, read)[0]


def get_many(settings: Settings, idents: list[str]) -> list[Hit]:
    """Full chunks for several ids (the others are skipped: :func:`get_each`)."""
    return get_each(settings, idents).hits


def timeline(settings: Settings, ident: str, window: int = 5) -> Timeline:
    """The ``window`` chunks before and after a chunk in time. With a session, its own session's chunks;
    otherwise everything dated."""
    if not 1 <= window <= 100:
        raise UsageError("--window must be between 1 and 100")
    def read(store: Store) -> Timeline:
        row = _find(store, ident, settings)[0]
        before, after = store.around(row, window)
        return Timeline(make_hit(row), tuple(make_hit(r) for r in before), tuple(make_hit(r) for r in after))

    view, note = _read(settings, read)
    return replace(view, note=note) if note else view


def show(settings: Settings, ident: str) -> ChunkView:
    """The chunk whose id is ``ident`` (or starts with it, when that is unambiguous), with its neighbours."""
    def read(store: Store) -> ChunkView:
        row, file, seq = _find(store, ident, settings)
        prev, nxt, count = store.neighbours(file, seq)
        return ChunkView(make_hit(row), prev, nxt, count)

    view, note = _read(settings, read)
    return replace(view, note=note) if note else view


def matching(settings: Settings, selector: ForgetSelector) -> Matched | None:
    """What ``forget --match`` takes: the chunks whose own title or text holds every content word of
    ``selector.match`` (stemmed as BM25 reads them; common words left out), within the selector's other criteria,
    whatever their status, and the archived events (``archive/events/*.gz``, not indexed) whose text holds them
    too, read the same way; the best ``selector.limit`` by BM25 when it is set (the archived events, which have no
    BM25 rank here, after the indexed chunks). Never the nearest by meaning: a search fills its hits with whatever
    is closest, and forgetting must not take what merely resembles the words. None when the selector has no
    ``match``. Events logged since the last index run are indexed first, so a dry run finds them too, and with no
    index every source is indexed first (:func:`indexer.forget.catch_up`). Always the local index: forget rewrites
    this machine's files and index."""
    if not selector.match:
        return None
    from datetime import datetime, timedelta

    from indexer.forget import catch_up
    from search_engine.filters import Filters
    from search_engine.query import words_of
    from search_engine.reading import reading

    terms = words_of(selector.match)
    if not terms:
        raise UsageError(f"--match {selector.match!r} holds no word to look for (only common words): "
                         "give the words the memories to forget contain")
    if selector.limit is not None and selector.limit < 1:
        raise UsageError("-k must be at least 1")
    catch_up(settings)
    until = None
    if selector.before:
        until = (datetime.fromisoformat(selector.before) - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S")
    filters = Filters(session=selector.session, project=selector.project, since=selector.since, until=until,
                      all_status=True)
    chunks: list[str] = []
    with reading(settings) as store:
        if store is not None:
            ranked = [s.id for s in store.holding_every(terms, filters, selector.limit)]
            rows = store.fetch_hits(ranked)
            chunks = [rows[i].uid for i in ranked if i in rows]
    archived = _archived_holding(settings, selector, terms)
    if selector.limit is not None:
        archived = archived[: max(0, selector.limit - len(chunks))]
    return Matched(tuple(chunks), archived)


def _archived_holding(settings: Settings, selector: ForgetSelector, terms: Sequence[QueryTerm]) -> tuple[str, ...]:
    """The ids of the archived events within the selector's criteria whose text holds every one of ``terms``."""
    from indexer.logrewrite import archived_events
    from indexer.sources import event_title
    from indexer.store.sqlite_read import texts_holding_every

    events = list(archived_events(settings, selector))
    held = texts_holding_every(((event_title(e), e["content"]) for e in events), terms)
    return tuple(dict.fromkeys(str(events[i]["id"]) for i in held))
