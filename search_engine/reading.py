"""Which index search reads, opened in one place: the local SQLite file (:class:`indexer.store.local.SqliteStore`),
or with ``db_url`` set the team's PostgreSQL (:func:`open_team_for_search`, which gives up after
:data:`TEAM_TIMEOUT` so that a search, and the prompt hook, falls back to the local index in time). Everything in
:mod:`search_engine` reads through these or a store it is handed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from indexer.base.errors import MemsearchError, one_line
from indexer.base.settings import Settings
from indexer.status import open_existing
from indexer.store import Store, sqlite
from indexer.store.local import SqliteStore

T = TypeVar("T")


def open_store(settings: Settings) -> SqliteStore | None:
    """The index, or None when it was never built (reading never creates it)."""
    conn = open_existing(settings)
    return None if conn is None else SqliteStore(conn, settings.db_path)


@contextmanager
def reading(settings: Settings, store: Store | None = None) -> Iterator[Any]:
    """The index (``store`` when one is given: it stays open; else the local one, :func:`open_store`, opened here
    and closed after; None when it was never built), read under :func:`indexer.store.sqlite.damage_guard`, which
    marks the file damaged when SQLite finds it corrupt."""
    own = store is None
    if own:
        store = open_store(settings)
    try:
        with sqlite.damage_guard(settings.db_path):
            yield store
    finally:
        if own and store is not None:
            store.close()


#: Seconds a search waits for the team database before it reads the local index instead (libpq counts whole
#: seconds, and waits at least 2).
TEAM_TIMEOUT = 1.0
def open_team_for_search(settings: Settings, max_size: int = 2, settle: bool = False) -> tuple[Any, str | None]:
    """The team store of ``settings.db_url`` (its :class:`~indexer.store.postgres.PgStore`, a pool of up to
    ``max_size`` connections) and None, or None and why it cannot be used (unreachable, refused, another schema, the
    team extra missing): one line, password masked. Not tried again within :data:`~indexer.team.TEAM_RETRY`
    seconds of a failure (the memo of :func:`indexer.team.recent_failure`). With ``settle``, once connected, the ids
    a ``forget`` could not remove there are removed first (:func:`indexer.team.apply_pending_forgets`): one
    ``DELETE`` that reads the member's chunks (measured: 15-25 ms at 100k chunks), done once, when any are pending.
    Searches do not settle (the prompt hook's budget): they leave those ids out of their results instead."""
    from indexer.team import (
        apply_pending_forgets,
        forget_failure,
        open_team,
        recent_failure,
        remember_failure,
    )

    remembered = recent_failure(settings)
    if remembered is not None:
        return None, remembered
    try:
        team = open_team(settings, timeout=TEAM_TIMEOUT, max_size=max_size)
    except MemsearchError as exc:
        remember_failure(settings, str(exc))
        return None, str(exc)
    forget_failure(settings)
    if settle:
        apply_pending_forgets(settings, team)
    return team, None


def read_configured(settings: Settings, read: Callable[[Any], T]) -> tuple[T, str | None]:
    """``read(store)`` on the index search reads (``show``, ``timeline``, ``recent``, ``sessions``, ``stats`` and
    the standing context use it): with ``db_url`` the team store (a connection of its own, closed after); when that
    cannot be reached or fails mid-way, the local one (None when it was never built), and why, in one line. What a
    ``forget`` could not remove from the team store yet is removed first (these reads have no filter of their own).
    Returns (what ``read`` returned, None or that reason)."""
    reason = None
    if settings.db_url is not None:
        team, reason = open_team_for_search(settings, max_size=1, settle=True)
        if team is not None:
            try:
                return read(team), None
            except team_errors() as exc:  # the server went away mid-read: the local index answers
                reason = f"the team database failed ({one_line(exc)})"
            finally:
                team.close()
    with reading(settings) as store:
        return read(store), (None if reason is None else f"{reason}: read the local index")


def team_errors() -> tuple[type[BaseException], ...]:
    """What a team store raises when its server fails during a query (the driver's errors, the pool's timeout)."""
    import psycopg
    import psycopg_pool

    from indexer.store.postgres import StoreUnavailable

    return psycopg.Error, psycopg_pool.PoolTimeout, StoreUnavailable
