"""Reading Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``) as events.

The format is internal to Claude Code and changes between versions, so parsing is defensive: unparsable or
half-written lines are skipped. Kept: real human prompts, assistant text, and tool calls with their results.
Skipped: ``isMeta`` expansions, compaction summaries, side chains, ``attachment`` lines (hook output), and any
``<system-reminder>`` or ``<memory-context>`` text, so memsearch never re-indexes the memories it injected.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from indexer import tombstones
from indexer.base.paths import EVENTS_DIR, IMPORTS
from indexer.base.private import private_dirs, write_private
from indexer.base.settings import Settings
from indexer.eventlog import Event, append
from indexer.observations import describe_tool
from indexer.sources import normalize_ts
from indexer.tombstones import Tombstones

#: A block the host or a hook injected: it opens at the start of a line and is closed. A tag merely mentioned in
#: prose ("hooks wrap output in a `<memory-context>` block") is neither, and the text after it is kept.
_INJECTED_RE = re.compile(r"^[ \t]*<(system-reminder|memory-context)>.*?</\1>", re.DOTALL | re.MULTILINE)


def strip_injected(text: str) -> str:
    """Remove hook-injected blocks (``<system-reminder>``, ``<memory-context>``) from a text.

    >>> strip_injected("<memory-context>\\nold memories\\n</memory-context>\\nFix reader.py")
    'Fix reader.py'
    >>> strip_injected("Hooks wrap output in a <memory-context> tag, then reply.")
    'Hooks wrap output in a <memory-context> tag, then reply.'
    """
    return _INJECTED_RE.sub("", text).strip()


def default_transcripts_dir(settings: Settings) -> Path:
    """Claude Code's transcripts: ``projects/`` in its folder (the ``claude_dir`` setting, ``$CLAUDE_CONFIG_DIR``)."""
    return settings.claude_dir / "projects"


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


@dataclass
class _Pending:
    line: dict[str, Any]
    block: dict[str, Any]


def iter_lines(data: bytes) -> Iterator[dict[str, Any]]:
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(line, dict):
            yield line


