"""One function per Claude Code hook event. Each takes the event's stdin JSON and returns what to print (a JSON
string) or None. Field names follow the Claude Code hooks reference exactly: the prompt is ``prompt``; context
goes in ``hookSpecificOutput.additionalContext`` next to ``hookEventName``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from indexer.base.paths import SUMMARIZE_STARTING
from indexer.base.settings import Settings, resolve_settings
from indexer.eventlog import Event, append
from search_engine.serve.client import request

if TYPE_CHECKING:
    from indexer.base.types import Hit
    from search_engine.query import ParsedQuery

#: The prompt hook's whole budget for searching, in seconds (well inside Claude Code's 30 s timeout).
SEARCH_BUDGET = 0.8
SERVER_TIMEOUT = 0.6
MAX_QUERY_CHARS = 2000
_TRIVIAL_RE = re.compile(
    r"^\W*(hi|hello|hey|yo|thanks|thank you|thx|ty|ok|okay|k|yes|yep|yeah|no|nope|sure|great|cool|nice|"
    r"good|perfect|got it|continue|go on|go ahead|proceed|lgtm|done|next|again|retry|stop)\W*$",
    re.IGNORECASE,
)


#: This hook run's settings, once resolved (the entry point reads ``log_hook_times`` from it).
SETTINGS: Settings | None = None


def _settings() -> Settings:
    """The settings, resolved leniently: a bad value (a typo in a config file, a cloned project's config) is
    logged and skipped for the next source down, never a reason to stop capturing."""
    global SETTINGS
    settings = SETTINGS = resolve_settings(strict=False)
    if settings.problems:
        from hooks.log import log

        for problem in settings.problems:
            log(f"settings: {problem}")
    if settings.disable:
        from hooks.log import Disabled

        raise Disabled
    return settings


def _gate(settings: Settings, payload: dict[str, Any]):
    """The project's opt-out and the user's exclusions (indexer.optout) for the payload's working directory."""
    from indexer.optout import gate

    cwd = payload.get("cwd")
    return gate(settings, cwd if isinstance(cwd, str) and cwd else None)


def _project(payload: dict[str, Any]) -> str | None:
    cwd = payload.get("cwd") or os.environ.get("CLAUDE_PROJECT_DIR")
    return os.path.basename(str(cwd).rstrip("/")) or None if cwd else None


#: What the user must hear from this hook run (shown as ``systemMessage``): events that could not be recorded.
NOTICES: list[str] = []
#: Whether this hook run can tell the user anything: False in a background (async) hook, whose output would reach
#: Claude instead; its lost events stay counted as not yet told, for the next prompt's hook to tell.
ANNOUNCE = True


def _record(settings: Settings, event: Event, *, ingest_now: bool = True) -> Path | None:
    """Write the event to the log, then make it searchable by BM25 at once: by the warm server when it runs, else
    in this process (skipped if a long index run holds the writer lock: that run, or the next, picks it up).

    When the log cannot be written (a full disk, a read-only memory root), the event is counted as lost and the
    user is told at once (by a background hook: at the next prompt); None is returned. The first event recorded
    after that by a hook that can tell the user tells of the losses.
    """
    from indexer.base import lost

    try:
        path = append(settings.home, event)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        counted = lost.record(settings.state_dir, reason, told=ANNOUNCE)
        from hooks.log import log

        log(f"{event.type}: event not recorded: {reason}")
        if ANNOUNCE:
            NOTICES.append(f"memsearch: this {event.type} event could not be recorded ({reason}: "
                           f"{settings.home / 'events'}); it is lost" + ("" if counted else
                           ", and memsearch could not count it for `memsearch status`"))
        return None
    earlier = lost.unannounced(settings.state_dir) if ANNOUNCE else None
    if earlier:
        NOTICES.append(f"memsearch: {lost.describe(earlier, earlier['new'])}; see `memsearch doctor`")
    if ingest_now:
        _ingest(settings, path)
    lost.reserve(settings.state_dir)
    return path


def _ingest(settings: Settings, path: Path) -> None:
    answer = request(settings, {"op": "ingest", "paths": [str(path)]}, timeout=SERVER_TIMEOUT)
    if not (answer and answer.get("ok")):
        from indexer.pipeline import ingest

        ingest(settings, [path], lock_timeout=0.2)


def too_large(event_name: str, limit: int) -> None:
    """A payload too large to read: its event is lost, and said to be (log, lost-events count, the user)."""
    from hooks.log import log
    from indexer.base import lost

    settings = _settings()
    reason = f"a {event_name} hook payload over {limit // 2**20} MiB"
    log(f"{event_name}: event not recorded: payload over {limit // 2**20} MiB")
    lost.record(settings.state_dir, reason, told=ANNOUNCE)
    if ANNOUNCE:
        NOTICES.append(f"memsearch: this {event_name} event was not recorded: its payload is over "
                       f"{limit // 2**20} MiB")


def is_trivial(prompt: str) -> bool:
    text = prompt.strip()
    if len(text) < 10 or _TRIVIAL_RE.match(text):
        return True
    return text.startswith("/") and " " not in text


def _context_json(event_name: str, text: str) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}},
                      ensure_ascii=False)


