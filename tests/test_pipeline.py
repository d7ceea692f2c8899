"""Incremental indexing against the real SQLite + FTS5 + sqlite-vec, with a fake embedder for speed."""

import os
import time

import orjson

from conftest import write
from fake_embedder import FakeEmbedder
from indexer.base.settings import resolve_settings
from indexer.pipeline import index
from indexer.store import sqlite as store
from search_engine.search import search


def _ids(settings, query, **kw):
    return [h.path for h in search(settings, query, mode="bm25", **kw).hits]


def _event(i, content, **kw):
    return orjson.dumps({"id": f"e{i}", "ts": "2026-11-20T10:00:00", "session_id": "s1", "type": "prompt",
                         "content": content, **kw}).decode() + "\n"


def test_first_and_second_run(sample_home, settings, fake):
    first = index(settings, embedder=fake)
    assert first.files_changed == 14 and first.chunks_added > 20
    assert first.chunks_embedded == fake.embedded > 0
    assert first.chunks_pending == 0 and first.skipped == ()
    fake.embedded = 0
    second = index(settings, embedder=fake)
    assert second.files_unchanged == 14 and second.files_changed == 0
    assert second.chunks_added == 0 and second.chunks_embedded == 0 and fake.embedded == 0


def test_unchanged_files_are_not_read(sample_home, settings, fake, monkeypatch):
    index(settings, embedder=fake)
    from pathlib import Path

    def boom(self):
        raise AssertionError(f"read {self}")

    monkeypatch.setattr(Path, "read_bytes", boom)
    report = index(settings, embedder=fake)
    assert report.files_unchanged == report.files_scanned


def test_touched_but_identical_file_embeds_nothing(sample_home, settings, fake):
    index(settings, embedder=fake)
    note = sample_home / "MEMORY.md"
    os.utime(note, (time.time() + 5, time.time() + 5))
    fake.embedded = 0
    report = index(settings, embedder=fake)
    assert report.files_unchanged == 14 and fake.embedded == 0


def test_editing_one_section_embeds_only_its_new_chunks(sample_home, settings, fake):
    index(settings, embedder=fake)
    note = sample_home / "daily" / "2026-11-18.md"
    note.write_text(note.read_text().replace("one run in twenty", "one run in fifty"))
    fake.embedded = 0
    report = index(settings, embedder=fake)
    assert report.files_changed == 1
    assert report.chunks_embedded == fake.embedded == 1
    assert _ids(settings, "fifty") == ["daily/2026-11-18.md"]
    assert _ids(settings, "twenty") == []


def test_deleted_file_disappears_from_results(sample_home, settings, fake):
    index(settings, embedder=fake)
    assert _ids(settings, "jitter") == ["areas/patterns/retries/summary.md"]
    (sample_home / "areas" / "patterns" / "retries" / "summary.md").unlink()
    report = index(settings, embedder=fake)
    assert report.files_deleted == 1 and report.chunks_removed > 0
    assert _ids(settings, "jitter") == []
    assert search(settings, "idempotent jitter", mode="vector", embedder=fake).hits[0].path != (
        "areas/patterns/retries/summary.md")
    conn = store.connect(settings.db_path)
    orphans = conn.execute("SELECT count(*) FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)").fetchone()
    assert orphans[0] == 0


def test_model_change_re_embeds_everything(sample_home, settings):
    first = FakeEmbedder(dim=32, model_id="model-a")
    index(settings, embedder=first)
    second = FakeEmbedder(dim=48, model_id="model-b")
    report = index(settings, embedder=second)
    assert report.chunks_embedded == second.embedded == first.embedded
    assert "model changed from model-a to model-b" in report.model_note
    conn = store.connect(settings.db_path)
    assert conn.execute("SELECT DISTINCT model FROM embeddings").fetchall() == [("model-b",)]
    assert store.get_meta(conn, "vector_dim") == "48"


def test_search_with_a_model_the_index_was_not_built_with_falls_back(sample_home, settings):
    index(settings, embedder=FakeEmbedder(dim=32, model_id="model-a"))
    result = search(settings, "retries", embedder=FakeEmbedder(dim=32, model_id="model-b"))
    assert result.mode_used == "bm25" and "not of the current model" in result.fallback_reason


