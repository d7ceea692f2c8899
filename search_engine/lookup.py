"""Reading single chunks by id: ``memsearch show``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from indexer.base.errors import NotFound, UsageError
from indexer.base.reports import ChunkView, ForgetSelector, Timeline
from indexer.base.settings import Settings
from indexer.base.types import Hit
from indexer.store import HitRow
from indexer.store.local import SqliteStore
from search_engine.hits import make_hit
from search_engine.reading import reading

MIN_PREFIX = 4


@contextmanager
def _open(settings: Settings) -> Iterator[SqliteStore]:
    """The index, read under :func:`indexer.store.sqlite.damage_guard` and closed after."""
    with reading(settings) as store:
        if store is None:
            raise NotFound("the index was never built; run `memsearch index` first")
        yield store


def _find(store: SqliteStore, ident: str) -> tuple[HitRow, str, int]:
    """The row of the chunk whose id is ``ident`` or starts with it (unambiguously), plus its file and seq."""
    ident = ident.strip().lower()
    if len(ident) < MIN_PREFIX or len(ident) > 32 or not all(c in "0123456789abcdef" for c in ident):
        raise UsageError(f"invalid id {ident!r}: ids are hexadecimal, as printed by `memsearch search`")
    rows = store.find_uid_prefix(ident, limit=2)
    if not rows:
        raise NotFound(f"no chunk with id {ident}; ids change when their source changes, search again")
    if len(rows) > 1:
        raise UsageError(f"id prefix {ident} is ambiguous; give more characters")
    return rows[0]


def get_many(settings: Settings, idents: list[str]) -> list[Hit]:
    """Full chunks for several ids (unknown ones are skipped)."""
    with _open(settings) as store:
        out = []
        for ident in idents:
            try:
                out.append(make_hit(_find(store, ident)[0]))
            except NotFound:
                continue
        return out


def timeline(settings: Settings, ident: str, window: int = 5) -> Timeline:
    """The ``window`` chunks before and after a chunk in time. With a session, its own session's chunks;
    otherwise everything dated."""
    if not 1 <= window <= 100:
        raise UsageError("--window must be between 1 and 100")
    with _open(settings) as store:
        row = _find(store, ident)[0]
        before, after = store.around(row, window)
        return Timeline(make_hit(row), tuple(make_hit(r) for r in before), tuple(make_hit(r) for r in after))


def show(settings: Settings, ident: str) -> ChunkView:
    """The chunk whose id is ``ident`` (or starts with it, when that is unambiguous), with its neighbours."""
    with _open(settings) as store:
        row, file, seq = _find(store, ident)
        prev, nxt, count = store.neighbours(file, seq)
        return ChunkView(make_hit(row), prev, nxt, count)


def matching(settings: Settings, selector: ForgetSelector) -> list[str] | None:
    """The ids ``memsearch search`` shows for ``selector.match`` with the selector's filters (``limit`` hits,
    ``mode`` as for search): what ``forget --match`` takes. None when the selector has no ``match``. Events logged
    since the last index run are indexed first, so a dry run finds them too."""
    if not selector.match:
        return None
    from datetime import datetime, timedelta

    from indexer.base.paths import EVENTS_DIR
    from indexer.pipeline import ingest
    from search_engine.filters import Filters
    from search_engine.search import search

    if settings.db_path.exists() and (settings.home / EVENTS_DIR).is_dir():
        ingest(settings, [settings.home / EVENTS_DIR], lock_timeout=2.0)
    until = None
    if selector.before:
        until = (datetime.fromisoformat(selector.before) - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S")
    filters = Filters(session=selector.session, project=selector.project, since=selector.since, until=until)
    result = search(settings, selector.match, mode=selector.mode, k=selector.limit, filters=filters)
    return [h.id for h in result.hits]
