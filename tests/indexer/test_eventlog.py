"""indexer.eventlog: a torn last line in the event log (a writer killed mid-line) loses no whole event: the next append starts a fresh line, the indexer recovers an event glued to a torn line and leaves a line being written for the next run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from conftest import write
from indexer.base.settings import resolve_settings
from indexer.eventlog import Event, append, event_path
from indexer.pipeline import index
from indexer.store import sqlite as store
from search_engine.search import search


def _events(settings, query: str) -> list[str]:
    return [h.event_id for h in search(settings, query, mode="bm25", k=20, embedder=None).hits]


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


@hsettings(max_examples=40, deadline=None)
@given(steps=st.lists(st.tuples(st.booleans(), st.floats(0.05, 0.95), st.booleans()), min_size=1, max_size=8))
def test_any_mix_of_torn_lines_and_appends_loses_no_whole_event(steps):
    """Each step appends an event whole, or tears one (a crash part way through its line); indexing runs between
    some steps. Every event appended whole is indexed, whatever tore before or after it. Fresh root per example."""
    import tempfile

    from indexer.eventlog import encode

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp) / "memory"
        root.mkdir()
        mp.setenv("MEMSEARCH_HOME", str(root))
        settings = resolve_settings(root, model="none")
        whole = []
        for i, (torn, cut, index_now) in enumerate(steps):
            event = Event("prompt", f"event number {i} about quokkas", id=f"e{i}", ts="2026-11-20T10:00:00")
            if torn:
                line = encode(event)
                path = event_path(root, event.ts)
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "ab") as f:
                    f.write(line[: max(1, int(len(line) * cut))])
            else:
                append(root, event)
                whole.append(event.id)
            if index_now:
                index(settings, embedder=None)
        index(settings, embedder=None)
        conn = store.connect(settings.db_path)
        try:
            found = {r[0] for r in conn.execute("SELECT event_id FROM chunks")}
        finally:
            conn.close()
        assert set(whole) <= found
