"""The team database of the ``db_url`` setting, opened in one place (:func:`open_team`), what ``memsearch
status`` says of it (:func:`team_status`), and the memo of a failed connection (:func:`recent_failure`), which
search writes and reads and a successful sync clears. Filling it is :mod:`indexer.sync`; search reads it through
:mod:`search_engine.reading`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from indexer.base.dburl import database_id, fingerprint, mask_url
from indexer.base.errors import MemsearchError, UsageError, one_line
from indexer.base.paths import TEAM_FORGET, TEAM_FORGET_DIR, TEAM_SYNCED, TEAM_UNREACHABLE, user_state_dir
from indexer.base.private import write_private
from indexer.base.settings import Settings

if TYPE_CHECKING:
    from indexer.store.postgres import PgStore

#: Seconds to wait for the team database before saying it cannot be reached.
CONNECT_TIMEOUT = 5.0
#: After a failed connection, searches read the local index at once for this many seconds instead of waiting for
#: the server again: every process of the memory root (each prompt hook is a new one, and a host that drops packets
#: costs libpq's 2 s minimum connect timeout), through the state file :data:`~indexer.base.paths.TEAM_UNREACHABLE`.
TEAM_RETRY = 30.0
#: The longest reason kept in the memo (one line of a driver error, the URL masked).
MEMO_REASON_CHARS = 400


class TeamUnavailable(MemsearchError):
    """The team database cannot be reached or used (the message names it with its password masked)."""


#: What a command that needs the team database says when the team extra is not installed.
NEEDS_EXTRA = "the team database needs the team extra: pip install 'memsearch-hybrid[team]'"


def open_team(settings: Settings, timeout: float = CONNECT_TIMEOUT, max_size: int = 2) -> PgStore:
    """The team store of ``settings.db_url``; :class:`TeamUnavailable` (one line, password masked) when it cannot
    be reached, its schema is not the one this version needs, or the team extra is not installed."""
    if settings.db_url is None:
        raise UsageError("no team database is set: set db_url in the memory root's memsearch.toml, "
                         "MEMSEARCH_DB_URL or --db-url")
    try:
        from indexer.store.postgres import PgStore, StoreUnavailable
    except ImportError:
        raise TeamUnavailable(NEEDS_EXTRA
                              ) from None
    try:
        return PgStore(settings.db_url, max_size=max_size, timeout=timeout)
    except StoreUnavailable as exc:
        raise TeamUnavailable(str(exc)) from None


def team_status(settings: Settings, model: str | None, timeout: float = 2.0) -> dict[str, Any] | None:
    """What ``status`` shows of the team database: its URL (masked), whether it answers, and what the connecting
    member sees there (own chunks, chunks others shared, content awaiting a vector of ``model``), and when this memory
    root last synced to it (:func:`last_synced`); None without ``db_url``."""
    if settings.db_url is None:
        return None
    out: dict[str, Any] = {"url": mask_url(settings.db_url), "reachable": False, "reason": None,
                           "last_synced": last_synced(settings)}
    try:
        team = open_team(settings, timeout=timeout)
    except MemsearchError as exc:
        return {**out, "reason": str(exc)}
    try:
        counts = team.health(model)
        return {**out, "reachable": True, "role": team.role, "chunks": counts.chunks, "own_chunks": counts.own_chunks,
                "shared_by_others": counts.shared_by_others, "pending_embeddings": counts.pending_embeddings}
    finally:
        team.close()


def record_sync(settings: Settings, at: str) -> None:
    """Note that this memory root's sync to ``settings.db_url`` ran to its end at ``at`` (a sync does, last)."""
    try:
        write_private(settings.state_dir / TEAM_SYNCED,
                      json.dumps({"team": database_id(settings.db_url), "at": at}).encode())
    except OSError:  # a read-only memory root: status says "never"
        pass


