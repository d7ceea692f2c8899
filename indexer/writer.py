"""Writing one source into the index: a document re-chunked whole when its content changed, an event log from the
byte offset where the last run stopped (:mod:`indexer.eventread`), the chunks a tombstone hides left out, and
each event's turn context and the turn it replies to. :class:`SourceWriter` keeps the counts and the skipped
sources of one run.

Both come from the events themselves, already redacted when they were parsed (or stored, when the turn before is
in the index from an earlier run): nothing else enters them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import xxhash

from indexer import tombstones
from indexer.base.chunktext import TURN_TYPES, Turn, content_hash, reply_of
from indexer.base.reports import Skipped
from indexer.base.settings import Settings
from indexer.eventread import HEAD_BYTES, head_hash, read_blocks, resume_offset
from indexer.sources import MAX_FILE_BYTES, PARSERS, Draft, SourceError, decode, path_context, printable_path
from indexer.store import ChunkRow, SourceState
from indexer.store.local import SqliteStore
from indexer.tombstones import Tombstones, chunk_key

#: A progress callback: (phase, done, total).
Progress = Callable[[str, int, int], None]


def display_path(path: Path, home: Path) -> str:
    try:
        return path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


def chunk_uid(rel: str, seq: int, h: str) -> str:
    """A chunk's public id: its place (path relative to the root, sequence) and its content hash."""
    return xxhash.xxh3_64_hexdigest(f"{rel}\0{seq}\0{h}".encode("utf-8", "surrogatepass"))[:12]


class ReplyChain:
    """What each event replies to, as the events of sessions are read in order (by time, then place).

    ``earlier(session_id, ts)`` gives a session's latest turn from before what is read here (the index's, for the
    first event of a session in a run), or None.
    """

    def __init__(self, earlier: Callable[[str, str | None], Turn | None]) -> None:
        self.earlier = earlier
        self.turns: dict[str, tuple[str | None, Turn | None]] = {}  # session id -> (event id, its latest turn)

    def reply(self, session_id: str, ts: str | None, event_id: str | None, category: str, speaker: str | None,
              text: str) -> str:
        """The turn this event (or chunk of an event) replies to; a prompt or response becomes the session's
        latest turn. Every chunk of a long event replies to the same turn; the first is the turn's text."""
        if session_id in self.turns:
            last_event, last = self.turns[session_id]
        else:
            last_event, last = None, self.earlier(session_id, ts)
        if last is not None and last_event is not None and last_event == event_id:
            return last.reply_to
        reply = reply_of(last, speaker)
        self.turns[session_id] = (event_id, Turn(speaker, text, reply)) if category in TURN_TYPES else (
            last_event, last)
        return reply


def refresh_replies(store: SqliteStore, sessions: Iterable[str]) -> int:
    """Recompute what the events of ``sessions`` reply to from the events the index still holds (after ``forget``
    removed some: no text of theirs may stay in another chunk). A chunk whose reply changed gets it, and the hash
    and id that go with it (so its new content is embedded, and a team store replaces its copy at the next sync).
    Returns the chunks changed; in the caller's transaction."""
    changed = []
    for session in sorted(sessions):
        chain = ReplyChain(lambda _session, _ts: None)
        for c in store.stored_chunks(session=session, kind="event"):
            reply = chain.reply(session, c.ts, c.event_id, c.category, c.speaker, c.text)
            if reply != c.reply_to:
                h = content_hash(c.title, c.text, c.speaker, c.ts, reply)
                changed.append((c.id, reply, h, chunk_uid(c.path, c.seq, h)))
    store.set_replies(changed)
    return len(changed)


