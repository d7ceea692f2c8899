"""``memsearch sync``: push the local index to the team store (``db_url``), incrementally and without loss.

The local files stay the source of truth and the local SQLite index what they were indexed into; the team store
gets a copy of it, source by source, through the :class:`indexer.store.Store` operations only:

- **Sources** are keyed on the team store by this machine's name and their path (``host:/abs/path``), so one
  member's two machines keep their own sources (a path that exists on both is two sources). A sync deletes only
  what its own memory root sent: the sources under the root, and the extra ones (``extra_sources``, outside it)
  listed in the root's record on the team store (:func:`root_meta_key`: per member, machine and root), so an extra
  source dropped from the settings is still deleted, and the sources of another memory root on this machine (or of
  a root inside this one) are left as they are; the report counts those (``other_roots``). A source whose
  recorded state (mtime, size, content hash, bytes consumed) differs from the team store's copy is sent again with
  :meth:`~indexer.store.postgres.PgStore.replace_sources`, together with others up to :data:`SOURCE_BATCH` chunks:
  one transaction that drops the chunks they no longer have and adds only those the team store lacks (by uid;
  a binary ``COPY`` and one ``INSERT … SELECT``). A source gone from the local index is deleted there. A chunk
  the server refuses for its own content (too large to index, say) is left out and named in the report's
  ``skipped``, and everything else is sent: one bad chunk never stops the sync. It is tried again when its source
  changes; the local index keeps it meanwhile.
- **Sharing**: the notes and facts of a source matching a ``share`` glob go as ``shared`` (every member sees
  them), everything else as ``private``; a change of ``share`` re-marks every source at the next sync.
- **Vectors** are keyed by (content hash, model), one per hash for the whole team: only the hashes the team store
  lists as pending for the local index's model are sent, taken from the vectors the local index holds (never
  computed again here), or as ``None`` where the model gave none; a hash the local index has not embedded yet stays
  pending. Chunk ids ``forget`` could not remove from the team store when it ran are removed first. Once every
  source is written, the vectors of the content the sync removed and no chunk holds any more (anyone's) are
  deleted, as a forget deletes them; content that only moved within the sync keeps its vector. A sync stopped
  before that step leaves those vectors, unused, until a later sync removes more of the same content.
- **The root's record** (JSON in the member's meta, written last): the extra sources it sent, its ``share`` globs,
  when it last synced, its local index's time and model; and, on this machine,
  :data:`~indexer.base.paths.TEAM_SYNCED` (when this root last synced to that database, for ``status``).

A sync that completes clears the memo of a failed connection (:func:`indexer.team.recent_failure`), so searches
use the team store again at once rather than when the memo expires.

Stopped anywhere (kill -9, the server going away), every source on the team store is as it was before the sync
or as it is locally, and the next sync sends what is left; writes are idempotent, so nothing is duplicated.

>>> machine_key("laptop", "/home/a/.claude/memory/MEMORY.md")
'laptop:/home/a/.claude/memory/MEMORY.md'
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from indexer.base.dburl import database_id, mask_url
from indexer.base.errors import one_line
from indexer.base.paths import TEAM_VECTORS
from indexer.base.private import write_private
from indexer.base.settings import Settings
from indexer.base.storable import storable
from indexer.status import open_existing
from indexer.store import ChunkRow, SourceState
from indexer.store.local import SqliteStore
from indexer.team import (
    TeamUnavailable,
    drop_pending_forgets,
    forget_failure,
    open_team,
    pending_forgets,
    record_sync,
)

if TYPE_CHECKING:
    from indexer.store.postgres import PgStore

#: Vectors per transaction.
VECTOR_BATCH = 1024
#: Connections sending vectors at once (the team store's pool holds 4).
VECTOR_WRITERS = 2
#: A sync that changed nothing still looks for content the team store lacks a vector for this often (seconds):
#: what only an administrator could have taken away since (a vector a chunk of this member still holds).
VECTOR_CHECK_EVERY = 24 * 3600
#: Chunks (and sources) per transaction: the sources are sent together until they hold about this many.
SOURCE_BATCH = 2000
#: The kinds a member may share (the database refuses a shared event).
SHAREABLE = ("note", "fact")
#: The team store's meta key holding the ``share`` globs of the last sync before roots kept their own record (read
#: only when a root has none yet: an upgrade re-marks nothing).
SHARE_META = "share"
#: The member's meta key of the newest local index time any of their roots synced (what a search's health says).
LAST_INDEXED_META = "last_indexed"


@dataclass(frozen=True)
class SyncReport:
    """What one sync did. ``vectors_pending``: content the team store still has no vector for (of the local
    index's model), which the local index could not supply either. ``skipped``: one line per chunk the team store
    refused (where it is and why), which the sync left out."""

    target: str
    machine: str
    sources_sent: int = 0
    sources_unchanged: int = 0
    sources_deleted: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    vectors_sent: int = 0
    vectors_pending: int = 0
    model: str | None = None
    note: str | None = None
    skipped: tuple[str, ...] = ()
    other_roots: int = 0


def machine_name() -> str:
    """This machine's name, which keys its sources on the team store."""
    return socket.gethostname() or "localhost"


def machine_key(machine: str, path: str) -> str:
    return f"{machine}:{path}"


def root_meta_key(machine: str, home: str) -> str:
    """The member's meta key of one memory root's record on the team store.

    >>> root_meta_key("laptop", "/home/a/.claude/memory")
    'root:laptop:/home/a/.claude/memory'
    """
    return f"root:{machine}:{home.rstrip('/') or '/'}"


def _root_record(value: str | None) -> dict:
    try:
        record = json.loads(value) if value else {}
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def sync(settings: Settings, team: PgStore | None = None, machine: str | None = None) -> SyncReport:
    """Push the local index to the team store (``team``, or :func:`open_team`); see the module docstring.
    Raises :class:`TeamUnavailable` when the database cannot be reached or fails mid-way (what was sent stays)."""
    machine = machine or machine_name()
    target = mask_url(settings.db_url or "")
    if not settings.db_path.exists():
        return SyncReport(target, machine, note="the local index was never built: run `memsearch index`")
    own = team is None
    if team is None:
        team = open_team(settings)  # first: without the team extra, this says so in one line
    from indexer.store.postgres import StoreUnavailable

    local: SqliteStore | None = None
    try:
        conn = open_existing(settings)
        if conn is None:  # deleted meanwhile
            return SyncReport(target, machine, note="the local index was never built: run `memsearch index`")
        local = SqliteStore(conn, settings.db_path)
        report = _push(local, team, settings, target, machine)
        record_sync(settings, _now())
        forget_failure(settings)  # the database answers: searches need not wait out the memo of a failure
        return report
    except StoreUnavailable as exc:
        raise TeamUnavailable(str(exc)) from None
    except _driver_errors() as exc:
        raise TeamUnavailable(f"the sync to {target} stopped: {one_line(exc)}; what was sent stays, "
                              f"the next `memsearch sync` sends the rest") from None
    finally:
        if local is not None:
            local.close()
        if own:
            team.close()


def _driver_errors() -> tuple[type[BaseException], ...]:
    import psycopg
    import psycopg_pool

    return psycopg.Error, psycopg_pool.PoolTimeout


def shared(settings: Settings, path: str) -> bool:
    """Whether the source at ``path`` (absolute) matches a ``share`` glob, tried on its path relative to the
    memory root and on the absolute one.

    >>> from indexer.base.settings import resolve_settings
    >>> s = resolve_settings("/m", share=["areas/projects/*"])
    >>> shared(s, "/m/areas/projects/api/summary.md"), shared(s, "/m/daily/2026-11-20.md")
    (True, False)
    """
    from fnmatch import fnmatch

    home = str(settings.home).rstrip("/") + "/"
    relative = path[len(home):] if path.startswith(home) else None
    return any(fnmatch(path, glob) or (relative is not None and fnmatch(relative, glob)) for glob in settings.share)


def _rows(local: SqliteStore, settings: Settings, path: str) -> list[ChunkRow]:
    """The chunks of ``path`` as the team store gets them: notes and facts of a shared source marked shared."""
    rows = local.chunk_rows(path)
    if not shared(settings, path):
        return rows
    return [r._replace(scope="shared") if r.kind in SHAREABLE else r for r in rows]


def _push(local: SqliteStore, team: PgStore, settings: Settings, target: str, machine: str) -> SyncReport:
    last_vectors = _take_vectors_mark(settings)  # put back only by a sync that gets to its vector step
    forgotten = pending_forgets(settings)
    if forgotten:  # what `forget` could not remove from the team store when it ran
        team.delete_uids(forgotten)
        drop_pending_forgets(settings, forgotten)
    prefix = machine_key(machine, "")
    home = str(settings.home).rstrip("/") + "/"
    roots = f"root:{machine}:"
    records = team.meta_items(roots)
    me = root_meta_key(machine, str(settings.home))
    record = _root_record(records.get(me))
    inside = [key[len(roots):].rstrip("/") + "/" for key in records if key != me]
    inside = [root for root in inside if root.startswith(home)]  # another root of this machine, within this one
    local_sources = local.sources()
    local_keys = {machine_key(machine, path) for path in local_sources}
    extra_before = set(record.get("extra") or ())

    def mine(key: str) -> bool:
        """A source this root sent: under it (not under a root inside it), or an extra one it recorded."""
        path = key[len(prefix):]
        return key in local_keys or key in extra_before or (
            path.startswith(home) and not any(path.startswith(root) for root in inside))

    on_machine = {path: state for path, state in team.sources().items() if path.startswith(prefix)}
    ours = {key: state for key, state in on_machine.items() if mine(key)}
    other_roots = len(on_machine) - len(ours)
    sent = unchanged = deleted = added = removed = 0
    gone: set[str] = set()  # the content of every chunk this sync removes: its vector may have no chunk left
    skipped: list[str] = []
    sharing = storable(",".join(settings.share))  # as the team store keeps it
    # `share` changed since this root's last sync: re-mark every source
    resend = (record["share"] if "share" in record else team.get_meta(SHARE_META)) != sharing
    batch: list[tuple[SourceState, list[ChunkRow]]] = []
    size = 0
    for path, state in sorted(local_sources.items()):
        key = machine_key(machine, path)
        wanted = state._replace(path=key)
        if ours.pop(key, None) == wanted and not resend:
            unchanged += 1
            continue
        rows = _rows(local, settings, path)
        batch.append((wanted, rows))
        size += len(rows) + 1
        if size >= SOURCE_BATCH:
            a, r = team.replace_sources(batch, gone, skipped)
            sent, added, removed = sent + len(batch), added + a, removed + r
            batch, size = [], 0
    if batch:
        a, r = team.replace_sources(batch, gone, skipped)
        sent, added, removed = sent + len(batch), added + a, removed + r
    for key in sorted(ours):  # sources this root no longer has
        removed += team.delete_source(key, gone)
        deleted += 1
    # once every chunk is written: content that only moved (a renamed file, an edited note's unchanged paragraph)
    # is held again and keeps its vector
    team.drop_orphan_vectors(gone)
    model = local.vector_model()
    vectors = pending = 0
    if model is not None:
        mark = {"team": database_id(settings.db_url), "model": model, "local": local.vector_mark(model)}
        synced_at = _synced_at(last_vectors, mark)
        if not (sent or deleted or forgotten) and synced_at is not None:
            pending = team.health(model).pending_embeddings  # the kept counts' figure, for the report
            _put_vectors_mark(settings, mark, synced_at)
        else:
            vectors, pending = _push_vectors(local, team, model)
            _put_vectors_mark(settings, mark, time.time())
    indexed = local.get_meta("last_indexed")
    if indexed is not None and (team.get_meta(LAST_INDEXED_META) or "") < indexed:
        team.set_meta(LAST_INDEXED_META, indexed)
    team.set_meta(me, json.dumps({
        "extra": sorted(key for key in local_keys if not key[len(prefix):].startswith(home)), "share": sharing,
        "synced_at": _now(), "last_indexed": indexed, "vector_model": model}))
    return SyncReport(target, machine, sent, unchanged, deleted, added, removed, vectors, pending, model,
                      skipped=tuple(skipped), other_roots=other_roots)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())  # as the local index's ``last_indexed``