def test_chunker_settings_change_rebuilds(sample_home, fake):
    index(resolve_settings(sample_home), embedder=fake)
    report = index(resolve_settings(sample_home, chunk_chars=300), embedder=fake)
    assert report.full and report.files_changed == 14
    assert "chunker settings changed" in report.model_note


def test_events_are_read_incrementally_by_offset(home, settings, fake):
    log = write(home / "events" / "2026-11-20.jsonl", _event(1, "alpha first event"))
    assert index(settings, embedder=fake).chunks_added == 1
    with log.open("a") as f:
        f.write(_event(2, "bravo second event"))
        f.write('{"id": "e3", "content": "charlie partial li')  # a line still being written
    report = index(settings, embedder=fake)
    assert report.chunks_added == 1 and report.chunks_removed == 0
    assert _ids(settings, "charlie") == []
    with log.open("a") as f:
        f.write('ne", "type": "tool"}\n')
    report = index(settings, embedder=fake)
    assert report.chunks_added == 1 and report.chunks_removed == 0
    assert len(search(settings, "event OR charlie", mode="bm25", raw=True).hits) == 3
    conn = store.connect(settings.db_path)
    consumed = conn.execute("SELECT consumed FROM files").fetchone()[0]
    assert consumed == log.stat().st_size


def test_rewritten_event_log_is_reread(home, settings, fake):
    log = write(home / "events" / "2026-11-20.jsonl", _event(1, "alpha") + _event(2, "bravo"))
    index(settings, embedder=fake)
    log.write_text(_event(9, "zulu replaced everything") + _event(10, "yankee too") + _event(11, "xray"))
    report = index(settings, embedder=fake)
    assert report.chunks_removed == 2 and report.chunks_added == 3
    assert _ids(settings, "alpha") == [] and _ids(settings, "zulu")


def test_malformed_sources_are_skipped_and_nothing_is_lost(sample_home, settings, fake):
    index(settings, embedder=fake)
    before = _ids(settings, "Celery")
    assert before
    write(sample_home / "decisions" / "use-celery-for-exports.json", '{"title": "broken", ')
    write(sample_home / "bad-utf8.md", b"# Title\n\xff\xfe not utf8 \x80\n")
    write(sample_home / "binary.md", b"\x00\x01\x02binary\x00")
    write(sample_home / "huge-line.md", "word " * 5_000_000)
    write(sample_home / "deep.json", "[" * 200 + "]" * 200)
    write(sample_home / "events" / "2026-11-21.jsonl",
          _event(1, "good one") + "{not json}\n" + '"a string"\n' + _event(2, "") +
          '{"id": "x", "content": "\xff"}\n' + _event(3, "good two"))
    report = index(settings, embedder=fake)
    reasons = {s.path: s.reason for s in report.skipped}
    assert "invalid JSON" in reasons["decisions/use-celery-for-exports.json"]
    assert "UTF-8" in reasons["bad-utf8.md"]
    assert "binary" in reasons["binary.md"]
    assert "too large" in reasons["huge-line.md"]
    assert "nested deeper" in reasons["deep.json"]
    event_problems = [s.reason for s in report.skipped if s.path == "events/2026-11-21.jsonl"]
    assert len(event_problems) == 3, event_problems
    assert _ids(settings, "Celery") == before, "a broken file keeps what it had in the index"
    assert set(_ids(settings, "good")) == {"events/2026-11-21.jsonl"}
    assert len(search(settings, "good", mode="bm25").hits) == 2


def test_invalid_utf8_in_an_event_line_skips_only_that_line(home, settings, fake):
    write(home / "events" / "2026-11-22.jsonl",
          _event(1, "first fine").encode() + b'{"id": "b", "content": "bad \xff byte"}\n' + _event(2, "second fine").encode())
    report = index(settings, embedder=fake)
    assert report.chunks_added == 2
    assert "UTF-8" in report.skipped[0].reason


