"""The team database of the ``db_url`` setting, opened in one place (:func:`open_team`), and what ``memsearch
status`` says of it (:func:`team_status`). Filling it is :mod:`indexer.sync`; search reads it through
:mod:`search_engine.reading`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from indexer.base.dburl import mask_url
from indexer.base.errors import MemsearchError, UsageError
from indexer.base.settings import Settings

if TYPE_CHECKING:
    from indexer.store.postgres import PgStore

#: Seconds to wait for the team database before saying it cannot be reached.
CONNECT_TIMEOUT = 5.0


class TeamUnavailable(MemsearchError):
    """The team database cannot be reached or used (the message names it with its password masked)."""


def open_team(settings: Settings, timeout: float = CONNECT_TIMEOUT, max_size: int = 2) -> PgStore:
    """The team store of ``settings.db_url``; :class:`TeamUnavailable` (one line, password masked) when it cannot
    be reached, its schema is not the one this version needs, or the team extra is not installed."""
    if settings.db_url is None:
        raise UsageError("no team database is set: set db_url in the memory root's memsearch.toml, "
                         "MEMSEARCH_DB_URL or --db-url")
    try:
        from indexer.store.postgres import PgStore, StoreUnavailable
    except ImportError:
        raise TeamUnavailable("the team database needs the team extra: pip install 'memsearch-hybrid[team]'"
                              ) from None
    try:
        return PgStore(settings.db_url, max_size=max_size, timeout=timeout)
    except StoreUnavailable as exc:
        raise TeamUnavailable(str(exc)) from None


def team_status(settings: Settings, model: str | None, timeout: float = 2.0) -> dict[str, Any] | None:
    """What ``status`` shows of the team database: its URL (masked), whether it answers, and what the connecting
    member sees there (own chunks, chunks others shared, content awaiting a vector of ``model``); None without
    ``db_url``."""
    if settings.db_url is None:
        return None
    out: dict[str, Any] = {"url": mask_url(settings.db_url), "reachable": False, "reason": None}
    try:
        team = open_team(settings, timeout=timeout)
    except MemsearchError as exc:
        return {**out, "reason": str(exc)}
    try:
        counts = team.health(model)
        return {**out, "reachable": True, "role": team.role, "chunks": counts.chunks, "own_chunks": counts.own_chunks,
                "shared_by_others": counts.shared_by_others, "pending_embeddings": counts.pending_embeddings,
                "last_synced": team.get_meta("last_indexed")}
    finally:
        team.close()
