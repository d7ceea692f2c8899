"""Finding sources in the memory root and turning each kind into drafts of chunks.

Kinds of source, by path:

- ``events/*.jsonl``: hook events, one JSON object per line, read incrementally by byte offset;
- ``facts.json`` anywhere: ``{"facts": [...]}``, one chunk per fact;
- other ``*.json``: memory records (``title``, ``tags``, ``record_status``, ``updated_at`` and content fields);
- ``*.md`` / ``*.markdown`` / ``*.txt``: notes, heading-aware.

Every text goes through the privacy filter here, before it can be stored. A source that cannot be read raises
:class:`SourceError` with a one-line reason; an event line that cannot be read is reported and skipped alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from indexer.base.chunktext import ROLE_OF_TYPE
from indexer.base.paths import CONFIG_NAME, STATE_DIR
from indexer.chunker import parse_front_matter, split_markdown, split_plain
from indexer.privacy import redact

NOTE_SUFFIXES = (".md", ".markdown", ".txt")
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_EVENT_LINE_BYTES = 1024 * 1024
MAX_JSON_DEPTH = 64
SKIP_DIRS = {STATE_DIR, ".git", "node_modules", "__pycache__", ".venv"}
_DATE_RE = re.compile(r"(\d{4}-\d{2}-\d{2})")


class SourceError(Exception):
    """A source that is skipped; the message is the one-line reason."""


@dataclass
class Draft:
    kind: str
    category: str
    title: str
    text: str
    line_start: int | None = None
    line_end: int | None = None
    event_id: str | None = None
    ts: str | None = None
    session_id: str | None = None
    project: str | None = None
    status: str | None = None
    seq: int = 0
    speaker: str | None = None  # events only: who wrote it (see :func:`event_speaker`); None for notes and facts


@dataclass
class Parsed:
    drafts: list[Draft] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # per-line skips and privacy warnings
    consumed: int = 0  # events: bytes read through the last complete line


def classify(path: Path) -> str | None:
    """Which parser reads ``path``: ``events``, ``facts``, ``record``, ``note``, or None to ignore it."""
    name = path.name.lower()
    if name == CONFIG_NAME or name.startswith("."):
        return None
    if name.endswith(".jsonl") and path.parent.name == "events":
        return "events"
    if name == "facts.json":
        return "facts"
    if name.endswith(".json"):
        return "record"
    if name.endswith(NOTE_SUFFIXES):
        return "note"
    return None


def discover(
    roots: list[Path], allowed: list[Path] | None = None, refused: Callable[[Path, str], None] | None = None,
) -> Iterator[tuple[Path, str]]:
    """Every indexable file under ``roots`` (files or folders), without following directory symlinks.

    A symlinked file found inside a folder is taken only when its target lies inside ``allowed`` (default: the
    roots), so a link in the memory root can never pull an outside file into the index: such links, and folder
    symlinks leading outside, are passed to ``refused`` with the reason. Links that loop or dangle are yielded, to be reported as unreadable like any
    file that cannot be read (whatever they had in the index stays there). A file or folder whose name is not
    valid UTF-8 is refused too: the index, its JSON and every surface hold paths as UTF-8 text.
    """
    seen: set[Path] = set()
    inside = [os.path.realpath(p) for p in (allowed if allowed is not None else roots)]

    def named_badly(path: Path, what: str) -> bool:
        if valid_name(str(path)):
            return False
        if refused:
            refused(path, f"{what} name is not valid UTF-8")
        return True

    def outside_folder(path: Path) -> bool:
        """A folder symlink is never followed; one leading outside is said, as a file symlink is (one inside
        holds files indexed where they are)."""
        why = _link_problem(path, inside, "folder") if path.is_symlink() else None
        if why and refused:
            refused(path, why)
        return why is not None

    for root in roots:
        if root.is_file():
            source = classify(root) or "note"
            if root not in seen and not named_badly(root, "file"):
                seen.add(root)
                yield root, source
            continue
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")
                                 and not named_badly(Path(dirpath) / d, "folder")
                                 and not outside_folder(Path(dirpath) / d))
            for name in sorted(filenames):
                path = Path(dirpath) / name
                kind = classify(path)
                if not kind or path in seen or named_badly(path, "file"):
                    continue
                if path.is_symlink():
                    why = _link_problem(path, inside)
                    if why:
                        if refused:
                            refused(path, why)
                        continue
                seen.add(path)
                yield path, kind


def valid_name(path: str) -> bool:
    """Whether ``path`` is text: a name that is not valid UTF-8 reaches Python with surrogate escapes in it.

    >>> valid_name("daily/2026-01-02.md"), valid_name("daily/bad-\\udcff.md")
    (True, False)
    """
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable_path(path: str) -> str:
    """``path`` as text that can be printed and serialised: undecodable bytes shown as ``\\xff``.

    >>> printable_path("daily/bad-\\udcff.md")
    'daily/bad-\\\\xff.md'
    """
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that stands for no byte (from JSON, say)
        return path.encode("utf-8", "backslashreplace").decode("utf-8")


def _link_problem(path: Path, inside: list[str], what: str = "file") -> str | None:
    """Why a symlinked source (``what``: file or folder) is refused (None when its target lies inside an allowed
    root)."""
    target = os.path.realpath(path)
    if not any(target == root or target.startswith(root.rstrip("/") + "/") for root in inside):
        return f"symlink to a {what} outside the memory root and extra sources, skipped"
    return None


def decode(data: bytes, what: str = "file") -> str:
    if b"\x00" in data[:8192]:
        raise SourceError(f"binary {what} (NUL bytes)")
    try:
        return data.decode("utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"not valid UTF-8 at byte {exc.start}") from None


def load_json(text: str) -> Any:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SourceError(f"invalid JSON: {str(exc).splitlines()[0]}") from None
    if _depth(value) > MAX_JSON_DEPTH:
        raise SourceError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_JSON_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def normalize_ts(value: Any) -> str | None:
    """An ISO-8601 local timestamp ``YYYY-MM-DDTHH:MM:SS`` from a string or epoch seconds, or None."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            stamp = datetime.fromtimestamp(value / 1000 if value > 1e11 else value)
        else:
            text = str(value).strip().replace("Z", "+00:00")
            stamp = datetime.fromisoformat(text)
            if stamp.tzinfo is not None:
                stamp = stamp.astimezone().replace(tzinfo=None)
    except (ValueError, OverflowError, OSError):
        m = _DATE_RE.search(str(value))
        return f"{m.group(1)}T00:00:00" if m else None
    return stamp.strftime("%Y-%m-%dT%H:%M:%S")


