"""Seeing what the memory holds without guessing a query: ``memsearch sessions``, ``recent`` and ``stats``.

All three read the index search reads (never the model), so they answer in milliseconds and never load fastembed:
with ``db_url`` set, what the member sees on the team store (the local index when it cannot be reached; ``stats``
says so). Events are counted once each, however many chunks a long one was split into.

>>> from indexer.base.settings import resolve_settings
>>> list_sessions(resolve_settings("/tmp/memsearch-doctest-browse"))
[]
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import replace

from indexer import tombstones
from indexer.base.chunktext import TURN_TYPES
from indexer.base.errors import UsageError
from indexer.base.reports import PrivacyStats, SessionInfo, Stats, StorageEntry
from indexer.base.settings import Settings
from indexer.base.types import KINDS, Hit
from indexer.privacy import kinds as marker_kinds
from indexer.sources import printable_path
from indexer.store import Store
from indexer.store.local import SqliteStore
from indexer.summaries import summary_path
from search_engine.hits import make_hit
from search_engine.reading import read_configured

MAX_RECENT = 1000
#: What ``recent --type`` takes: a kind, or the type of an event the hooks and transcript imports record.
RECENT_TYPES = (*KINDS, *TURN_TYPES, "tool")


def _opening(text: str) -> bool:
    """Whether a prompt is a real request (not a greeting, an acknowledgement or a bare slash command)."""
    flat = text.strip()
    return len(flat) >= 10 and not (flat.startswith("/") and " " not in flat)


def list_sessions(settings: Settings, *, project: str | None = None, limit: int | None = None) -> list[SessionInfo]:
    """Every captured session, the latest first: id, project, first and last time, events by type and the first
    real prompt."""
    if limit is not None and limit < 1:
        raise UsageError("--limit must be at least 1")
    def read(store: Store | None) -> tuple[dict[str, dict], list[str], dict[str, str]]:
        if store is None:
            return {}, [], {}
        sessions: dict[str, dict] = {}
        for sid, category, n, first, last, proj in store.session_event_counts(project):
            s = sessions.setdefault(sid, {"counts": {}, "first": first, "last": last, "project": proj})
            s["counts"][category] = n
            s["first"] = min(filter(None, (s["first"], first)), default=None)
            s["last"] = max(filter(None, (s["last"], last)), default=None)
            s["project"] = s["project"] or proj
        order = sorted(sessions, key=lambda sid: (sessions[sid]["last"] or "", sid), reverse=True)
        if limit is not None:
            order = order[:limit]
        return sessions, order, _first_prompts(store, order)

    (sessions, order, openings), _ = read_configured(settings, read)
    out = []
    for sid in order:
        s = sessions[sid]
        summary = summary_path(settings, sid)
        out.append(SessionInfo(
            session_id=sid, project=s["project"], first_ts=s["first"], last_ts=s["last"],
            events=sum(s["counts"].values()), counts=dict(sorted(s["counts"].items())),
            first_prompt=openings.get(sid),
            summary_path=summary.relative_to(settings.home).as_posix() if summary.is_file() else None,
        ))
    return out


def session_count(settings: Settings) -> int:
    """How many sessions the memory holds, whatever their project (what ``sessions --project`` that finds none
    tells beside it)."""
    count, _ = read_configured(settings, lambda store: 0 if store is None else store.event_counts()[2])
    return count


def _first_prompts(store: Store, sessions: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for sid, text in store.session_prompts(sessions):
        if sid not in found and _opening(text):
            found[sid] = " ".join(text.split())[:200]
    return found


def recent(
    settings: Settings, *, session: str | None = None, type: str | None = None, project: str | None = None,
    limit: int = 20, offset: int = 0,
) -> list[Hit]:
    """The latest items, newest first, one per event (a long event's first chunk), after the first ``offset`` of
    them (the viewer's older pages). ``type`` is a kind (note, fact, event) or an event type (prompt, response,
    tool, …). Superseded, archived and retired items are left out."""
    if not 1 <= limit <= MAX_RECENT:
        raise UsageError(f"--limit must be between 1 and {MAX_RECENT}")
    if offset < 0:
        raise UsageError("the offset must be 0 or more")
    if type is not None and type not in RECENT_TYPES:
        raise UsageError(f"invalid type {type!r}: use one of {', '.join(RECENT_TYPES)}")
    rows, _ = read_configured(settings, lambda store: [] if store is None else store.recent_rows(
        session=session, type=type, project=project, limit=limit, offset=offset))
    return [make_hit(row) for row in rows]


def stats(settings: Settings) -> Stats:
    """What the memory holds: events by type and day, chunks by kind, embeddings pending, storage under the
    memory root, what the privacy filter took out, and how many notes ``forget`` keeps hidden."""
    from indexer.base.embedder import resolve_model

    storage = _storage(settings)
    hidden = tombstones.load(settings.state_dir).count
    choice = resolve_model(settings)

    def read(store: Store | None) -> Stats | None:
        if store is None:
            return None
        by_type, by_day, sessions = store.event_counts()
        counts = store.health(choice.model_id if choice.available else None)
        return Stats(
            events=sum(by_type.values()), events_by_type=by_type, events_by_day=by_day, sessions=sessions,
            chunks=sum(counts.by_kind.values()), chunks_by_kind=dict(counts.by_kind),
            pending_embeddings=counts.pending_embeddings, storage=storage, privacy=_privacy(store),
            tombstones=hidden, last_indexed=store.get_meta("last_indexed"),
            store="local" if isinstance(store, SqliteStore) else "team")

    found, note = read_configured(settings, read)
    if found is None:
        found = Stats(0, {}, {}, 0, 0, {}, 0, storage, PrivacyStats(0, {}, 0, 0), hidden, None)
    return replace(found, note=note) if note else found


def _privacy(store: Store) -> PrivacyStats:
    """Markers counted in the indexed text, once per event (the overlap between a long event's chunks would
    count a marker twice) or note chunk; session summaries are left out, since they repeat their events."""
    private, chunks, sessions = 0, 0, set()
    secrets: defaultdict[str, int] = defaultdict(int)
    seen_events: set[tuple[str, str]] = set()
    for kind, file, event_id, session_id, text in store.redacted_texts():
        if kind == "event" and event_id:
            if (file, event_id) in seen_events:
                continue
            seen_events.add((file, event_id))
        found = marker_kinds(text)  # the privacy filter's own markers: [REDACTED:private], [REDACTED:aws-key]…
        if not found:
            continue
        chunks += 1
        if session_id:
            sessions.add(session_id)
        for k, n in found.items():
            if k == "private":
                private += n
            else:
                secrets[k] += n
    return PrivacyStats(private, dict(sorted(secrets.items())), chunks, len(sessions))


def _storage(settings: Settings) -> tuple[StorageEntry, ...]:
    """Bytes under the memory root by top-level entry (a folder counts everything below it; memsearch's own
    ``.memsearch/`` one level deeper, so the index shows apart from the logs), the largest first."""
    home = settings.home
    if not home.is_dir():
        return ()
    sizes: dict[str, list[int]] = {}
    entries = [(e, e.name) for e in os.scandir(home) if e.path != str(settings.state_dir)]
    if settings.state_dir.is_dir():
        entries += [(e, f"{settings.state_dir.name}/{e.name}") for e in os.scandir(settings.state_dir)]
    for entry, label in sorted(entries, key=lambda pair: pair[1]):
        name = printable_path(label) + ("/" if entry.is_dir(follow_symlinks=False) else "")
        total, files = 0, 0
        if entry.is_dir(follow_symlinks=False):
            for dirpath, _, filenames in os.walk(entry.path, followlinks=False):
                for f in filenames:
                    try:
                        total += os.lstat(os.path.join(dirpath, f)).st_size
                        files += 1
                    except OSError:
                        pass
        else:
            try:
                total, files = entry.stat(follow_symlinks=False).st_size, 1
            except OSError:
                continue
        sizes[name] = [total, files]
    return tuple(StorageEntry(name, b, n) for name, (b, n) in sorted(sizes.items(), key=lambda kv: -kv[1][0]))
