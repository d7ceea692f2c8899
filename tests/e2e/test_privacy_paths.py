"""One case per privacy class sent through every capture path, then every file under the memory root (the index
and its WAL included, the user's own note excepted) searched for the canary.

Cross-cutting on purpose (tests/e2e): the privacy audit goes over every capture path at once (hooks, transcript
import, notes, summaries) and every file they write; the redaction rules themselves are tested in
tests/indexer/test_privacy.py."""

import json

import pytest

from hooks import handlers
from indexer.pipeline import index
from indexer.summaries import write_session_summary
from indexer.transcripts import import_transcripts

CASES = {
    "named": "ops: export BILLING_DB_PASSWORD='Qzpath1k9 with spaces' && ./deploy",
    "formats": "curl -sf -u release-bot:Qzpath2k9 https://artifacts.example.org/upload",
    "truncation": "x" * 1450 + "<private>Qzpath3k9 " + "y" * 3000 + "</private> done",
    "tags": "see < private reason='client'>Qzpath4k9</ private> and ```\nunclosed fence <private>Qzpath5k9</private>",
}


def _transcript(path, session, text):
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": session, "timestamp": "2026-11-20T10:00:00Z",
         "message": {"role": "user", "content": text}},
        {"type": "assistant", "uuid": "a1", "sessionId": session, "timestamp": "2026-11-20T10:00:05Z",
         "message": {"content": [{"type": "text", "text": text},
                                 {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": text}}]}},
        {"type": "user", "uuid": "r1", "sessionId": session, "timestamp": "2026-11-20T10:00:06Z",
         "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}]}},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize("cls", CASES)
def test_no_capture_path_stores_the_canary(cls, home, settings, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_NO_SERVER", "1")
    text = CASES[cls]
    base = {"session_id": "s1", "cwd": "/work/app"}
    handlers.prompt({**base, "prompt": text})
    handlers.tool({**base, "tool_name": "Bash", "tool_input": {"command": text}, "tool_response": {"stdout": text}})
    handlers.tool({**base, "tool_name": "Edit", "tool_input": {"file_path": "a.py", "new_string": text},
                   "tool_response": {"success": True}})
    handlers.tool({**base, "tool_name": "Bash", "tool_input": {"command": "make"}, "error": text})
    handlers.tool({**base, "tool_name": "mcp__db__query", "tool_input": {"sql": "x"}, "tool_response": {"rows": text}})
    handlers.stop({**base, "last_assistant_message": text})
    _transcript(tmp_path / "fallback.jsonl", "s1", text)
    handlers.stop({**base, "transcript_path": str(tmp_path / "fallback.jsonl")})
    _transcript(tmp_path / "projects" / "app" / "t.jsonl", "s2", text)
    import_transcripts(settings, [tmp_path / "projects"])
    (home / "notes").mkdir()
    (home / "notes" / "n.md").write_text(f"# Note\n\n{text}\n")
    index(settings, None)
    assert write_session_summary(settings, "s1") is not None
    scanned = 0
    for path in home.rglob("*"):
        if path.is_file() and "notes" not in path.parts:
            scanned += 1
            data = path.read_bytes().lower()
            assert b"qzpath" not in data, (cls, path)
    assert scanned >= 4 and (home / ".memsearch" / "index.db").exists()