def mtime_ts(path: Path) -> str | None:
    try:
        return normalize_ts(path.stat().st_mtime)
    except OSError:
        return None


@dataclass(frozen=True)
class Context:
    """What a file's place in the memory layout says about its chunks."""

    category: str
    session_id: str | None = None
    project: str | None = None
    ts: str | None = None


def path_context(path: Path, home: Path) -> Context:
    """``daily/2026-11-20.md`` is dated; ``sessions/<id>.md`` has a session; ``areas/projects/<p>/`` a project."""
    try:
        parts = path.relative_to(home).parts
    except ValueError:
        return Context(category="external")
    if len(parts) == 1:
        return Context(category="memory")
    top = parts[0]
    if top == "daily":
        m = _DATE_RE.search(path.stem)
        return Context("daily", ts=f"{m.group(1)}T00:00:00" if m else None)
    if top == "sessions":
        return Context("session", session_id=path.stem)
    if top == "areas" and len(parts) >= 4:
        area = parts[1].rstrip("s") or parts[1]
        return Context(area, project=parts[2] if parts[1] == "projects" else None)
    return Context(top)


class _Cleaner:
    """Applies the privacy filter and keeps its warnings."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def __call__(self, text: str) -> str:
        result = redact(text)
        self.problems.extend(f"privacy: {w}" for w in result.warnings)
        return result.text


def parse_note(path: Path, text: str, ctx: Context, chunk_chars: int, overlap: int) -> Parsed:
    clean = _Cleaner()
    text = clean(text)
    lines = text.split("\n")
    front = parse_front_matter(lines).fields
    title = str(front.get("title") or path.stem)
    tags = front.get("tags")
    status = front.get("status")
    category = str(front.get("category") or ctx.category)
    ts = normalize_ts((front.get("ended") if category == "session" else None) or front.get("date")
                      or front.get("updated") or front.get("created")) or ctx.ts or mtime_ts(path)
    drafts = []
    for seq, piece in enumerate(split_markdown(text, title, chunk_chars, overlap)):
        body = piece.text
        if tags and seq == 0:
            body = f"{body}\ntags: {', '.join(map(str, tags)) if isinstance(tags, list) else tags}"
        drafts.append(
            Draft(
                kind="note",
                category=category,
                title=piece.title,
                text=body,
                line_start=piece.line_start,
                line_end=piece.line_end,
                ts=ts,
                session_id=str(front.get("session_id") or ctx.session_id or "") or None,
                project=str(front.get("project") or ctx.project or "") or None,
                status=str(status).lower() if isinstance(status, str) and status else None,
                seq=seq,
            )
        )
    return Parsed(drafts, clean.problems)


def parse_facts(path: Path, text: str, ctx: Context, chunk_chars: int, overlap: int) -> Parsed:
    data = load_json(text)
    facts = data.get("facts") if isinstance(data, dict) else data
    if not isinstance(facts, list):
        raise SourceError('facts.json must hold {"facts": [...]}')
    clean = _Cleaner()
    area = path.parent.name
    drafts: list[Draft] = []
    for i, fact in enumerate(facts):
        if not isinstance(fact, dict) or not isinstance(fact.get("fact"), str) or not fact["fact"].strip():
            clean.problems.append(f"fact #{i + 1}: no text in its 'fact' field, skipped")
            continue
        body = fact["fact"].strip()
        if isinstance(fact.get("evidence"), str) and fact["evidence"].strip():
            body += f"\nevidence: {fact['evidence'].strip()}"
        status = fact.get("status")
        drafts.append(
            Draft(
                kind="fact",
                category=str(fact.get("category") or ctx.category),
                title=f"{area} fact {fact.get('id', i + 1)}",
                text=clean(body),
                event_id=str(fact["id"]) if fact.get("id") is not None else None,
                ts=normalize_ts(fact.get("timestamp")) or mtime_ts(path),
                project=ctx.project,
                status=str(status).lower() if status else "active",
                seq=i,
            )
        )
    return Parsed(drafts, clean.problems)


_RECORD_META = {"title", "tags", "record_status", "status", "updated_at", "created_at", "id", "category"}


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(f"- {_render_value(v)}" for v in value)
    if isinstance(value, dict):
        return "\n".join(f"{k}: {_render_value(v)}" for k, v in value.items())
    return "" if value is None else str(value)


def parse_record(path: Path, text: str, ctx: Context, chunk_chars: int, overlap: int) -> Parsed:
    data = load_json(text)
    records = data if isinstance(data, list) else [data]
    clean = _Cleaner()
    drafts: list[Draft] = []
    for r, record in enumerate(records):
        if not isinstance(record, dict):
            clean.problems.append(f"record #{r + 1}: not a JSON object, skipped")
            continue
        title = str(record.get("title") or path.stem)
        lines = [f"{key}: {_render_value(v)}" for key, v in record.items() if key not in _RECORD_META and v]
        tags = record.get("tags")
        if tags:
            lines.append(f"tags: {', '.join(map(str, tags)) if isinstance(tags, list) else tags}")
        body = clean("\n".join(lines).strip())
        if not body:
            clean.problems.append(f"record #{r + 1}: no content, skipped")
            continue
        status = record.get("record_status") or record.get("status")
        for chunk in split_plain(body, chunk_chars, overlap):
            drafts.append(
                Draft(
                    kind="note",
                    category=str(record.get("category") or ctx.category),
                    title=clean(title),
                    text=chunk,
                    event_id=str(record["id"]) if record.get("id") is not None else None,
                    ts=normalize_ts(record.get("updated_at") or record.get("created_at")) or mtime_ts(path),
                    project=ctx.project,
                    status=str(status).lower() if status else None,
                    seq=len(drafts),
                )
            )
    return Parsed(drafts, clean.problems)


def event_title(event: dict[str, Any]) -> str:
    raw_meta = event.get("metadata")
    meta = raw_meta if isinstance(raw_meta, dict) else {}
    parts = [str(event.get("type") or "event"), event.get("tool_name"), meta.get("speaker")]
    return " · ".join(str(p) for p in parts if p)


def event_speaker(event: dict[str, Any]) -> str:
    """Who wrote an event: the speaker its metadata names (a conversation imported with names), else its role
    (``user`` for a prompt, ``assistant`` for a response, else its type, e.g. ``tool``).

    >>> event_speaker({"type": "prompt", "metadata": {"speaker": "Caroline"}}), event_speaker({"type": "prompt"})
    ('Caroline', 'user')
    """
    raw_meta = event.get("metadata")
    meta = raw_meta if isinstance(raw_meta, dict) else {}
    speaker = meta.get("speaker")
    if isinstance(speaker, str) and speaker.strip():
        return " ".join(speaker.split())
    etype = str(event.get("type") or "event")
    return ROLE_OF_TYPE.get(etype, etype)


def event_drafts(event: dict[str, Any], offset: int, chunk_chars: int, overlap: int, clean: _Cleaner) -> list[Draft]:
    """The chunks of one event: one, or several when its content is long (same event id, consecutive seq)."""
    content = event.get("content")
    if not isinstance(content, str) or not content.strip():
        raise SourceError("event without text in 'content'")
    event_id = str(event.get("id") or f"@{offset}")
    etype = str(event.get("type") or "event")
    text = clean(content)
    title = clean(event_title(event))
    speaker = clean(event_speaker(event))
    return [
        Draft(
            kind="event",
            category=etype,
            title=title,
            text=part,
            event_id=event_id,
            ts=normalize_ts(event.get("ts")),
            session_id=str(event["session_id"]) if event.get("session_id") else None,
            project=str(event["project"]) if event.get("project") else None,
            seq=offset * 1000 + i,
            speaker=speaker,
        )
        for i, part in enumerate(split_plain(text, chunk_chars, overlap))
    ]


def _line_drafts(line: bytes, offset: int, chunk_chars: int, overlap: int, clean: _Cleaner) -> list[Draft]:
    if len(line) > MAX_EVENT_LINE_BYTES:
        raise SourceError(f"line longer than {MAX_EVENT_LINE_BYTES // 1024} KiB")
    event = load_json(decode(line, "line"))
    if not isinstance(event, dict):
        raise SourceError("not a JSON object")
    if event.get("forgotten") is True:  # a line `memsearch forget` blanked (same length: offsets hold)
        return []
    return event_drafts(event, offset, chunk_chars, overlap, clean)


#: How every event line memsearch writes begins. Inside a JSON string a quote is always escaped, so these bytes
#: past the start of a line can only be the start of another event glued to it.
EVENT_START = b'{"id":"'


def _after_torn(line: bytes, offset: int, chunk_chars: int, overlap: int, clean: _Cleaner) -> list[Draft]:
    """The event glued to the end of a line torn by a crash or a full disk (the log lost its newline, and the
    next append, before appends started on a fresh line, went on the same line). Empty when there is none."""
    at = line.rfind(EVENT_START)
    if at <= 0:
        return []
    try:
        return _line_drafts(line[at:], offset + at, chunk_chars, overlap, clean)
    except SourceError:
        return []


def parse_event_bytes(data: bytes, base: int, chunk_chars: int, overlap: int) -> Parsed:
    """Events from ``data``, which starts at byte ``base`` of its file.

    Only complete lines are read (a trailing line without its newline is read only if it already holds a whole
    JSON object), so a line being appended by a hook is picked up by the next run instead of being torn.
    """
    clean = _Cleaner()
    out = Parsed()
    pos = 0
    n = len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        end = n if nl < 0 else nl + 1
        line = data[pos : end].strip()
        offset = base + pos
        if line:
            try:
                out.drafts.extend(_line_drafts(line, offset, chunk_chars, overlap, clean))
            except SourceError as exc:
                if nl < 0:
                    break  # an incomplete last line: leave it for the next run
                out.problems.append(f"line at byte {offset}: {exc}")
                out.drafts.extend(_after_torn(line, offset, chunk_chars, overlap, clean))
        pos = end
        out.consumed = pos
    out.problems[:0] = clean.problems
    return out


PARSERS = {"note": parse_note, "facts": parse_facts, "record": parse_record}
