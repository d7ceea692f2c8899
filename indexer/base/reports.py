"""What the commands other than search report: indexing, maintenance, scrubbing, cron, browsing, stats, forget and
a team member's removal. Frozen dataclasses like :mod:`indexer.base.types` (whose :func:`~indexer.base.types.to_json`
serialises them), kept apart so that the prompt hook, which imports that module, does not create these."""

from __future__ import annotations

from dataclasses import dataclass

from indexer.base.types import Hit


@dataclass(frozen=True)
class Skipped:
    """A source (or a part of one) that was not indexed, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class IndexReport:
    files_scanned: int = 0
    files_changed: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    skipped: tuple[Skipped, ...] = ()
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_embedded: int = 0
    chunks_pending: int = 0
    model: str | None = None
    model_note: str | None = None
    full: bool = False
    seconds: float = 0.0
    last_indexed: str | None = None


@dataclass(frozen=True)
class ChunkView:
    """One chunk in full, for ``memsearch show``: the chunk and the ids of its neighbours in the same source."""

    chunk: Hit
    previous_id: str | None
    next_id: str | None
    source_chunks: int
    note: str | None = None  # why the local index answered although a team database is set


@dataclass(frozen=True)
class Timeline:
    """The chunks just before and after one chunk in time (same session first when it has one)."""

    center: Hit
    before: tuple[Hit, ...]
    after: tuple[Hit, ...]
    note: str | None = None  # why the local index answered although a team database is set


@dataclass(frozen=True)
class IndexCheck:
    """Whether the index file is sound and its tables agree: every chunk has its FTS row and every stored vector
    its embedding row (and back). Orphan embeddings (content no chunk holds any more) are waste, not damage."""

    integrity: str  # "ok", or the first problems PRAGMA integrity_check reported
    fts_integrity: str  # "ok", or FTS5's 'integrity-check' error
    chunks: int
    fts_rows: int
    chunks_without_fts: int
    fts_without_chunk: int
    embeddings: int
    vectors: int
    embeddings_without_vector: int
    vectors_without_embedding: int
    orphan_embeddings: int
    miscounted: tuple[str, ...] = ()  # the counts the index keeps for health that differ from a recount

    @property
    def ok(self) -> bool:
        return (self.integrity == "ok" and self.fts_integrity == "ok" and not self.chunks_without_fts
                and not self.fts_without_chunk and not self.embeddings_without_vector
                and not self.vectors_without_embedding and not self.miscounted)


@dataclass(frozen=True)
class Expired:
    """An event log past its retention: where it went (an archive path, or None when it was deleted)."""

    path: str
    newest: str | None  # the newest event timestamp it held
    chunks: int
    archived_to: str | None


@dataclass(frozen=True)
class MaintainReport:
    """What ``memsearch maintain`` did: the rescan, retention, cleanup, checks, and sizes before and after."""

    ok: bool
    index: IndexReport
    expired: tuple[Expired, ...]
    retention_days_event: int
    orphan_vectors_dropped: int
    check: IndexCheck
    chunks_before: int
    chunks_after: int
    bytes_before: int
    bytes_after: int
    seconds: float
    steps: tuple[tuple[str, float], ...] = ()  # (step, seconds), in the order they ran
    #: files scrubbed again because the privacy filter changed since the last scrub (by kind), else None
    scrubbed: dict[str, int] | None = None


@dataclass(frozen=True)
class ScrubReport:
    """What ``memsearch scrub`` changed (or would change, with ``dry_run``), by kind; never the text itself.

    ``files_changed`` counts rewritten files by kind (event logs, archives, session summaries, state files, logs),
    ``events_changed`` the events among them whose text changed; ``redactions`` the markers the filter added to
    those files by marker kind, ``index_redactions`` those it adds to the ``chunks_changed`` indexed chunks."""

    dry_run: bool
    filter_version: int
    previous_filter_version: int | None
    files_changed: dict[str, int]
    events_changed: int
    chunks_changed: int
    redactions: dict[str, int]
    index_redactions: dict[str, int]
    stale_builds: int
    index_rebuilt: bool
    database: str
    problems: tuple[str, ...]
    seconds: float


@dataclass(frozen=True)
class CronReport:
    """The weekly maintenance line in the user's crontab: what it is, whether it is there, what changed."""

    line: str
    installed: bool
    changed: bool
    crontab: str | None  # the crontab command used; None where there is none (then ``note`` says what to do)
    note: str | None = None


@dataclass(frozen=True)
class SessionInfo:
    """One captured session, for ``memsearch sessions``: when, where, how much of each event type, and its first
    real prompt (the opening request, not a greeting or a slash command)."""

    session_id: str
    project: str | None
    first_ts: str | None
    last_ts: str | None
    events: int
    counts: dict[str, int]  # events by type: prompt, response, tool, …
    first_prompt: str | None
    summary_path: str | None = None  # its session summary note, when one was written


@dataclass(frozen=True)
class StorageEntry:
    """One file (or group of files) under the memory root and how many bytes it takes."""

    path: str
    bytes: int
    files: int = 1


