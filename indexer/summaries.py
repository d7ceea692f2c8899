"""A session's summary note, built without an LLM from its indexed events: ``sessions/<session_id>.md``.

It lists the session's prompts, the files it touched, the commands it ran, the errors it met and the sentences of
the assistant's replies that state decisions. ``memsearch forget`` rebuilds it without the events it removed
(:func:`summary_path`, :func:`is_generated`).

SessionEnd only appends the session id to one queue (``<root>/.memsearch/summary-queue``); the warm server drains
it while idle with the model it already holds, or, where no server may run, one worker process does (a second
one finds the queue's lock taken and leaves at once). No process and no model load per summary.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from pathlib import Path

from indexer import tombstones
from indexer.base.locks import LockTimeout, file_lock
from indexer.base.paths import EVENTS_DIR, SUMMARY_LOCK, SUMMARY_QUEUE, SUMMARY_QUEUE_WORK
from indexer.base.private import append_line, write_private
from indexer.base.settings import Settings
from indexer.privacy import cut_head, scrub
from indexer.store.local import SqliteStore

_DECISION_RE = re.compile(
    r"\b(decided|decision|we will|we'll|i'll use|going with|chose|chosen|instead of|switched to|settled on|"
    r"the fix is|root cause|should use|must not|never use|always use)\b",
    re.IGNORECASE,
)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")
_SAFE_ID_RE = re.compile(r"[^A-Za-z0-9_.-]")
MAX_ITEMS = 30


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else cut_head(flat, limit - 1) + "…"  # never through a redaction marker


def build_summary(settings: Settings, session_id: str, without: Collection[str] = ()) -> str | None:
    """The markdown summary of a session from its indexed events, or None when it has none. Left out: the events
    ``without`` (ids: what a forget is about to remove) and those a forgotten summary of the session summed up
    (:meth:`indexer.tombstones.Tombstones.forget_summary`: forgotten as a whole, it is not written again)."""
    summed_up = tombstones.load(settings.state_dir).summed_up(session_id)
    with SqliteStore.open(settings.db_path) as store:
        rows = [(c.category, c.text, c.ts, c.project) for c in store.session_events(session_id)
                if c.event_id not in without and tombstones.event_key(c.event_id or "") not in summed_up]
    if not rows:
        return None
    files: dict[str, str] = {}  # path -> the tool that touched it first
    prompts, commands, errors, decisions = [], [], [], []
    project = next((r[3] for r in rows if r[3]), None)
    for category, text, _, _ in rows:
        first = text.split("\n", 1)[0]
        if category == "prompt":
            prompts.append(_one_line(text))
        elif category == "tool":
            name, _, key = first.partition(": ")
            failed = key.endswith(" (failed)")
            key = key.removesuffix(" (failed)")
            if name in ("Edit", "MultiEdit", "Write", "NotebookEdit") and key:
                files.setdefault(key, name)
            elif name in ("Bash", "PowerShell") and key:
                commands.append(f"`{_one_line(key, 160)}`" + (" (failed)" if failed else ""))
            if failed:
                errors.append(_one_line(f"{name} {key}: {text.split(chr(10), 1)[-1]}"))
        elif category == "response":
            for sentence in _SENTENCE_RE.split(text):
                if _DECISION_RE.search(sentence):
                    decisions.append(_one_line(sentence, 240))
    first_ts, last_ts = rows[0][2] or "", rows[-1][2] or ""
    lines = [
        "---",
        f"session_id: {session_id}",
        *([f"project: {project}"] if project else []),
        f"date: {first_ts[:10]}",
        *([f"ended: {last_ts}"] if last_ts else []),  # the summary's time: which session ended last
        "category: session",
        "---",
        f"# Session {session_id}" + (f" ({project})" if project else ""),
        "",
        f"From {first_ts or '?'} to {last_ts or '?'}: {len(prompts)} prompts, {len(files)} files touched,"
        f" {len(commands)} commands.",
    ]
    for heading, items in (
        ("Prompts", [f"- {p}" for p in prompts]),
        ("Files touched", [f"- `{path}` ({tool})" for path, tool in files.items()]),
        ("Commands run", [f"- {c}" for c in commands]),
        ("Errors", [f"- {e}" for e in errors]),
        ("Decisions", [f"- {d}" for d in dict.fromkeys(decisions)]),
    ):
        if items:
            lines += ["", f"## {heading}", *items[:MAX_ITEMS]]
            if len(items) > MAX_ITEMS:
                lines.append(f"- … and {len(items) - MAX_ITEMS} more")
    return "\n".join(lines) + "\n"


def summary_path(settings: Settings, session_id: str) -> Path:
    """Where the summary of ``session_id`` is written."""
    return settings.home / "sessions" / f"{_SAFE_ID_RE.sub('_', session_id)[:120]}.md"


def is_generated(path: Path) -> bool:
    """Whether ``path`` is a summary memsearch wrote (its front matter opens with the session id and it carries
    the generated heading), not a note the user keeps in ``sessions/``."""
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return head.startswith("---\nsession_id: ") and "\ncategory: session\n---\n# Session " in head


def queue_path(settings: Settings) -> Path:
    return settings.state_dir / SUMMARY_QUEUE


def queue_summary(settings: Settings, session_id: str) -> None:
    """Append one session id to the queue (a single O_APPEND write: concurrent hooks never interleave). An id
    holding white space (never one of Claude Code's) or longer than 200 characters is not queued."""
    if not session_id or len(session_id) > 200 or any(ch.isspace() for ch in session_id):
        return
    append_line(queue_path(settings), session_id)


def queued(settings: Settings) -> bool:
    try:
        return queue_path(settings).stat().st_size > 0 or any(settings.state_dir.glob(SUMMARY_QUEUE_WORK))
    except OSError:
        return False


def drain_queue(settings: Settings, embedder=None) -> int:
    """Write the summary of every queued session; returns how many were written. Returns 0 at once when another
    process is draining. ``embedder``: the caller's loaded model (the server's), or None to leave the summaries'
    vectors for the next embedding pass (never load a model here)."""
    written = 0
    try:
        with file_lock(settings.state_dir / SUMMARY_LOCK, 0):
            while True:
                # a work file left by a drain that died is taken up first
                work = sorted(settings.state_dir.glob(SUMMARY_QUEUE_WORK))
                if not work:
                    if not queue_path(settings).exists() or queue_path(settings).stat().st_size == 0:
                        return written
                    target = settings.state_dir / f"{SUMMARY_QUEUE}.{os.getpid()}.work"
                    os.replace(queue_path(settings), target)
                    work = [target]
                for path in work:
                    if not _ingest_events(settings):
                        return written  # another writer held the index throughout: the work file waits
                    sessions = dict.fromkeys(x for x in path.read_text(encoding="utf-8").split() if x)
                    for session in sessions:
                        if write_session_summary(settings, session, embedder=embedder, ingested=True) is not None:
                            written += 1
                    path.unlink()
    except LockTimeout:
        return written


def _ingest_events(settings: Settings) -> bool:
    """Index what the event logs hold, waiting up to 30 s for another writer; False when it never let go."""
    from indexer.pipeline import ingest  # the pipeline is not needed to queue a summary (the SessionEnd hook)

    return ingest(settings, [settings.home / EVENTS_DIR], lock_timeout=30)


def write_session_summary(settings: Settings, session_id: str, embedder=None, *, ingested: bool = False) -> Path | None:
    """Write ``sessions/<id>.md`` from the session's events (indexed first, unless the caller just ``ingested``
    them) and index it; None without events."""
    from indexer.pipeline import index

    if not ingested:
        _ingest_events(settings)
    text = build_summary(settings, session_id)
    if text is None:
        return None
    path = summary_path(settings, session_id)
    # built from filtered chunks, filtered whole once more
    write_private(path, scrub(text).encode("utf-8"))
    index(settings, [path], lock_timeout=60, embedder=embedder)
    return path
