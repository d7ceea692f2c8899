"""``memsearch forget``: remove memories for good, from every file memsearch wrote and from the index.

:func:`plan_forget` says what a selector takes (the dry run); :func:`apply_forget` carries a plan out:

- **events** memsearch logged (``events/*.jsonl``): each forgotten line is overwritten, in a copy swapped in
  atomically under the log's append lock, by a ``{"forgotten":true}`` line of the same length, so every other
  event keeps its byte offset (and so its id) and the incremental indexer its place (:mod:`indexer.logrewrite`);
- **archives** (``archive/events/*.jsonl.gz``, not indexed): rewritten without the matching lines (``--match``
  reads their words too: :func:`search_engine.lookup.matching`);
- **Claude Code's transcripts** are not memsearch's to edit: hashes of each forgotten event (id, tool call, session
  and text) keep ``memsearch import transcripts`` from bringing it back (:func:`indexer.transcripts.remember_forgotten`);
- **session summaries** memsearch wrote: rebuilt from the events that remain (deleted, every chunk of it, when
  none remain, when the summary was named by id, or when its rebuilt text still holds every word of ``--match``;
  in the last two cases the session's next summary leaves out the events it summed up);
- **notes of the user** (anything else) are never edited: a tombstone (:mod:`indexer.tombstones`) hides the
  chunks while the file stays byte for byte the same, and the report says which lines to edit;
- **the team database** (``db_url``): the member's own chunks with those ids, from every machine of theirs (row-level
  security keeps everyone else's), and the chunks of the session summaries it rebuilt or deleted that the local
  index no longer holds, the summaries then sent again as they now are; when it cannot be reached, all those ids
  wait for the next connection (:func:`indexer.team.apply_pending_forgets`; searches leave them out meanwhile,
  also those of the user's other memory roots on this machine that use the same database) and the next
  ``memsearch sync`` sends the summaries;
- **the index**: chunks, their FTS rows and orphaned vectors are deleted with ``secure_delete`` on, the FTS index
  is merged (``optimize``) so no segment keeps the old terms, the WAL is checkpointed and truncated, and
  ``VACUUM`` runs when asked. A warm server sees the rows gone at its next read and reloads its vector matrix
  (the ``forget_epoch`` meta key is part of the matrix's stamp).

All of it runs under the maintenance lock (no rebuild can swap an older copy in) and the writer lock (no index
run or hook ingest writes meanwhile). The log (``.memsearch/logs/forget.log``) records ids and counts, never text.
"""

from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from pathlib import Path

from indexer import tombstones
from indexer.base.errors import SHORT_ID, MemsearchError, UsageError, forgotten_id, id_problem, unknown_id
from indexer.base.locks import LockTimeout, file_lock
from indexer.base.paths import EVENTS_DIR, FORGET_LOG, WRITER_LOCK
from indexer.base.private import private_dirs
from indexer.base.reports import ForgetItem, ForgetPlan, ForgetReport, ForgetSelector, Matched, NoteToEdit
from indexer.base.settings import Settings
from indexer.eventread import HEAD_BYTES, head_hash
from indexer.logrewrite import archive_matches, blank_lines, replace_file, rewrite_archive
from indexer.pipeline import index, ingest
from indexer.rebuild import maintenance_lock
from indexer.scan import scan
from indexer.store.local import SqliteStore
from indexer.store.sqlite_upkeep import StoredChunk
from indexer.summaries import build_summary, is_generated, summary_path
from indexer.sync import push_sources
from indexer.team import TeamUnavailable, forget_on_team, owner_elsewhere
from indexer.transcripts import remember_forgotten
from indexer.writer import refresh_replies

LOCK_TIMEOUT = 30.0
SNIPPET = 160


def _by_ids(store: SqliteStore, ids: tuple[str, ...], settings: Settings | None = None) -> set[int]:
    """Chunk row ids for chunk ids (or unique prefixes of at least 4 characters) and event ids. An id this memory
    root does not hold that is another member's shared note on the team database says so; when the team database
    could not be asked, "no memory" says that too."""
    found: set[int] = set()
    for raw in ids:
        value = raw.strip()
        rows = store.ids_of(value)
        problem = id_problem(value)
        if not rows and problem is None:
            rows = store.ids_with_prefix(value.lower(), limit=2)
            if len(rows) > 1:
                raise UsageError(f"id prefix {value!r} is ambiguous: give more characters")
        if not rows and problem == SHORT_ID:
            raise UsageError(f"invalid id {value!r}: {problem}")
        if not rows and settings is not None and (day := forgotten_on(settings, value)) is not None:
            raise forgotten_id(value.lower(), day)
        if not rows:
            try:
                owner = owner_elsewhere(settings, value) if settings is not None else None
            except TeamUnavailable as exc:
                raise unknown_id(value, f"the team database could not be reached to look for it there ({exc}): it "
                                        "may be a note another member shared there") from None
            if owner is not None:
                raise UsageError(f"memory {value!r} is a note {owner} shared on the team database: only its owner "
                                 f"can forget it (ask {owner})")
            raise unknown_id(value)
        found.update(rows)
    return found


