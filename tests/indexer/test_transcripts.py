"""indexer.transcripts: importing Claude Code transcripts is idempotent, skips the context the hooks injected and what
the hooks already captured."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import MEMSEARCH, write
from hookrun import events, hook, prompt_payload, tool_payload


def test_import_transcripts_is_idempotent_and_skips_injected_context(home, tmp_path):
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": "S", "cwd": "/w/app", "timestamp": "2026-06-15T10:00:01.000Z",
         "message": {"role": "user", "content": "Give me a tour of the ingestion pipeline"}},
        {"type": "attachment", "attachment": {"type": "hook_additional_context",
                                              "content": "<memory-context>OLD MEMORY</memory-context>"}},
        {"type": "assistant", "uuid": "a1", "sessionId": "S", "cwd": "/w/app", "timestamp": "2026-06-15T10:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Let me look at the loader."},
                                                      {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                                       "input": {"command": "ls src/loader"}}]}},
        {"type": "user", "uuid": "r1", "sessionId": "S", "cwd": "/w/app", "timestamp": "2026-06-15T10:00:03.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                  "content": "reader.py writer.py"}]}},
        {"type": "user", "uuid": "m1", "isMeta": True, "sessionId": "S", "message": {"role": "user", "content": "meta"}},
        {"type": "user", "uuid": "u2", "sessionId": "S", "cwd": "/w/app", "timestamp": "2026-06-15T10:01:00.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text":
                     "<system-reminder><memory-context>INJECTED</memory-context></system-reminder>Now fix reader.py"}]}},
    ]
    transcript = write(tmp_path / "projects" / "-w-app" / "S.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    first = json.loads(subprocess.run([MEMSEARCH, "import", "transcripts", str(transcript.parent.parent), "--json"],
                                      capture_output=True, text=True, check=True).stdout)
    assert first["events_imported"] == 4
    second = json.loads(subprocess.run([MEMSEARCH, "import", "transcripts", str(transcript), "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    assert (second["events_imported"], second["transcripts_unchanged"]) == (0, 1)
    again = subprocess.run([MEMSEARCH, "import", "transcripts", str(transcript)], capture_output=True, text=True)
    assert again.stdout.startswith("transcripts: 1 (1 unchanged since the last import), events imported: 0")
    recorded = events(home)
    contents = [e["content"] for e in recorded]
    assert "Give me a tour of the ingestion pipeline" in contents and "Now fix reader.py" in contents
    assert not any("INJECTED" in c or "OLD MEMORY" in c or c == "meta" for c in contents)
    tool = next(e for e in recorded if e["type"] == "tool")
    assert tool["content"].startswith("Bash: ls src/loader") and "writer.py" in tool["content"]
    out = json.loads(subprocess.run([MEMSEARCH, "search", "ingestion pipeline tour", "--mode", "bm25", "--json"],
                                    capture_output=True, text=True).stdout)
    assert out["hits"] and out["hits"][0]["session_id"] == "S"


def test_import_of_a_missing_path_is_a_usage_error_and_a_bad_name_is_skipped(home, tmp_path):
    missing = subprocess.run([MEMSEARCH, "import", "transcripts", str(tmp_path / "nonexistent")],
                             capture_output=True, text=True)
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr.startswith(f"Error: {tmp_path / 'nonexistent'} does not exist") and \
        missing.stderr.count("\n") == 1
    line = {"type": "user", "uuid": "u1", "sessionId": "S", "timestamp": "2026-06-15T10:00:01.000Z",
            "message": {"role": "user", "content": "a transcript that is fine"}}
    folder = tmp_path / "projects" / "-w-app"
    write(folder / "S.jsonl", json.dumps(line) + "\n")
    write(Path(os.fsdecode(bytes(folder) + b"/bad-\xff.jsonl")), json.dumps({**line, "uuid": "u2"}) + "\n")
    report = json.loads(subprocess.run([MEMSEARCH, "import", "transcripts", str(tmp_path / "projects"), "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    assert report["events_imported"] == 1
    assert [p for p in report["problems"] if "bad-\\xff.jsonl: file name is not valid UTF-8" in p]


def _import(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([MEMSEARCH, "import", "transcripts", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_what_is_not_a_transcript_is_listed_and_importing_nothing_is_an_error(home, tmp_path):
    """A file that is not .jsonl, or a .jsonl of other lines (memsearch's own event log), or a device is skipped,
    each in one line; when every file was, nothing was imported: exit 1. An empty PATH is a usage error, never the
    current folder."""
    text = write(tmp_path / "notes.txt", "hello\n")
    own_log = write(tmp_path / "events.jsonl", json.dumps({"id": "e1", "type": "prompt", "session_id": "s",
                                                          "content": "not a transcript"}) + "\n")
    one = _import(str(text))
    assert one.returncode == 1 and "Traceback" not in one.stderr
    assert one.stdout == (f"transcripts: 1, events imported: 0, already there: 0\n"
                          f"skipped: {text}: not a Claude Code transcript (those are .jsonl files)\n")
    assert one.stderr == ("Error: nothing imported: the file is not a readable Claude Code transcript "
                          "(see skipped)\n")
    every = json.loads(_import(str(own_log), "/dev/null", "--json").stdout)
    assert every["problems"] == [f"{own_log}: not a Claude Code transcript (no transcript line in it)",
                                 "/dev/null: not a Claude Code transcript (not a regular file)"]
    assert every["transcripts_skipped"] == every["transcripts"] == 2 and every["events_imported"] == 0
    line = {"type": "user", "uuid": "u1", "sessionId": "S", "timestamp": "2026-06-15T10:00:01.000Z",
            "message": {"role": "user", "content": "a transcript that is fine"}}
    good = write(tmp_path / "S.jsonl", json.dumps(line) + "\n")
    some = _import(str(good), str(text))
    assert some.returncode == 0 and "events imported: 1" in some.stdout and f"skipped: {text}: " in some.stdout
    write(tmp_path / "cwd" / "deep" / "T.jsonl", json.dumps({**line, "uuid": "u9"}) + "\n")
    empty = _import("", cwd=tmp_path / "cwd")
    assert (empty.returncode, empty.stdout) == (2, "")
    assert empty.stderr == "Error: a PATH given is empty: name a file or folder (is a shell variable unset?)\n"
    assert [e["id"] for e in events(home)] == ["t-u1"]


def test_import_skips_what_the_hooks_already_captured(home, tmp_path):
    s, cwd = "S-captured", "/w/app"
    hook("prompt", prompt_payload("Give me a tour of the ingestion pipeline", session=s, cwd=cwd))
    hook("tool", {**tool_payload("Bash", {"command": "ls src/loader"}, {"stdout": "reader.py writer.py"}, session=s),
                  "tool_use_id": "toolu_1"})
    hook("stop", {"session_id": s, "hook_event_name": "Stop", "stop_hook_active": False,
                  "last_assistant_message": "Let me look at the loader. It has a reader and a writer."})
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": s, "cwd": cwd, "timestamp": "2026-06-15T10:00:01.000Z",
         "message": {"role": "user", "content": "Give me a tour of the ingestion pipeline"}},
        {"type": "assistant", "uuid": "a1", "sessionId": s, "cwd": cwd, "timestamp": "2026-06-15T10:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Let me look at the loader."},
                                                      {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                                       "input": {"command": "ls src/loader"}}]}},
        {"type": "user", "uuid": "r1", "sessionId": s, "cwd": cwd, "timestamp": "2026-06-15T10:00:03.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                  "content": "reader.py writer.py"}]}},
        # a turn from before the hooks were installed: the hooks never saw it
        {"type": "user", "uuid": "u0", "sessionId": s, "cwd": cwd, "timestamp": "2026-06-15T09:00:00.000Z",
         "message": {"role": "user", "content": "Which queue library do we use for retries?"}},
    ]
    transcript = write(tmp_path / "projects" / "-w-app" / f"{s}.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    before = {e["id"] for e in events(home)}
    report = json.loads(subprocess.run([MEMSEARCH, "import", "transcripts", str(transcript), "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    assert report["events_imported"] == 1 and report["events_skipped"] == 3
    added = [e for e in events(home) if e["id"] not in before]
    assert [e["content"] for e in added] == ["Which queue library do we use for retries?"]
    contents = [e["content"] for e in events(home)]
    assert contents.count("Give me a tour of the ingestion pipeline") == 1


@pytest.mark.parametrize("tag", ["system-reminder", "memory-context"])
def test_a_reply_that_mentions_an_injected_tag_is_kept_whole(tag):
    from indexer.transcripts import strip_injected

    reply = f"Hooks wrap output in a <{tag}> block.\nThe rest of the reply explains the retry policy."
    assert strip_injected(reply) == reply
    inline = f"Use `<{tag}>` … `</{tag}>` around it; then the retry policy applies."
    assert strip_injected(inline) == inline
    injected = f"<{tag}>\nretrieved memory\n</{tag}>\nNow fix reader.py"
    assert strip_injected(injected) == "Now fix reader.py"