def push_sources(settings: Settings, team: PgStore, paths: list[str], machine: str | None = None) -> int:
    """Make the team store's copies of the local sources at ``paths`` (this machine's) what the local index holds
    now: sent again, or deleted when the local index no longer has them (``forget`` does it for
    the summaries it rebuilt). The vectors of their new content go with the next sync. Returns the chunks
    removed."""
    machine = machine or machine_name()
    conn = open_existing(settings)
    if conn is None:
        return 0
    local = SqliteStore(conn, settings.db_path)
    try:
        held = local.sources()
        items = [(held[path]._replace(path=machine_key(machine, path)), _rows(local, settings, path))
                 for path in sorted(set(paths)) if path in held]
    finally:
        local.close()
    gone: set[str] = set()
    _, removed = team.replace_sources(items, gone)
    for path in sorted(set(paths) - set(held)):
        removed += team.delete_source(machine_key(machine, path), gone)
    team.drop_orphan_vectors(gone)
    return removed


def _take_vectors_mark(settings: Settings) -> dict | None:
    """The record of the last sync whose vector step ran to its end (:data:`~indexer.base.paths.TEAM_VECTORS`),
    removed: a sync stopped before its own vector step (after sending chunks, say) leaves none, so the next one
    looks for missing vectors whatever it sends."""
    path = settings.state_dir / TEAM_VECTORS
    try:
        last = json.loads(path.read_bytes())
        path.unlink()
        return last if isinstance(last, dict) else None
    except (OSError, ValueError):
        return None