def _select(store: SqliteStore, selector: ForgetSelector, matched: Matched | None,
            settings: Settings | None = None) -> list[StoredChunk]:
    chosen: set[int] | None = None
    if selector.ids:
        chosen = _by_ids(store, selector.ids, settings)
    if selector.match:
        if matched is None:
            raise UsageError("forget --match needs the ids of the chunks holding its words (search_engine.lookup.matching)")
        hits = {r.id for r in store.stored_chunks(uids=list(matched.chunks))} if matched.chunks else set()
        chosen = hits if chosen is None else chosen & hits
    if chosen is not None and not chosen:
        return []
    rows = store.stored_chunks(ids=sorted(chosen) if chosen is not None else None, session=selector.session,
                               project=selector.project, since=selector.since, before=selector.before)
    # an event goes whole: every chunk of a long event, not just the one a search found
    events = {(r.file, r.event_id) for r in rows if r.kind == "event" and r.event_id}
    have = {r.id for r in rows}
    for file, event_id in sorted(events):
        rows += [r for r in store.stored_chunks(file=file, event_id=event_id, kind="event") if r.id not in have]
    return rows


def _action(settings: Settings, row: StoredChunk, generated: dict[str, bool]) -> str:
    home = str(settings.home).rstrip("/") + "/"
    if row.kind == "event" and row.file.startswith(home + "events/"):
        return "rewrite"
    if row.file.startswith(home + "sessions/"):
        if row.file not in generated:
            generated[row.file] = is_generated(Path(row.file))
        if generated[row.file]:
            return "summary"
    return "tombstone"


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET else flat[: SNIPPET - 1] + "…"


def _summaries_touched(settings: Settings, rows: list[StoredChunk], generated: dict[str, bool]) -> set[str]:
    """The session summaries memsearch wrote that forgetting ``rows`` rebuilds or deletes: those a row is a chunk
    of, and those of the sessions whose events leave."""
    found = set()
    for r in rows:
        action = _action(settings, r, generated)
        if action == "summary":
            found.add(r.file)
        elif action == "rewrite" and r.session_id:
            path = summary_path(settings, r.session_id)
            if path.is_file() and is_generated(path):
                found.add(str(path))
    return found


def _doomed_summaries(settings: Settings, store: SqliteStore, selector: ForgetSelector, rows: list[StoredChunk],
                      generated: dict[str, bool]) -> list[StoredChunk]:
    """The other chunks of the session summaries the forget of ``rows`` deletes rather than rebuilds (no event of
    the session remains, the summary was named by id, or its rebuilt text still holds the words of ``--match``:
    :func:`_rebuilt_clears`): a deleted summary goes whole, so the dry run lists every chunk that leaves and the
    report counts them."""
    leaving = {r.event_id for r in rows if r.event_id and _action(settings, r, generated) == "rewrite"}
    selected = {r.file for r in rows if _action(settings, r, generated) == "summary"}
    have = {r.id for r in rows}
    extra: list[StoredChunk] = []
    for summary in sorted(_summaries_touched(settings, rows, generated)):
        session = _summary_session(store, Path(summary))
        text = None if session is None else build_summary(settings, session, without=leaving)
        if text is None or summary in selected and not _rebuilt_clears(selector, text):
            extra += [c for c in store.stored_chunks(file=summary) if c.id not in have]
    return extra


