"""indexer.summaries: a session summary's id cannot name a file outside the sessions folder."""

import json

from conftest import write
from indexer.base.settings import resolve_settings


def test_session_summary_ids_cannot_escape_the_sessions_folder(home):
    from indexer.summaries import write_session_summary

    evil = "../../../outside-summary"
    write(home / "events" / "2026-11-20.jsonl", json.dumps(
        {"id": "e1", "ts": "2026-11-20T10:00:00", "session_id": evil, "type": "prompt", "content": "hello"}) + "\n")
    path = write_session_summary(resolve_settings(home, model="none"), evil)
    assert path.parent == home / "sessions" and path.exists()
    assert not (home.parent.parent / "outside-summary.md").exists()
