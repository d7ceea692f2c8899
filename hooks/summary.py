"""A session summary note built without an LLM: ``sessions/<session_id>.md``.

It lists the session's prompts, the files it touched, the commands it ran, the errors it met and the sentences of
the assistant's replies that state decisions. It is written atomically and indexed like any note.

SessionEnd only appends the session id to one queue (``<root>/.memsearch/summary-queue``); the warm server drains
it while idle with the model it already holds, or, where no server may run, one worker process does (a second
one finds the queue's lock taken and leaves at once). No process and no model load per summary.
"""

from __future__ import annotations

import os
from pathlib import Path

from indexer.locks import LockTimeout, file_lock
from indexer.pipeline import index, ingest
from indexer.privacy import scrub
from indexer.private import write_private
from indexer.settings import Settings
from indexer.summaries import build_summary, summary_path

__all__ = ["build_summary", "write_session_summary"]


def queue_path(settings: Settings) -> Path:
    return settings.state_dir / "summary-queue"


def queue_summary(settings: Settings, session_id: str) -> None:
    """Append one session id to the queue (a single O_APPEND write: concurrent hooks never interleave). An id
    holding white space (never one of Claude Code's) or longer than 200 characters is not queued."""
    if not session_id or len(session_id) > 200 or any(ch.isspace() for ch in session_id):
        return
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    line = (session_id + "\n").encode("utf-8", "surrogatepass")
    fd = os.open(queue_path(settings), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def queued(settings: Settings) -> bool:
    try:
        return queue_path(settings).stat().st_size > 0 or any(settings.state_dir.glob("summary-queue.*.work"))
    except OSError:
        return False


def drain_queue(settings: Settings, embedder=None) -> int:
    """Write the summary of every queued session; returns how many were written. Returns 0 at once when another
    process is draining. ``embedder``: the caller's loaded model (the server's), or None to leave the summaries'
    vectors for the next embedding pass (never load a model here)."""
    written = 0
    try:
        with file_lock(settings.state_dir / "summary.lock", 0):
            while True:
                # a work file left by a drain that died is taken up first
                work = sorted(settings.state_dir.glob("summary-queue.*.work"))
                if not work:
                    if not queue_path(settings).exists() or queue_path(settings).stat().st_size == 0:
                        return written
                    target = settings.state_dir / f"summary-queue.{os.getpid()}.work"
                    os.replace(queue_path(settings), target)
                    work = [target]
                for path in work:
                    sessions = dict.fromkeys(x for x in path.read_text(encoding="utf-8").split() if x)
                    for session in sessions:
                        if write_session_summary(settings, session, embedder=embedder) is not None:
                            written += 1
                    path.unlink()
    except LockTimeout:
        return written


def write_session_summary(settings: Settings, session_id: str, embedder=None) -> Path | None:
    ingest(settings, [settings.home / "events"], lock_timeout=30)
    text = build_summary(settings, session_id)
    if text is None:
        return None
    path = summary_path(settings, session_id)
    # built from filtered chunks, filtered whole once more
    write_private(path, scrub(text).encode("utf-8"))
    index(settings, [path], lock_timeout=60, embedder=embedder)
    return path