def plan_forget(settings: Settings, selector: ForgetSelector, matched: Matched | None = None) -> ForgetPlan:
    """What ``selector`` takes, changing nothing but the index's freshness (events logged since the last index
    run are indexed first, so a dry run lists them too). A ``match`` selector takes ``matched``: the chunks and
    the archived events holding every word of it, from :func:`search_engine.lookup.matching` (the indexer does
    not search).

    >>> from indexer.base.settings import resolve_settings
    >>> plan_forget(resolve_settings("/tmp/memsearch-doctest-forget"), ForgetSelector(session="s1")).items
    ()
    """
    if selector.empty:
        raise UsageError("say what to forget: ids, --session, --before, --since, --project or --match")
    rows: list[StoredChunk] = []
    generated: dict[str, bool] = {}
    if matched is None:  # matching() caught up before searching
        catch_up(settings)
    if settings.db_path.exists():
        with SqliteStore.open(settings.db_path) as store:
            rows = _select(store, selector, matched, settings)
            rows += _doomed_summaries(settings, store, selector, rows, generated)
    items = tuple(
        ForgetItem(r.uid, r.kind, r.category, r.title, r.path, _action(settings, r, generated), r.line_start,
                   r.line_end, r.event_id, r.ts, r.session_id, r.project, _snippet(r.text))
        for r in rows
    )
    by_action: dict[str, set[str]] = defaultdict(set)
    for item, row in zip(items, rows):
        by_action[item.action].add(row.file)
    event_ids = {i.event_id for i in items if i.action == "rewrite" and i.event_id}
    archived_ids = matched.archived if matched is not None and selector.match else ()
    archives = archive_matches(settings, selector, event_ids | set(archived_ids))
    summaries = _summaries_touched(settings, rows, generated)
    return ForgetPlan(
        selector=selector,
        items=items,
        event_logs=tuple(sorted(by_action["rewrite"])),
        archives=tuple(str(p) for p in archives),
        archived_events=sum(archives.values()),
        summaries=tuple(sorted(summaries)),
        notes=tuple(sorted(by_action["tombstone"])),
        archived_ids=archived_ids,
    )


def catch_up(settings: Settings) -> None:
    """Index what a selection must see before ``forget`` (or its dry run) answers: the events logged since the last
    index run, or, when there is no index (deleted: it is derived data; or never built, as when only the prompt
    hook ran), every source, for BM25 (no model is loaded; ``memsearch index`` embeds them later). Answered from a
    missing or stale index, a forget would say "nothing matches" while the files hold the words. Another writer is
    waited for up to :data:`LOCK_TIMEOUT` seconds, and then it fails rather than answer from a stale index."""
    if not settings.home.is_dir():
        return
    if not settings.db_path.exists():
        index(settings, embedder=None, lock_timeout=LOCK_TIMEOUT)
    elif (settings.home / EVENTS_DIR).is_dir() and not ingest(settings, [settings.home / EVENTS_DIR],
                                                              lock_timeout=LOCK_TIMEOUT):
        raise MemsearchError(f"an index run held {settings.state_dir / WRITER_LOCK} for {LOCK_TIMEOUT:.0f}s, so "
                             "the events logged since the last one could not be looked at: try again")


def _db_bytes(settings: Settings) -> int:
    return sum(p.stat().st_size for p in settings.db_path.parent.glob(settings.db_path.name + "*") if p.is_file())


def _log(settings: Settings, message: str) -> None:
    private_dirs(settings.log_dir)
    fd = os.open(settings.log_dir / FORGET_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}\n")


def was_forgotten(settings: Settings, ident: str) -> bool:
    """Whether the forget log records the chunk id ``ident`` (any case) as forgotten: what tells a memory that was
    forgotten from one that never existed, once the index holds neither (:func:`forgotten_on`).

    >>> from indexer.base.settings import resolve_settings
    >>> was_forgotten(resolve_settings("/tmp/memsearch-doctest-forget"), "deadbeef0000")
    False
    """
    return forgotten_on(settings, ident) is not None


def forgotten_on(settings: Settings, ident: str) -> str | None:
    """The day (``YYYY-MM-DD``) the forget log last records the whole chunk id ``ident`` (any case) as forgotten,
    or None. The log keeps one line per forget, starting with its time and ending ``ids=<id>,<id>…``; it is read
    only for an id the index does not hold. Without the log (deleted by the user), no id was forgotten as far as
    this can tell."""
    wanted = ident.strip().lower()
    day = None
    try:
        with open(settings.log_dir / FORGET_LOG, encoding="utf-8", errors="replace") as log:
            for line in log:
                if " ids=" in line and wanted in line.rstrip("\n").rpartition(" ids=")[2].split(","):
                    day = line[:10]
    except OSError:
        return None
    return day