def prompt(payload: dict[str, Any]) -> str | None:
    """UserPromptSubmit: record the prompt, then inject relevant memories from other sessions. The warm server
    searches and renders the block (so this path imports neither the search nor the hit shapes: a warm prompt
    costs little more than starting Python); without it, BM25 here and the same gate and block."""
    asked = _asked(payload)
    if asked is None:
        return None
    started = time.monotonic()
    answer = _ask_server(asked, render=True)
    block = answer.get("block") if answer else None
    if not isinstance(block, str):
        found = _recalled(asked, answer, started)
        from search_engine.context import format_context

        block, _ = format_context(found.query, found.hits, max_items=found.max_items, project=found.project,
                                  token_budget=found.token_budget, model=found.model)
    return _context_json("UserPromptSubmit", block) if block else None


class Asked(NamedTuple):
    """A prompt to find memories for: the hook's settings, the query text, its session and project, the event
    log it was captured in (None: not recorded) and what the block may hold."""

    settings: Settings
    text: str
    session: str | None
    project: str | None
    captured: Path | None
    max_items: int
    token_budget: int


class Recalled(NamedTuple):
    """What the prompt hook found for a prompt, before its relevance gate."""

    query: ParsedQuery
    hits: list[Hit]
    project: str | None
    max_items: int
    token_budget: int
    #: the model whose similarities the hits carry (the server's, when it ran hybrid); None: BM25 hits
    model: str | None = None


def _asked(payload: dict[str, Any]) -> Asked | None:
    """Record the prompt; what to search for, or None when nothing is to be injected (an empty or trivial
    prompt, injection off here or by the user)."""
    text = payload.get("prompt")
    if not isinstance(text, str) or not text.strip():
        return None
    settings = _settings()
    allowed = _gate(settings, payload)
    if not (allowed.capture or allowed.inject):
        return None
    session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    project = _project(payload)
    path = _record(settings, Event(type="prompt", content=text, session_id=session, project=project,
                                   cwd=payload.get("cwd") if isinstance(payload.get("cwd"), str) else None),
                   ingest_now=False) if allowed.capture else None
    if is_trivial(text) or settings.max_items == 0 or not allowed.inject:
        if path is not None:
            request(settings, {"op": "ingest", "paths": [str(path)]}, timeout=SERVER_TIMEOUT)
        return None
    return Asked(settings, text[:MAX_QUERY_CHARS], session, project, path, settings.max_items,
                 settings.token_budget)