@dataclass(frozen=True)
class PrivacyStats:
    """What the privacy filter took out, counted from the ``[REDACTED:<kind>]`` markers in the indexed text."""

    private_spans: int  # ``[REDACTED:private]``: spans the user marked private
    secrets_by_kind: dict[str, int]  # every other marker kind: secrets masked
    chunks_with_redactions: int
    sessions_with_private: int  # sessions whose events held a redacted span or a masked secret


@dataclass(frozen=True)
class Stats:
    """``memsearch stats``: what the memory holds."""

    events: int
    events_by_type: dict[str, int]
    events_by_day: dict[str, int]
    sessions: int
    chunks: int
    chunks_by_kind: dict[str, int]
    pending_embeddings: int
    storage: tuple[StorageEntry, ...]
    privacy: PrivacyStats
    tombstones: int  # user-note chunks hidden by ``forget`` until their file changes
    last_indexed: str | None
    store: str = "local"  # "team": the counts are what the member sees on the team database
    note: str | None = None  # why the local index answered although a team database is set


@dataclass(frozen=True)
class ForgetSelector:
    """What ``memsearch forget`` should remove. Every given criterion must hold (they combine with AND);
    ``ids`` are chunk ids (or unique prefixes) or event ids; ``match`` takes the chunks whose own title or text
    holds every content word of it (as BM25 reads words: stemmed, common words left out), never the nearest by
    meaning; ``limit`` keeps the best ``limit`` of them by BM25 (None: all). ``before`` is exclusive, ``since``
    inclusive."""

    ids: tuple[str, ...] = ()
    session: str | None = None
    before: str | None = None
    since: str | None = None
    project: str | None = None
    match: str | None = None
    limit: int | None = None

    @property
    def empty(self) -> bool:
        return not (self.ids or self.session or self.before or self.since or self.project or self.match)


@dataclass(frozen=True)
class Matched:
    """What ``forget --match`` takes by its words (:func:`search_engine.lookup.matching`): the ids of the indexed
    chunks holding every content word of it, and the ids of the archived events (``archive/events/*.gz``, which
    are not indexed) that hold them."""

    chunks: tuple[str, ...]
    archived: tuple[str, ...] = ()


@dataclass(frozen=True)
class ForgetItem:
    """One chunk that forget removes, and how: ``rewrite`` (an event memsearch logged: its line leaves the log),
    ``summary`` (a session summary memsearch wrote: rebuilt without it, or deleted), ``tombstone`` (a note of
    the user's: hidden until the file changes; edit ``path`` at the lines given to remove the text)."""

    id: str
    kind: str
    category: str
    title: str
    path: str
    action: str
    line_start: int | None = None
    line_end: int | None = None
    event_id: str | None = None
    ts: str | None = None
    session_id: str | None = None
    project: str | None = None
    snippet: str = ""


@dataclass(frozen=True)
class ForgetPlan:
    """What ``forget`` would remove (a dry run shows it; :func:`indexer.forget.apply_forget` carries it out)."""

    selector: ForgetSelector
    items: tuple[ForgetItem, ...]
    event_logs: tuple[str, ...]  # logs memsearch wrote that lose lines
    archives: tuple[str, ...]  # gzipped logs (not indexed) that lose lines
    archived_events: int
    summaries: tuple[str, ...]  # session summaries to rebuild or delete
    notes: tuple[str, ...]  # the user's files that get a tombstone (and should be edited by hand)
    archived_ids: tuple[str, ...] = ()  # the archived events --match takes by their words


@dataclass(frozen=True)
class NoteToEdit:
    """A user's file still holding forgotten text, hidden by a tombstone: edit these lines to remove it."""

    path: str
    line_start: int | None
    line_end: int | None
    chunk_id: str


@dataclass(frozen=True)
class ForgetReport:
    """What ``forget`` did. Counts and ids only: the forgotten text is in no report and no log."""

    chunks_removed: int
    events_removed: int
    event_logs_rewritten: int
    archives_rewritten: int
    archived_events_removed: int
    summaries_rewritten: int
    summaries_deleted: int
    tombstones_added: int
    notes_to_edit: tuple[NoteToEdit, ...]
    vacuumed: bool
    db_bytes_before: int
    db_bytes_after: int
    seconds: float
    ids: tuple[str, ...] = ()
    wal_truncated: bool = True  # False: a reader kept the WAL busy; its old pages go at the next checkpoint
    team_removed: int | None = None  # chunks removed from the team database (None: no db_url, or not reached)
    team_note: str | None = None  # why the team database still holds them (the next sync removes them)


@dataclass(frozen=True)
class MemberRemoval:
    """What ``memsearch team remove-member`` removed (``role_dropped``), or would remove, of one member on the team
    database (``database``, its password masked): their chunks, sources and meta keys, the vectors no other
    member's chunk holds, their open sessions, and the objects they owned there (reassigned to the
    administrator: a staging table a stopped sync left, say)."""

    member: str
    database: str
    chunks: int = 0
    sources: int = 0
    meta: int = 0
    vectors: int = 0
    sessions: int = 0
    objects: int = 0
    role_dropped: bool = False
