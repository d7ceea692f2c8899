"""A session summary note built without an LLM: ``sessions/<session_id>.md``.

It lists the session's prompts, the files it touched, the commands it ran, the errors it met and the sentences of
the assistant's replies that state decisions. It is written atomically and indexed like any note.
"""

from __future__ import annotations

from pathlib import Path

from indexer.pipeline import index, ingest
from indexer.privacy import scrub
from indexer.private import write_private
from indexer.settings import Settings
from indexer.summaries import build_summary, summary_path

__all__ = ["build_summary", "write_session_summary"]


def write_session_summary(settings: Settings, session_id: str) -> Path | None:
    ingest(settings, [settings.home / "events"], lock_timeout=30)
    text = build_summary(settings, session_id)
    if text is None:
        return None
    path = summary_path(settings, session_id)
    # built from filtered chunks, filtered whole once more
    write_private(path, scrub(text).encode("utf-8"))
    index(settings, [path], lock_timeout=60)
    return path