def recall(payload: dict[str, Any]) -> Recalled | None:
    """The prompt hook up to its gate: record the prompt, search (warm server, else BM25 here) and return the
    query, the candidate hits, the prompt's project and the item limit; None when nothing is to be injected.
    The evaluation (``scripts/eval.py``, injection section) runs this function; the block it leads to is the one
    :func:`prompt` injects (the warm server renders it with the same :func:`search_engine.context.format_context`)."""
    asked = _asked(payload)
    if asked is None:
        return None
    started = time.monotonic()
    return _recalled(asked, _ask_server(asked, render=False), started)


def _ask_server(asked: Asked, *, render: bool) -> dict[str, Any] | None:
    """The warm server's hybrid search for the prompt (it also indexes the captured prompt once it has answered),
    with the block it renders when ``render``; None when no server answers in time."""
    from search_engine.serve.client import tuning

    req: dict[str, Any] = {
        "op": "search", "query": asked.text, "k": asked.max_items * 3, "mode": "hybrid",
        "filters": {"exclude_session": asked.session} if asked.session else {},
        "ingest": [str(asked.captured)] if asked.captured else [],
        # no feedback list (a second BM25 search, +8-9 ms in the warm hook): the prompt hook keeps its budget
        "settings": {**tuning(asked.settings), "feedback_share": 0.0}}
    if render:
        req["render"] = {"project": asked.project, "max_items": asked.max_items, "token_budget": asked.token_budget}
    answer = request(asked.settings, req, timeout=SERVER_TIMEOUT)
    return answer if answer and answer.get("ok") else None


def _recalled(asked: Asked, answer: dict[str, Any] | None, started: float) -> Recalled:
    """The candidate hits: the server's ``answer`` when there is one, else BM25 in this process.

    Without a server the prompt is not indexed here: the search excludes its own session anyway, and importing
    the indexer would double this path's start-up (``python -X importtime``: the pipeline is the largest import
    of the hook). The prompt is in the event log; the server this call starts indexes it on its first scan, and
    where no server may run, the next hook that records an event (the turn's Stop, a tool call) indexes the log
    from where the index stopped, this prompt included."""
    from search_engine.query import ParsedQuery

    query = ParsedQuery.parse(asked.text)
    if answer is not None and isinstance(answer.get("result"), dict):
        from indexer.base.types import SearchResult

        result = SearchResult.from_dict(answer["result"])
        return Recalled(query, list(result.hits), asked.project, asked.max_items, asked.token_budget,
                        result.similarity_model)
    hits = _local_search(asked, query, started)
    return Recalled(query, hits, asked.project, asked.max_items, asked.token_budget)


def _local_search(asked: Asked, query: ParsedQuery, started: float) -> list[Hit]:
    """BM25 in this process, within the hook's budget; a server is started for the next prompt."""
    from search_engine.serve.client import ensure_server

    settings = asked.settings
    ensure_server(settings)  # gone after an idle exit, say: back for the next prompt, not waited for here
    from indexer.base.errors import IndexCorrupt, MemsearchError
    from search_engine.filters import Filters
    from search_engine.search import search

    try:
        if time.monotonic() - started > SEARCH_BUDGET:
            return []
        result = search(settings, query, mode="bm25", k=asked.max_items * 3,
                        filters=Filters(exclude_session=asked.session), embedder=None)
    except MemsearchError as exc:  # a damaged or unwritable index: the prompt goes on without memories
        from hooks.log import log

        log(f"prompt: no search: {type(exc).__name__}")
        if isinstance(exc, IndexCorrupt):
            NOTICES.append("memsearch: the index is damaged, so no memories were searched; `memsearch index` "
                           "rebuilds it from your sources (your events are still recorded)")
        return []
    return list(result.hits)