def apply_forget(settings: Settings, plan: ForgetPlan, *, vacuum: bool = False) -> ForgetReport:
    """Forget what ``plan`` lists; see the module docstring. Items already gone are skipped, so applying a plan
    twice is harmless. ``vacuum``: also rebuild the database file (slower; reclaims the space)."""
    started = time.perf_counter()
    before = _db_bytes(settings) if settings.db_path.exists() else 0
    try:
        with maintenance_lock(settings, LOCK_TIMEOUT), file_lock(settings.state_dir / WRITER_LOCK, LOCK_TIMEOUT):
            counts = _apply_locked(settings, plan, vacuum)
    except LockTimeout:
        raise MemsearchError(f"an index run held {settings.state_dir / WRITER_LOCK} for {LOCK_TIMEOUT:.0f}s; "
                             "nothing was forgotten: try again") from None
    # the team database (db_url): the member's own copies of these chunks, from every machine of theirs, and the
    # summaries rebuilt or deleted here sent again from this machine (the old chunks go with the ids)
    changed = counts.get("summary_files", [])
    team_removed, team_note = forget_on_team(
        settings, [i.id for i in plan.items] + counts.get("summary_uids", []),
        (lambda team: push_sources(settings, team, changed)) if changed else None)
    report = ForgetReport(
        chunks_removed=counts["chunks"],
        events_removed=counts["events"],
        event_logs_rewritten=counts["logs"],
        archives_rewritten=counts["archives"],
        archived_events_removed=counts["archived"],
        summaries_rewritten=counts["summaries_rewritten"],
        summaries_deleted=counts["summaries_deleted"],
        tombstones_added=counts["tombstones"],
        notes_to_edit=tuple(counts["notes"]),
        vacuumed=vacuum,
        db_bytes_before=before,
        db_bytes_after=_db_bytes(settings) if settings.db_path.exists() else 0,
        seconds=round(time.perf_counter() - started, 3),
        ids=tuple(i.id for i in plan.items),
        wal_truncated=counts["wal_truncated"] if "wal_truncated" in counts else True,
        team_removed=team_removed,
        team_note=team_note,
    )
    _log(settings, f"forgot chunks={report.chunks_removed} events={report.events_removed} "
                   f"archived_events={report.archived_events_removed} tombstones={report.tombstones_added} "
                   f"summaries_rewritten={report.summaries_rewritten} summaries_deleted={report.summaries_deleted} "
                   f"vacuum={vacuum} team_removed={report.team_removed} ids={','.join(report.ids)}")
    return report