def _synced_at(last: dict | None, mark: dict) -> float | None:
    """When that step ran, if with the same team database, model and local vectors as now and within
    :data:`VECTOR_CHECK_EVERY`; else None. Then a sync that sent and removed nothing has no vector to send: every
    content of this member's chunks was offered the local vectors it has, none of those changed, and a vector
    leaves the team store only with the last chunk holding its content. Looking again is the costly part of a sync
    that changes nothing (an anti-join of every visible chunk with the vectors: 30 s at 1M chunks)."""
    try:
        at = float(last["at"]) if last is not None and last["mark"] == mark else None
    except (KeyError, TypeError, ValueError):
        return None
    return at if at is not None and 0 <= time.time() - at < VECTOR_CHECK_EVERY else None


def _put_vectors_mark(settings: Settings, mark: dict, at: float) -> None:
    try:
        write_private(settings.state_dir / TEAM_VECTORS, json.dumps({"mark": mark, "at": at}).encode())
    except OSError:  # a read-only memory root: the next sync looks again
        pass


def _push_vectors(local: SqliteStore, team: PgStore, model: str) -> tuple[int, int]:
    """Send the local vectors of the hashes the team store lacks; returns (sent, still pending). The local index
    is read here, in the caller's thread; the batches go to the team store over :data:`VECTOR_WRITERS`
    connections at once (each batch its own transaction), since keeping the HNSW graph up to date per inserted
    vector is the server's costliest part of a sync and one connection keeps one server core busy."""
    from concurrent.futures import ThreadPoolExecutor

    wanted = team.pending_hashes(model)
    sent = 0
    with ThreadPoolExecutor(max_workers=VECTOR_WRITERS, thread_name_prefix="memsearch-sync") as writers:
        running = []
        for i in range(0, len(wanted), VECTOR_BATCH):
            part = wanted[i : i + VECTOR_BATCH]
            found: dict[str, bytes | None] = dict(local.stored_vectors(model, part))
            # content the model gave no vector for (CJK for an English-only model) is sent as such: no longer pending
            found.update(dict.fromkeys(local.unrepresentable(model, [h for h in part if h not in found])))
            if found:
                running.append(writers.submit(team.put_embeddings, model, list(found.items())))
            if len(running) >= 2 * VECTOR_WRITERS:  # bounded: the local vectors are read as fast as they are sent
                sent += running.pop(0).result()
        sent += sum(f.result() for f in running)
    return sent, len(team.pending_hashes(model))