def last_synced(settings: Settings) -> str | None:
    """When this memory root last synced to the team database of ``settings`` to its end (local time, as the index's
    ``last_indexed``), or None: never, or only to another database (the same one reached with another password or
    as ``127.0.0.1`` instead of ``localhost`` is the same: :func:`~indexer.base.dburl.database_id`)."""
    try:
        record = json.loads((settings.state_dir / TEAM_SYNCED).read_bytes())
        return str(record["at"]) if record.get("team") == database_id(settings.db_url) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def recent_failure(settings: Settings) -> str | None:
    """Why the team database of ``settings`` could not be reached, if a process of this memory root failed to
    within the last :data:`TEAM_RETRY` seconds (the memo names the database by fingerprint, never by its URL)."""
    try:
        memo = json.loads((settings.state_dir / TEAM_UNREACHABLE).read_bytes())
        at, reason = float(memo["at"]), str(memo["reason"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if memo.get("team") != fingerprint(settings.db_url) or not 0 <= time.time() - at < TEAM_RETRY:
        return None
    return reason[:MEMO_REASON_CHARS]


def remember_failure(settings: Settings, reason: str) -> None:
    memo = {"team": fingerprint(settings.db_url), "at": time.time(), "reason": reason[:MEMO_REASON_CHARS]}
    try:
        write_private(settings.state_dir / TEAM_UNREACHABLE, json.dumps(memo).encode())
    except OSError:  # a read-only memory root: each search waits for the database, as without the memo
        pass


def forget_failure(settings: Settings) -> None:
    _drop_state(settings, TEAM_UNREACHABLE)


def forget_on_team(settings: Settings, uids: list[str], then: Callable[[PgStore], int] | None = None
                   ) -> tuple[int | None, str | None]:
    """Remove the member's own chunks with ids ``uids`` from the team database (``memsearch forget``; row-level
    security lets a member delete only their own rows). When it cannot be reached, the ids are kept in the state
    file :data:`~indexer.base.paths.TEAM_FORGET` and the next sync removes them first. ``then(team)``: what else the
    forget changed, sent right after on the same store (the session summaries it rewrote or deleted:
    :func:`indexer.sync.push_sources`); it returns chunks removed. Returns (chunks removed, or None without
    ``db_url`` or when not reached; None or why they are still there, in one line)."""
    if settings.db_url is None or not uids:
        return None, None
    try:
        team = open_team(settings)
    except MemsearchError as exc:
        return None, f"{exc}: {_left_for_sync(settings, uids)}"
    try:
        removed = team.delete_uids(uids)
        if then is not None:
            removed += then(team)
        return removed, None
    except _team_errors() as exc:
        return None, f"the team database {mask_url(settings.db_url)} failed ({one_line(exc)}): {_left_for_sync(settings, uids)}"
    finally:
        team.close()


def owner_elsewhere(settings: Settings, chunk_id: str, timeout: float = 2.0) -> str | None:
    """The member whose chunk ``chunk_id`` (or a unique prefix of it) is on the team database, when it is not the
    connecting member's own (a note another member shared): what ``forget`` names instead of "no memory". None
    without ``db_url`` or when no such chunk is seen; :class:`TeamUnavailable` (one line, password masked) when the
    database could not be asked (not reached within ``timeout``, or failing), so "no memory" can say it was not."""
    if settings.db_url is None or not chunk_id:
        return None
    try:
        team = open_team(settings, timeout=timeout, max_size=1)
    except TeamUnavailable:
        raise
    except MemsearchError as exc:
        raise TeamUnavailable(str(exc)) from None
    try:
        found = team.find_uid_prefix(chunk_id.lower(), limit=2)
        owners = {row.owner for row, _, _ in found}
        return owners.pop() if len(found) == 1 and len(owners) == 1 and team.role not in owners else None
    except _team_errors() as exc:
        raise TeamUnavailable(f"the team database {mask_url(settings.db_url)} failed ({one_line(exc)})") from None
    finally:
        team.close()


def pending_forgets(settings: Settings) -> list[str]:
    """The chunk ids ``forget`` could not remove from the team database yet: this memory root's, and those any other
    root of the user on this machine forgot for the same database and role (:func:`_forget_files`). Nothing waiting
    is two failed ``open()`` calls and the URL's digest (measured: 45 µs, against 18 µs for the root's file alone)."""
    found: set[str] = set()
    for path in _forget_files(settings):
        found.update(_read_ids(path))
    return sorted(found)


def apply_pending_forgets(settings: Settings, team: PgStore) -> int | None:
    """Remove from ``team`` the chunk ids a ``forget`` could not remove there when it ran (the first connection that
    succeeds does it, whatever opened it: a search, a hook, ``show``, a sync, from any memory root of the user on
    this machine), and forget them here. Returns the chunks removed, or None when there were none or the database
    failed (the ids stay for the next connection; searches leave them out meanwhile)."""
    uids = pending_forgets(settings)
    if not uids:
        return None
    try:
        removed = team.delete_uids(uids)
    except _team_errors():
        return None
    drop_pending_forgets(settings, uids)
    return removed


def drop_pending_forgets(settings: Settings, done: list[str]) -> None:
    """Forget ``done`` from the pending ids (this root's and the user's), keeping any a ``forget`` added meanwhile."""
    gone = set(done)
    for path in _forget_files(settings):
        ids = _read_ids(path)
        left = sorted(set(ids) - gone)
        if left == ids:
            continue
        try:
            if left:
                write_private(path, json.dumps(left).encode())
            else:
                path.unlink(missing_ok=True)
        except OSError:  # a read-only folder: the ids stay, removed again (a no-op) by the next connection
            pass


def clear_pending_forgets(settings: Settings) -> None:
    drop_pending_forgets(settings, pending_forgets(settings))


def _forget_files(settings: Settings) -> list[Path]:
    """Where the pending forgets are kept: the memory root's :data:`~indexer.base.paths.TEAM_FORGET`, and the
    user's list for this database and role (:data:`~indexer.base.paths.TEAM_FORGET_DIR`, by
    :func:`~indexer.base.dburl.database_id`: a changed password or another name for localhost is the same list),
    which every other memory root of the user on this machine reads too."""
    files = [settings.state_dir / TEAM_FORGET]
    ident = database_id(settings.db_url)
    if ident is not None:
        files.append(user_state_dir() / TEAM_FORGET_DIR / f"{ident}.json")
    return files


def _read_ids(path: Path) -> list[str]:
    try:
        with open(path, "rb") as f:  # not Path.read_bytes: a third of the cost when the file is absent (measured)
            found = json.loads(f.read())
    except (OSError, ValueError):
        return []
    return sorted(str(u) for u in found) if isinstance(found, list) else []


def _left_for_sync(settings: Settings, uids: list[str]) -> str:
    """Keep ``uids`` for the next sync to remove from the team database, in the memory root and for the user's
    other roots (:func:`_forget_files`); what the user is told of them."""
    root, *user = _forget_files(settings)
    try:
        write_private(root, json.dumps(sorted(set(_read_ids(root)) | set(uids))).encode())
    except OSError as exc:
        return (f"the team database still holds them, and they could not be noted for the next sync "
                f"({exc.strerror or exc}): it keeps them")
    for path in user:
        try:
            write_private(path, json.dumps(sorted(set(_read_ids(path)) | set(uids))).encode())
        except OSError as exc:
            return (f"the team database still holds them; the next `memsearch sync` removes them there, and until "
                    f"then your other memory roots may still show them (the list they read could not be written: "
                    f"{exc.strerror or exc})")
    return "the team database still holds them; the next `memsearch sync` removes them there"


def _drop_state(settings: Settings, name: str) -> None:
    try:
        (settings.state_dir / name).unlink(missing_ok=True)
    except OSError:  # a read-only memory root: the file stays, as it was written
        pass


def _team_errors() -> tuple[type[BaseException], ...]:
    import psycopg
    import psycopg_pool

    from indexer.store.postgres import StoreUnavailable

    return psycopg.Error, psycopg_pool.PoolTimeout, StoreUnavailable