def test_privacy_filter_applies_before_storage(home, settings, fake):
    write(home / "notes.md", "# Access\nThe vault code is <private>TOPSECRET-991</private>.\nkey AKIAIOSFODNN7EXAMPLE\n")
    write(home / "events" / "2026-11-20.jsonl", _event(1, "my token is ghp_" + "Ab1" * 12 + " ok"))
    index(settings, embedder=fake)
    raw = b"".join(p.read_bytes() for p in settings.db_path.parent.glob("index.db*"))
    for secret in (b"TOPSECRET-991", b"AKIAIOSFODNN7EXAMPLE", b"Ab1Ab1Ab1"):
        assert secret not in raw


def test_facts_and_records_statuses(sample_home, settings, fake):
    index(settings, embedder=fake)
    assert _ids(settings, "synchronously") == []
    assert _ids(settings, "synchronously", filters=_all()) == ["areas/projects/payments-api/facts.json"]
    assert _ids(settings, "FX") == []
    assert _ids(settings, "FX rates", filters=_all()) == ["decisions/use-floats-for-fx.json"]


def _all():
    from search_engine.filters import Filters

    return Filters(all_status=True)


def test_extra_sources_and_path_scoped_runs(home, tmp_path, fake):
    project = tmp_path / "project"
    write(project / "CLAUDE.md", "# Project rules\nAlways run the linter before pushing.\n")
    write(home / "MEMORY.md", "# Memory\nnothing yet\n")
    write(home / "memsearch.toml", f'extra_sources = ["{project / "CLAUDE.md"}"]\n')
    settings = resolve_settings(home)
    index(settings, embedder=fake)
    assert _ids(settings, "linter") == [str(project / "CLAUDE.md")]
    write(home / "daily" / "2026-11-21.md", "# Day\nlinter upgraded\n")
    report = index(settings, [home / "daily"], embedder=fake)
    assert report.files_scanned == 1 and report.files_deleted == 0
    assert len(_ids(settings, "linter")) == 2


def test_bm25_only_index_leaves_chunks_pending_then_embeds_them(sample_home, settings, fake):
    report = index(settings, embedder=None)
    assert report.chunks_embedded == 0
    result = search(settings, "retries", embedder=fake)
    assert result.mode_used == "bm25" and "no vectors" in result.fallback_reason
    report = index(settings, embedder=fake)
    assert report.chunks_embedded > 0 and report.chunks_pending == 0
    assert search(settings, "retries", embedder=fake).mode_used == "hybrid"


def test_deleting_the_index_reproduces_the_same_results(sample_home, settings, fake):
    index(settings, embedder=fake)
    queries = ["database locked", "refund webhook", "東京", "retry charge twice"]
    before = [[h.id for h in search(settings, q, embedder=fake).hits] for q in queries]
    for p in settings.db_path.parent.glob("index.db*"):
        p.unlink()
    index(settings, embedder=fake)
    after = [[h.id for h in search(settings, q, embedder=fake).hits] for q in queries]
    assert before == after


def test_a_moved_memory_root_is_reindexed_at_its_new_place(sample_home, settings, fake, monkeypatch):
    first = index(settings, embedder=fake)
    moved = sample_home.with_name("moved-memory")
    sample_home.rename(moved)
    monkeypatch.setenv("MEMSEARCH_HOME", str(moved))
    again = resolve_settings(moved)
    report = index(again, embedder=fake)
    assert report.files_deleted == first.files_scanned and report.files_changed == first.files_scanned
    assert report.chunks_embedded == 0  # same contents: every vector is reused
    conn = store.connect(again.db_path)
    try:
        paths = [r[0] for r in conn.execute("SELECT path FROM files")]
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        conn.close()
    assert paths and all(p.startswith(str(moved) + "/") for p in paths)
    assert chunks == first.chunks_added
    write(moved / "daily" / "2026-11-21.md", "# Today\n\nThe pelicans moved with the notes.\n")
    index(again, embedder=fake)
    hits = search(again, "pelicans", mode="bm25", embedder=None).hits
    assert [h.path for h in hits] == ["daily/2026-11-21.md"]