def _apply_locked(settings: Settings, plan: ForgetPlan, vacuum: bool) -> dict:
    counts: dict = defaultdict(int)
    counts["notes"] = []
    uids = [i.id for i in plan.items]
    event_ids = {i.event_id for i in plan.items if i.action == "rewrite" and i.event_id} | set(plan.archived_ids)
    stones = tombstones.load(settings.state_dir, settings.home)
    forgotten: list[dict] = []  # the events removed from the logs and archives, for the transcripts' import
    for archive in plan.archives:
        removed = rewrite_archive(Path(archive), plan.selector, event_ids)
        forgotten += removed
        counts["archived"] += len(removed)
        counts["archives"] += bool(removed)
    if not settings.db_path.exists():
        for event in forgotten:
            remember_forgotten(stones, event)
        if forgotten:
            tombstones.save(settings.state_dir, stones)
        return counts
    store = SqliteStore.open(settings.db_path)
    try:
        rows = store.stored_chunks(uids=uids)
        generated: dict[str, bool] = {}
        actions = {r.id: _action(settings, r, generated) for r in rows}
        # 1. the event logs lose their lines (offsets kept), before the index forgets where they were
        logs: dict[str, dict[int, str]] = defaultdict(dict)
        for r in rows:
            if actions[r.id] == "rewrite" and r.event_id:
                logs[r.file][r.seq // 1000] = r.event_id
        for file, offsets in logs.items():
            if Path(file).is_file():
                blanked = blank_lines(Path(file), offsets)
                forgotten += blanked
                counts["events"] += len(blanked)
                counts["logs"] += bool(blanked)
        # 2. the user's notes get tombstones; forgotten events are remembered by hashes (their id, their tool
        # call's, their session and text) that an import from Claude Code's transcripts checks
        for event in forgotten:
            remember_forgotten(stones, event)
        hashes = store.content_hashes()
        for r in rows:
            if r.kind == "event" and r.event_id:
                stones.events.add(tombstones.event_key(r.event_id))
            if actions[r.id] == "tombstone" and hashes.get(r.file):
                counts["tombstones"] += stones.hide(r.file, hashes[r.file], [tombstones.chunk_key(r.title, r.text)],
                                                    [(r.line_start, r.line_end)])
                counts["notes"].append(NoteToEdit(r.path, r.line_start, r.line_end, r.uid))
        tombstones.save(settings.state_dir, stones)
        # 3. the index: chunks, FTS rows (by trigger), vectors no chunk holds any more, and the logs' offsets
        sessions = {r.session_id for r in rows if r.kind == "event" and r.session_id}
        with store.transaction():
            store.delete_chunks(r.id for r in rows)
            store.refresh_turn_context(sessions)
            refresh_replies(store, sessions)
            for file in logs:
                _update_log_row(store, Path(file))
            epoch = int(store.get_meta("forget_epoch") or 0) + 1
            store.set_meta("forget_epoch", str(epoch))
        counts["chunks"] = len(rows)
        store.drop_orphan_vectors()
        # 4. session summaries: deleted when selected themselves, else rebuilt from the events that remain
        selected = {r.file for r in rows if actions[r.id] == "summary"}
        rebuilt: list[Path] = []
        before = {c.uid for summary in plan.summaries for c in store.stored_chunks(file=summary)}
        for summary in plan.summaries:
            path = Path(summary)
            if not path.is_file() or not is_generated(path):
                continue
            session = _summary_session(store, path)
            text = None if session is None else build_summary(settings, session)
            if session is not None and summary in selected and text is not None \
                    and not _rebuilt_clears(plan.selector, text):
                # the summary itself is forgotten: the session's next summary leaves out what this one summed up
                stones.forget_summary(session, [c.event_id for c in store.session_events(session) if c.event_id])
                tombstones.save(settings.state_dir, stones)
                text = None
            if text is None:
                path.unlink()
                counts["summaries_deleted"] += 1
            else:
                replace_file(path, text.encode("utf-8"))
                counts["summaries_rewritten"] += 1
            rebuilt.append(path)
        if rebuilt:
            scan(settings, store, rebuilt, False, None)
        # what the team store's copies of those summaries hold and the local index no longer does
        after = {c.uid for path in rebuilt for c in store.stored_chunks(file=str(path))}
        counts["summary_uids"] = sorted(before - after - set(uids))
        counts["summary_files"] = [str(path) for path in rebuilt]
        # 5. no copy of the text left in the file: merge the FTS segments, checkpoint and truncate the WAL
        store.optimize_fts()
        if vacuum:
            store.vacuum()
        counts["wal_truncated"] = _checkpoint(store)
    finally:
        store.close()
    return counts


def _rebuilt_clears(selector: ForgetSelector, text: str) -> bool:
    """Whether a summary whose own chunk the selection took may be rebuilt from the events that remain (``text``)
    rather than deleted: not when it was named by id (the summary itself is what is forgotten), nor when ``text``
    still holds every word of ``--match`` (each word's first letters, so a word that is still there in another
    form counts as held). A time or project window took the events the summary came from: the rebuilt summary
    keeps only the others.

    >>> _rebuilt_clears(ForgetSelector(match="tapioca exporter"), "- added retries to the uploader")
    True
    >>> _rebuilt_clears(ForgetSelector(match="tapioca exporter"), "- refactored the tapioca exporters")
    False
    """
    if selector.ids:
        return False
    if selector.match:
        lower = text.lower()
        words = [w for w in re.findall(r"\w+", selector.match.lower()) if len(w) > 1]
        return not all(w[: max(3, len(w) - 3)] in lower for w in words)
    return True


def _summary_session(store: SqliteStore, path: Path) -> str | None:
    session = store.session_of_source(str(path))
    if session:
        return session
    try:
        head = path.read_text(encoding="utf-8")[:4096]
    except (OSError, UnicodeDecodeError):
        return None
    first = head.split("\n", 2)[1] if head.count("\n") >= 2 else ""
    return first.removeprefix("session_id: ").strip() or None


def _update_log_row(store: SqliteStore, path: Path) -> None:
    """The rewritten log keeps its size and offsets: record its new mtime and head so the next index run goes on
    from where it was instead of reading the whole log again."""
    try:
        st = path.stat()
        with path.open("rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return
    state = store.source_state(str(path))
    if state is not None:
        store.touch_source(str(path), st.st_mtime_ns, st.st_size, head_hash(head, state.consumed))


def _checkpoint(store: SqliteStore, tries: int = 20) -> bool:
    """Copy the WAL into the database file and truncate it, so the WAL keeps no page holding forgotten text. A
    reader in the middle of a read can delay it: retry briefly. Returns whether it was truncated."""
    for attempt in range(tries):
        if store.checkpoint("TRUNCATE"):
            return True
        time.sleep(0.05 * (attempt + 1))
    return False