class SourceWriter:
    """Writes sources into ``store`` for one run (``full``: re-read even what looks unchanged)."""

    def __init__(self, settings: Settings, store: SqliteStore, full: bool) -> None:
        self.settings, self.store, self.full = settings, store, full
        self.counts = dict.fromkeys(("scanned", "changed", "unchanged", "deleted", "added", "removed"), 0)
        self.skipped: list[Skipped] = []
        self.seen: set[str] = set()  # the sources this run tried to read (found by its scan), by key
        self.last_turn: dict[str, str] = {}  # session id -> its latest event chunk's text
        self.replies = ReplyChain(store.latest_turn)
        self._stones: Tombstones | None = None
        #: notes (by :func:`~indexer.tombstones.note_key`) read again even when unchanged: their tombstones changed
        self.recheck: frozenset[str] = frozenset()

    @property
    def stones(self) -> Tombstones:
        """The chunks of the user's notes that ``forget`` hides, read when a changed note first needs them (a run
        that finds nothing changed reads no file)."""
        if self._stones is None:
            self._stones = tombstones.load(self.settings.state_dir, self.settings.home)
        return self._stones

    def written(self) -> int:
        """Chunks added and removed so far (what a write batch measures)."""
        return self.counts["added"] + self.counts["removed"]

    def skip(self, rel: str, reason: str) -> None:
        self.skipped.append(Skipped(printable_path(rel), reason))

    # -- chunks ---------------------------------------------------------------------------------------------

    def rows(self, rel: str, drafts: Iterable[Draft]) -> list[ChunkRow]:
        """The store's rows for ``drafts`` of the source shown as ``rel``, with their ids and turn context."""
        out = []
        for d in drafts:
            reply = self.reply_to(d)
            h = content_hash(d.title, d.text, d.speaker, d.ts, reply)
            out.append(ChunkRow(
                uid=chunk_uid(rel, d.seq, h), hash=h, kind=d.kind, text=d.text, path=rel, seq=d.seq,
                category=d.category, title=d.title, line_start=d.line_start, line_end=d.line_end,
                event_id=d.event_id, ts=d.ts, session_id=d.session_id, project=d.project, status=d.status,
                speaker=d.speaker, context=self.context(d), reply_to=reply))
        return out

    def reply_to(self, d: Draft) -> str:
        """The turn event ``d`` replies to, shortened (:func:`~indexer.base.chunktext.reply_of`), embedded with it;
        '' for notes and events outside a session.

        The session's latest turn is this run's, or, for the first event of a session in a run (an incremental
        run, a hook's ingest), the latest one already indexed: one index seek per session and run, as for
        :meth:`context`.
        """
        if d.kind != "event" or not d.session_id:
            return ""
        return self.replies.reply(d.session_id, d.ts, d.event_id, d.category, d.speaker, d.text)

    def context(self, d: Draft) -> str:
        """The text of the turn before event ``d`` in its session, indexed as ``d``'s low-weight context column:
        a reply ("Yes, twice a week") is then found by the words of the question it answers. Notes have none.

        The previous turn is the session's last event chunk of this run, or, for the first event of a session in
        a run (an incremental run, a hook's ingest), the latest one already indexed: one index seek per session
        and run, none per row.
        """
        if d.kind != "event" or not d.session_id:
            return ""
        previous = self.last_turn.get(d.session_id)
        if previous is None:
            previous = self.store.previous_turn(d.session_id, d.ts)
        self.last_turn[d.session_id] = d.text
        return previous

    def write(self, state: SourceState, rows: list[ChunkRow]) -> None:
        self.counts["added"] += self.store.write_batch(state, rows)

    def remove(self, key: str) -> None:
        """Drop the source ``key`` and its chunks (a changed source is written again after)."""
        self.counts["removed"] += self.store.delete_source(key)

    # -- sources --------------------------------------------------------------------------------------------

    def index_file(self, path: Path, source: str, known: dict[str, SourceState]) -> None:
        key = str(path)
        rel = display_path(path, self.settings.home)
        self.counts["scanned"] += 1
        self.seen.add(key)
        try:
            st = path.stat()
            row = known.get(key)
            again = bool(self.recheck) and self.stones.key(key) in self.recheck
            if row is not None and not (self.full or again) and row.mtime_ns == st.st_mtime_ns \
                    and row.size == st.st_size:
                self.counts["unchanged"] += 1
                return
            if source == "events":
                self.index_events(path, key, rel, st, row)
            else:
                self.index_document(path, key, rel, source, st, row, again)
        except OSError as exc:
            self.skip(rel, f"cannot read: {exc.strerror or exc}")

    def index_document(self, path: Path, key: str, rel: str, source: str, st: os.stat_result,
                       row: SourceState | None, again: bool = False) -> None:
        if st.st_size > MAX_FILE_BYTES:
            self.skip(rel, f"too large ({st.st_size / 1e6:.1f} MB > {MAX_FILE_BYTES / 1e6:.0f} MB)")
            return
        data = path.read_bytes()
        digest = xxhash.xxh3_128_hexdigest(data)
        state = SourceState(key, source, st.st_mtime_ns, st.st_size, digest)
        if row is not None and not (self.full or again) and row.content_hash == digest:
            self.write(state, [])
            self.counts["unchanged"] += 1
            return
        s = self.settings
        try:
            text = decode(data)
            parsed = PARSERS[source](path, text, path_context(path, s.home), s.chunk_chars, s.chunk_overlap)
        except SourceError as exc:
            self.skip(rel, str(exc))
            return
        for problem in parsed.problems:
            self.skip(rel, problem)
        drafts = parsed.drafts
        if self.stones.notes:
            keys, ranges = self.stones.hidden(key, digest), self.stones.hidden_ranges(key, digest)
            if keys or ranges:
                drafts = [d for d in drafts if chunk_key(d.title, d.text) not in keys
                          and (d.line_start, d.line_end) not in ranges]
        with self.store.transaction():
            self.remove(key)
            self.write(state, self.rows(rel, drafts))
        self.counts["changed"] += 1

    def index_events(self, path: Path, key: str, rel: str, st: os.stat_result, row: SourceState | None) -> None:
        s = self.settings
        with path.open("rb") as f:
            head = f.read(HEAD_BYTES)
            start = resume_offset(head, st.st_size, row, self.full)
            first = True
            for consumed, parsed in read_blocks(f, start, s.chunk_chars, s.chunk_overlap,
                                                lambda why: self.skip(rel, why)):
                for problem in parsed.problems:
                    self.skip(rel, problem)
                state = SourceState(key, "events", st.st_mtime_ns, st.st_size, None, consumed,
                                    head_hash(head, consumed))
                with self.store.transaction():
                    if first and start == 0:
                        self.remove(key)
                    self.write(state, self.rows(rel, parsed.drafts))
                first = False
            if first:  # nothing new (an empty file)
                with self.store.transaction():
                    if start == 0:
                        self.remove(key)
                    self.write(SourceState(key, "events", st.st_mtime_ns, st.st_size, None, start,
                                           xxhash.xxh3_64_hexdigest(b"")), [])
        self.counts["changed"] += 1