def last_assistant_text(path: Path, tail_bytes: int = 512 * 1024) -> str:
    """The text of the last assistant turn in a transcript (its final text blocks), or ''.

    Only a regular file is read, and only its last ``tail_bytes``: the Stop hook must exit quickly, and a
    ``transcript_path`` naming a device (``/dev/zero`` never ends) or a FIFO (opening one blocks until a writer
    comes) would hang it and grow its memory without bound. ``O_NONBLOCK`` keeps the open of a FIFO from waiting."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        data = os.pread(fd, tail_bytes, max(0, info.st_size - tail_bytes))
    except OSError:
        return ""
    finally:
        os.close(fd)
    texts: list[str] = []
    for line in iter_lines(data):
        if line.get("type") == "user" and not line.get("isMeta") and not _is_tool_result(line):
            texts = []
        elif line.get("type") == "assistant" and not line.get("isSidechain"):
            text = _text(_blocks((line.get("message") or {}).get("content")))
            if text.strip():
                texts.append(text.strip())
    return strip_injected("\n\n".join(texts))


def _is_tool_result(line: dict[str, Any]) -> bool:
    return any(b.get("type") == "tool_result" for b in _blocks((line.get("message") or {}).get("content")))


def transcript_events(data: bytes, source: str) -> list[Event]:
    """Events from transcript bytes; ids are derived from the transcript's own line uuids, so importing the same
    transcript twice yields the same ids."""
    events: list[Event] = []
    pending: dict[str, _Pending] = {}
    for line in iter_lines(data):
        kind = line.get("type")
        if kind not in ("user", "assistant") or line.get("isSidechain") or line.get("isMeta"):
            continue
        if line.get("isCompactSummary"):
            continue
        message = line.get("message") or {}
        blocks = _blocks(message.get("content"))
        base = dict(
            session_id=line.get("sessionId"), cwd=line.get("cwd"),
            project=os.path.basename(line["cwd"].rstrip("/")) if isinstance(line.get("cwd"), str) else None,
            ts=normalize_ts(line.get("timestamp")) or "",
        )
        uid = str(line.get("uuid") or "")
        if kind == "user":
            for block in blocks:
                if block.get("type") == "tool_result":
                    call = pending.pop(str(block.get("tool_use_id")), None)
                    if call is not None:
                        events.append(_tool_event(call, block, base))
            text = strip_injected(_text(blocks))
            if text and not _is_tool_result(line):
                events.append(Event(type="prompt", content=text, id=f"t-{uid}" if uid else _fallback(text), **base,
                                    metadata={"source": source}))
        else:
            text = strip_injected(_text(blocks))
            if text:
                events.append(Event(type="response", content=text, id=f"t-{uid}" if uid else _fallback(text),
                                    **base, metadata={"source": source}))
            for block in blocks:
                if block.get("type") == "tool_use" and block.get("id"):
                    pending[str(block["id"])] = _Pending(line, block)
    return events


def _fallback(text: str) -> str:
    import xxhash

    return "t-" + xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass"))


def _tool_event(call: _Pending, result: dict[str, Any], base: dict[str, Any]) -> Event:
    name = str(call.block.get("name") or "tool")
    output = _result_text(result.get("content"))
    content, metadata = describe_tool(name, call.block.get("input") or {}, output, not result.get("is_error"))
    return Event(type="tool", tool_name=name, content=content, metadata=metadata,
                 id=f"t-{call.block.get('id')}", **base)


@dataclass(frozen=True)
class ImportReport:
    transcripts: int
    events_imported: int
    events_skipped: int
    problems: tuple[str, ...] = ()
    #: transcripts with nothing new since the last import (read from where it stopped)
    transcripts_unchanged: int = 0
    #: transcripts skipped: unreadable, or not a transcript (each is one of ``problems``)
    transcripts_skipped: int = 0

    @property
    def failed(self) -> bool:
        """Whether every transcript found was skipped: nothing could be imported."""
        return self.transcripts > 0 and self.transcripts_skipped == self.transcripts


_KEY_CHARS = 160


def text_key(text: str) -> str:
    """The start of a text, white space folded, to match a transcript's turn with the hook's record of it: the
    whole text is filtered first, then cut."""
    from indexer.privacy import scrub

    return " ".join(scrub(text).split())[:_KEY_CHARS]


def remember_forgotten(stones: Tombstones, event: dict[str, Any]) -> None:
    """Keep in ``stones`` (hashes only) what tells the forgotten ``event`` (a logged event's fields) in a
    transcript, so that ``import transcripts`` never brings it back: its id (an imported event's is the
    transcript's own), its tool call's id (the id a transcript's tool event is imported under), and for a prompt
    or a reply its session, type and the start of its text (:func:`text_key`: the hooks' events have ids of their
    own, and the transcript holds the same turn under another)."""
    if event.get("id"):
        stones.events.add(tombstones.event_key(str(event["id"])))
    raw_meta = event.get("metadata")
    meta = raw_meta if isinstance(raw_meta, dict) else {}
    if event.get("type") == "tool" and meta.get("tool_use_id"):
        stones.events.add(tombstones.event_key(f"t-{meta['tool_use_id']}"))
    content, session = event.get("content"), event.get("session_id")
    if event.get("type") in ("prompt", "response") and isinstance(content, str) and session:
        stones.turns.add(tombstones.turn_key(str(session), str(event["type"]), text_key(content)))


def forgotten_turns(events: list[Event], stones: Tombstones) -> set[int]:
    """The places in ``events`` (a transcript's, in order) of the events ``memsearch forget`` took: by id, or, for a
    prompt or reply the hooks logged under an id of their own, by session, type and the start of the text
    (:func:`remember_forgotten`). A reply is one event for the Stop hook but may be several transcript lines: the
    texts of a turn's lines, joined as the hook joins them when it reads the reply from the transcript, count
    too, and then the turn's every reply line goes."""

    def turn(session: str | None, kind: str, text: str) -> bool:
        return bool(stones.turns) and tombstones.turn_key(session or "", kind, text_key(text)) in stones.turns

    gone: set[int] = set()
    replies: list[int] = []  # the reply lines of the current turn

    def close() -> None:
        if len(replies) > 1 and turn(events[replies[0]].session_id, "response",
                                     "\n\n".join(events[i].content for i in replies)):
            gone.update(replies)
        replies.clear()

    for i, e in enumerate(events):
        if e.type == "prompt":
            close()
        elif e.type == "response":
            replies.append(i)
        if tombstones.event_key(str(e.id)) in stones.events or (e.type in ("prompt", "response")
                                                                and turn(e.session_id, e.type, e.content)):
            gone.add(i)
    close()
    return gone


@dataclass
class Captured:
    """What the hooks already recorded of some sessions: tool calls by their ``tool_use_id``, prompts and replies
    by the start of their (privacy-filtered) text."""

    tool_uses: set[str]
    texts: dict[tuple[str, str], list[str]]  # (session, type) -> text keys

    def holds(self, event: Event) -> bool:
        if event.type == "tool":
            return str(event.id).removeprefix("t-") in self.tool_uses
        keys = self.texts.get((event.session_id or "", event.type))
        if not keys:
            return False
        mine = text_key(event.content)
        # a reply is one event for the hook (the turn's last message) but may be several transcript lines
        return any(mine == k or (len(mine) >= 20 and (mine in k or k in mine)) for k in keys)


def hook_captured(home: Path, sessions: set[str], logs: dict[Path, bytes] | None = None) -> Captured:
    """Scan the event log for what the hooks recorded of ``sessions`` (lines naming none of them are not parsed),
    so that importing a transcript of a session the hooks captured adds nothing twice. ``logs``: the logs' bytes
    kept across calls (an import scans them once per transcript; it reads each only once)."""
    found = Captured(set(), {})
    if not sessions:
        return found
    needles = [s.encode() for s in sessions]
    logs = {} if logs is None else logs
    for path in sorted((home / EVENTS_DIR).glob("*.jsonl")):
        if path not in logs:
            try:
                logs[path] = path.read_bytes()
            except OSError:
                continue
        data = logs[path]
        if not any(n in data for n in needles):
            continue
        for line in iter_lines(data):
            session = line.get("session_id")
            if session not in sessions or str(line.get("id") or "").startswith("t-"):
                continue  # another session's, or an earlier import's (those are matched by id)
            raw_meta = line.get("metadata")
            meta = raw_meta if isinstance(raw_meta, dict) else {}
            if line.get("type") == "tool" and meta.get("tool_use_id"):
                found.tool_uses.add(str(meta["tool_use_id"]))
            elif line.get("type") in ("prompt", "response") and isinstance(line.get("content"), str):
                # filtered again: a log an older filter wrote then matches what this one makes of the transcript
                found.texts.setdefault((session, line["type"]), []).append(text_key(line["content"]))
    return found


def _discover(paths: list[Path]) -> list[Path]:
    """The transcripts given: files as they are (checked when read), folders' ``*.jsonl`` files; anything else
    (a device, a pipe) as itself, to be reported."""
    found: list[Path] = []
    for p in paths:
        if p.is_dir():
            found.extend(sorted(q for q in p.rglob("*.jsonl") if "subagents" not in q.parts))
        else:
            found.append(p)
    return found


#: Keys every line of a Claude Code transcript carries one of (besides ``type``): what tells one from any JSONL.
_TRANSCRIPT_KEYS = ("sessionId", "uuid", "leafUuid", "messageId")


def is_transcript_line(line: dict[str, Any]) -> bool:
    """Whether a JSON line is one Claude Code writes (memsearch's own event log, or other JSONL, is not).

    >>> is_transcript_line({"type": "user", "uuid": "u1", "sessionId": "S"})
    True
    >>> is_transcript_line({"type": "prompt", "session_id": "S", "content": "hi"})
    False
    """
    return isinstance(line.get("type"), str) and any(k in line for k in _TRANSCRIPT_KEYS)


def not_a_transcript(path: Path) -> str | None:
    """Why ``path`` cannot be a Claude Code transcript by its kind or name (None: read it and see)."""
    if not path.is_file():
        return "not a Claude Code transcript (not a regular file)"
    if path.suffix != ".jsonl":
        return "not a Claude Code transcript (those are .jsonl files)"
    return None


def import_transcripts(settings, paths: list[Path] | None = None) -> ImportReport:
    """Append the events of Claude Code transcripts to the event log, idempotently: each transcript is read from
    the byte offset the last import stopped at, events whose ids are already indexed, or were forgotten
    (``memsearch forget``), are skipped, and so are the turns and tool calls the hooks already captured
    (:func:`hook_captured`). A path given that does not exist is a :class:`UsageError`; a transcript whose name
    is not valid UTF-8 is reported and skipped (the import state keeps paths as text), and so is a file that is not
    a transcript (not ``.jsonl``, unreadable, or holding no line Claude Code writes: :func:`is_transcript_line`)."""
    from indexer.base.errors import UsageError
    from indexer.sources import printable_path, valid_name

    for p in paths or ():
        if not p.exists():
            raise UsageError(f"{printable_path(str(p))} does not exist: give transcript files (.jsonl) or folders "
                             "of them (default: Claude Code's projects folder)")
    from indexer.pipeline import ingest
    from indexer.store.local import SqliteStore

    forgotten = tombstones.load(settings.state_dir)

    state_path = settings.state_dir / IMPORTS
    private_dirs(settings.state_dir)
    try:
        state = orjson.loads(state_path.read_bytes()) if state_path.exists() else {}
    except orjson.JSONDecodeError:
        state = {}
    store = SqliteStore.open(settings.db_path)
    imported = skipped = unchanged = 0
    problems: list[str] = []  # one line per transcript skipped
    files = _discover(paths or [default_transcripts_dir(settings)])
    logs: dict[Path, bytes] = {}  # the hooks' event logs as they were before this import appended to them
    try:
        for path in files:
            key = str(path.resolve())
            if not valid_name(key):
                problems.append(f"{printable_path(str(path))}: file name is not valid UTF-8")
                continue
            why = not_a_transcript(path)
            if why is not None:
                problems.append(f"{printable_path(str(path))}: {why}")
                continue
            offset = int(state.get(key, 0))
            try:
                with path.open("rb") as f:
                    size = f.seek(0, os.SEEK_END)
                    if size < offset:
                        offset = 0
                    f.seek(offset)
                    data = f.read()
            except OSError as exc:
                problems.append(f"{printable_path(str(path))}: cannot read: {exc.strerror or exc}")
                continue
            end = data.rfind(b"\n") + 1
            if end == 0:
                unchanged += 1
                continue
            if offset == 0 and not any(is_transcript_line(line) for line in iter_lines(data[:end])):
                problems.append(f"{printable_path(str(path))}: not a Claude Code transcript (no transcript line in it)")
                continue
            events = transcript_events(data[:end], str(path))
            ids = [e.id for e in events]
            known = store.known_event_ids(ids)
            captured = hook_captured(settings.home, {e.session_id for e in events if e.session_id}, logs)
            gone = forgotten_turns(events, forgotten)
            fresh = [e for i, e in enumerate(events) if e.id not in known and i not in gone and not captured.holds(e)]
            skipped += len(events) - len(fresh)
            by_day: dict[str, list[Event]] = {}
            for e in fresh:
                by_day.setdefault((e.ts or "")[:10], []).append(e)
            for day_events in by_day.values():
                append(settings.home, day_events)
            imported += len(fresh)
            state[key] = offset + end
            write_private(state_path, orjson.dumps(state))
    finally:
        store.close()
    ingest(settings, [settings.home / EVENTS_DIR], lock_timeout=60)
    return ImportReport(len(files), imported, skipped, tuple(problems), unchanged, len(problems))
