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


def test_the_last_session_is_the_one_that_ended_last_not_the_id_that_sorts_last(home):
    from indexer.pipeline import index
    from indexer.summaries import write_session_summary
    from search_engine.standing import _project_parts

    lines = [  # two sessions of one project on one day: "zz-early" ended at 10:30, "aa-late" at 19:38
        {"id": "z1", "ts": "2026-11-20T10:00:00", "session_id": "zz-early", "type": "prompt", "content": "morning"},
        {"id": "z2", "ts": "2026-11-20T10:30:00", "session_id": "zz-early", "type": "prompt", "content": "done"},
        {"id": "a1", "ts": "2026-11-20T19:30:00", "session_id": "aa-late", "type": "prompt", "content": "evening"},
        {"id": "a2", "ts": "2026-11-20T19:38:00", "session_id": "aa-late", "type": "prompt", "content": "later"},
    ]
    write(home / "events" / "2026-11-20.jsonl", "".join(json.dumps({**e, "project": "proj"}) + "\n" for e in lines))
    settings = resolve_settings(home, model="none")
    for session in ("aa-late", "zz-early"):  # written in the other order too: the file's age does not decide
        write_session_summary(settings, session)
    index(settings, embedder=None)
    (_, path, text), _ = _project_parts(settings, "proj")  # what the session-start hook injects
    assert path.endswith("aa-late.md") and "to 2026-11-20T19:38:00" in text, (path, text)
