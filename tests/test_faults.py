"""Faults a user meets on a real machine, each reproduced here against the real store: a torn event log, a
symlinked events folder, bad settings, open file modes, a corrupt index, a full or read-only disk, a deleted WAL,
hostile hook input. Each test names the fault it pins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MEMSEARCH, write
from indexer import store
from indexer.eventlog import Event, append, event_path
from indexer.pipeline import index, ingest
from indexer.settings import resolve_settings
from search_engine.search import search

HOOK = str(Path(sys.executable).with_name("memsearch-hook"))


def _events(settings, query: str) -> list[str]:
    return [h.event_id for h in search(settings, query, mode="bm25", k=20, embedder=None).hits]


# -- a torn last line in the event log --------------------------------------------------------------------------

def test_an_append_after_a_torn_line_starts_on_a_fresh_line(home):
    settings = resolve_settings(home, model="none")
    path = append(home, Event("prompt", "the first whole event about kestrels", id="e1"))
    with open(path, "ab") as f:  # a crash (or a full disk) in the middle of the next write
        f.write(b'{"id":"torn","ts":"2026-11-20T10:00:00","type":"prompt","content":"half of an ev')
    append(home, Event("prompt", "the event after the tear about ospreys", id="e2"))
    lines = path.read_bytes().splitlines()
    assert json.loads(lines[-1])["id"] == "e2"
    index(settings, embedder=None)
    assert _events(settings, "ospreys") == ["e2"] and _events(settings, "kestrels") == ["e1"]


def test_the_indexer_recovers_an_event_glued_to_a_torn_line(home):
    """A log torn before appends started on a fresh line: the good event after the tear is still indexed."""
    settings = resolve_settings(home, model="none")
    good = json.dumps({"id": "e2", "ts": "2026-11-20T10:01:00", "type": "prompt",
                       "content": 'a reply quoting {"id":"x"} about ospreys'}, separators=(",", ":"))
    write(event_path(home, "2026-11-20"), b'{"id":"e1","ts":"2026-11-20T10:00:00","type":"prompt","content":"half'
          + good.encode() + b"\n")
    report = index(settings, embedder=None)
    assert _events(settings, "ospreys") == ["e2"]
    assert [s.reason for s in report.skipped if "invalid JSON" in s.reason]  # the torn part is reported


def test_a_torn_line_being_written_is_left_for_the_next_run(home):
    settings = resolve_settings(home, model="none")
    path = append(home, Event("prompt", "the first whole event about kestrels", id="e1"))
    with open(path, "ab") as f:
        f.write(b'{"id":"e2","ts":"2026-11-20T10:00:00","type":"prompt","content":"ospreys')
    index(settings, embedder=None)
    assert _events(settings, "kestrels") == ["e1"] and _events(settings, "ospreys") == []
    with open(path, "ab") as f:  # the writer finishes its line
        f.write(b'"}\n')
    index(settings, embedder=None)
    assert _events(settings, "ospreys") == ["e2"]


# -- strip_injected on a reply that mentions a tag ----------------------------------------------------------------

@pytest.mark.parametrize("tag", ["system-reminder", "memory-context"])
def test_a_reply_that_mentions_an_injected_tag_is_kept_whole(tag):
    from indexer.transcripts import strip_injected

    reply = f"Hooks wrap output in a <{tag}> block.\nThe rest of the reply explains the retry policy."
    assert strip_injected(reply) == reply
    inline = f"Use `<{tag}>` … `</{tag}>` around it; then the retry policy applies."
    assert strip_injected(inline) == inline
    injected = f"<{tag}>\nretrieved memory\n</{tag}>\nNow fix reader.py"
    assert strip_injected(injected) == "Now fix reader.py"


# -- the hook's own ingest and a symlinked events folder or log ------------------------------------------------------

def _hook(event: str, payload: dict | bytes, capsys=None, env: dict | None = None) -> subprocess.CompletedProcess:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run([HOOK, event], input=data, capture_output=True, timeout=60,
                          env={**os.environ, "MEMSEARCH_NO_SERVER": "1", "MEMSEARCH_MODEL": "none", **(env or {})})


def _indexed_text(settings) -> str:
    if not settings.db_path.exists():
        return ""
    conn = store.connect(settings.db_path)
    try:
        return "\n".join(r[0] for r in conn.execute("SELECT text FROM chunks"))
    finally:
        conn.close()


@pytest.mark.parametrize("linked", ["folder", "file"])
def test_the_hooks_ingest_does_not_follow_an_events_symlink_out_of_the_root(home, tmp_path, linked):
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside / "planted.jsonl", json.dumps({"id": "p1", "ts": "2026-11-20T10:00:00", "type": "prompt",
                                                 "content": "planted swordfish secret"}) + "\n")
    today = event_path(home).name
    if linked == "folder":
        (home / "events").symlink_to(outside, target_is_directory=True)
        os.link(outside / "planted.jsonl", outside / today)  # today's log is the planted one
    else:
        (home / "events").mkdir()
        (home / "events" / today).symlink_to(outside / "planted.jsonl")
    settings = resolve_settings(home, model="none")
    assert ingest(settings, [event_path(home)]) is True
    result = _hook("prompt", {"prompt": "where did the swordfish config go", "session_id": "s1", "cwd": str(home)})
    assert result.returncode == 0 and result.stderr == b""
    assert "swordfish" not in _indexed_text(settings)
    index(settings, embedder=None)  # and `memsearch index` agrees
    assert "swordfish" not in _indexed_text(settings)