def tool(payload: dict[str, Any]) -> None:
    """PostToolUse / PostToolUseFailure: record a compact observation of the call."""
    from indexer.observations import describe_tool, response_text, skip_tool, succeeded

    name = payload.get("tool_name")
    if not isinstance(name, str) or skip_tool(name):
        return None
    response = payload.get("tool_response")
    error = payload.get("error")
    output = response_text(response) if response is not None else (str(error) if error else "")
    content, metadata = describe_tool(name, payload.get("tool_input"), output, succeeded(response, error), response)
    if payload.get("tool_use_id"):
        metadata["tool_use_id"] = str(payload["tool_use_id"])
    if payload.get("agent_type"):
        metadata["agent_type"] = str(payload["agent_type"])
    settings = _settings()
    from indexer.optout import tool_excluded

    raw_input = payload.get("tool_input")
    tool_input = raw_input if isinstance(raw_input, dict) else {}
    target = tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
    if not _gate(settings, payload).capture or tool_excluded(settings, name, target if isinstance(target, str)
                                                             else None):
        return None
    _record(settings, Event(type="tool", tool_name=name, content=content, metadata=metadata,
                            session_id=payload.get("session_id"), project=_project(payload), cwd=payload.get("cwd")))
    return None


def stop(payload: dict[str, Any]) -> None:
    """Stop: record the assistant's reply of the turn."""
    text = payload.get("last_assistant_message")
    if not isinstance(text, str) or not text.strip():
        path = payload.get("transcript_path")
        if not isinstance(path, str):
            return None
        from indexer.transcripts import last_assistant_text

        text = last_assistant_text(Path(path).expanduser())
    if not text.strip():
        return None
    from indexer.transcripts import strip_injected

    settings = _settings()
    if not _gate(settings, payload).capture:
        return None
    _record(settings, Event(type="response", content=strip_injected(text), session_id=payload.get("session_id"),
                               project=_project(payload), cwd=payload.get("cwd")))
    return None


def session_start(payload: dict[str, Any]) -> str | None:
    """SessionStart: make sure the warm server runs (started detached, never waited for), and inject the standing
    context (MEMORY.md, this project's last session summary and active facts) unless the project opted out."""
    from search_engine.serve.client import ensure_server

    settings = _settings()
    ensure_server(settings)
    if settings.session_context == 0 or not _gate(settings, payload).inject:
        return None
    from search_engine.standing import standing_context

    block = standing_context(settings, _project(payload))
    return _context_json("SessionStart", block) if block else None


def session_end(payload: dict[str, Any]) -> None:
    """SessionEnd: queue the session's summary (SessionEnd hooks share a 1.5 s budget). The warm server writes
    it; where no server may run, one detached worker drains the queue (never one process per session)."""
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        return None
    from indexer.summaries import queue_summary
    from search_engine.serve.client import ensure_server

    settings = _settings()
    try:
        queue_summary(settings, session)
    except OSError as exc:  # a full disk, a read-only root: the summary is lost, and counted as the events are
        from hooks.log import log
        from indexer.base import lost

        reason = f"{exc.strerror or type(exc).__name__}, queueing a session's summary"
        lost.record(settings.state_dir, reason)  # told by the next prompt: the session is ending
        log(f"session-end: summary not queued: {reason}")
        return None
    if not settings.no_server:
        ensure_server(settings)
        return None
    from search_engine.serve.client import claim_start

    if not claim_start(settings, SUMMARIZE_STARTING):
        return None  # a worker is draining the queue: it takes this session too
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root + (os.pathsep + os.environ["PYTHONPATH"] if "PYTHONPATH" in os.environ else "")}
    subprocess.Popen([sys.executable, "-m", "hooks.entry", "summarize"], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                     env=env)
    return None


def summarize(argv: list[str]) -> None:
    """The queue's worker where no server runs: write every queued summary (BM25 now, vectors later)."""
    from indexer.summaries import drain_queue, queue_summary, queued

    settings = _settings()
    if argv:
        queue_summary(settings, argv[0])
    try:
        drain_queue(settings, embedder=None)
    finally:
        (settings.state_dir / SUMMARIZE_STARTING).unlink(missing_ok=True)
    if queued(settings):  # queued while this worker was finishing (that hook saw the claim and left it to us)
        drain_queue(settings, embedder=None)
