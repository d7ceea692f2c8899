"""Incremental indexing against the real SQLite + FTS5 + sqlite-vec, with a fake embedder for speed."""

import os
import tempfile
import time
from pathlib import Path

import orjson
import pytest
import xxhash
from hypothesis import given, settings as hsettings, strategies as st

from conftest import write
from fake_embedder import FakeEmbedder
from indexer.base.chunktext import REPLY_CHARS, content_hash, embed_input, shorten
from indexer.base.errors import UsageError
from indexer.base.settings import resolve_settings
from indexer.base.types import to_json
from indexer.chunker import CHUNKER_VERSION
from indexer.maintain import check_index
from indexer.pipeline import embed_pending, index, ingest, pending_count, source_roots
from indexer.rebuild import rebuild
from indexer.status import status
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


def test_a_name_that_is_not_utf8_is_reported_in_one_line_and_skipped(home, settings, fake):
    """Such a name reaches Python with surrogate escapes, which SQLite and JSON refuse: the file is skipped (once
    per run, by every kind of scan), the other files are indexed, and the report can be printed and serialised."""
    write(home / "daily" / "2026-11-20.md", "# fine\nquokka\n")
    bad_file = os.fsdecode(bytes(home / "daily") + b"/bad-\xff\xfe-name.md")
    bad_dir = os.fsdecode(bytes(home) + b"/dir-\xff")
    write(Path(bad_file), "# x\nzebra\n")
    write(Path(bad_dir) / "n.md", "# y\nzebra\n")
    expected = {"daily/bad-\\xff\\xfe-name.md": "file name is not valid UTF-8",
                "dir-\\xff": "folder name is not valid UTF-8"}
    for run in (lambda: index(settings, embedder=fake), lambda: index(settings, full=True, embedder=fake),
                lambda: rebuild(settings, embedder=fake)):
        report = run()
        assert {s.path: s.reason for s in report.skipped} == expected
        assert "\\xff" in to_json(report)
    # the warm server's idle rescan and a hook's ingest of that very file
    assert ingest(settings, source_roots(settings), vanished=True)
    assert ingest(settings, [Path(bad_file)])
    assert _ids(settings, "quokka") == ["daily/2026-11-20.md"]
    assert _ids(settings, "zebra") == []


def test_invalid_utf8_in_an_event_line_skips_only_that_line(home, settings, fake):
    write(home / "events" / "2026-11-22.jsonl",
          _event(1, "first fine").encode() + b'{"id": "b", "content": "bad \xff byte"}\n' + _event(2, "second fine").encode())
    report = index(settings, embedder=fake)
    assert report.chunks_added == 2
    assert "UTF-8" in report.skipped[0].reason


def test_privacy_filter_applies_before_storage(home, settings, fake):
    write(home / "notes.md", "# Access\nThe vault code is <private>TOPSECRET-991</private>.\nkey AKIAQ3EGRU7XKZ4TW5NB\n")
    write(home / "events" / "2026-11-20.jsonl", _event(1, "my token is ghp_" + "Ab1" * 12 + " ok"))
    index(settings, embedder=fake)
    raw = b"".join(p.read_bytes() for p in settings.db_path.parent.glob("index.db*"))
    for secret in (b"TOPSECRET-991", b"AKIAQ3EGRU7XKZ4TW5NB", b"Ab1Ab1Ab1"):
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


def test_a_path_outside_the_memory_root_is_refused_not_indexed_then_dropped(home, tmp_path, fake):
    """A whole run indexes only the root and the extra sources, so a note indexed from elsewhere would leave at
    the next one: such a path (or a link leading there) is refused, and one under an extra source is indexed."""
    write(home / "MEMORY.md", "# Memory\nthe numbat lives here\n")
    outside = write(tmp_path / "elsewhere" / "platypus.md", "# Platypus\nthe platypus lays eggs\n")
    (home / "link.md").symlink_to(outside)
    settings = resolve_settings(home)
    for path, said in ((outside, f"{outside} is outside the memory root {home}: "),
                       (home / "link.md", f"{home / 'link.md'} is a link to {outside}, outside the memory root")):
        with pytest.raises(UsageError) as refused:
            index(settings, [home / "MEMORY.md", path], embedder=fake)
        assert str(refused.value).startswith(said) and "extra_sources" in str(refused.value)
    assert not settings.db_path.exists() and _ids(settings, "platypus") == []
    write(home / "memsearch.toml", f'extra_sources = ["{outside.parent}"]\n')
    settings = resolve_settings(home)
    assert index(settings, [outside], embedder=fake).files_changed == 1
    assert index(settings, embedder=fake).files_deleted == 0 and _ids(settings, "platypus") == [str(outside)]


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



def _files_and_chunks(settings):
    conn = store.connect(settings.db_path)
    try:
        files = dict(conn.execute("SELECT f.path, count(c.id) FROM files f LEFT JOIN chunks c ON c.file = f.path"
                                  " GROUP BY f.path").fetchall())
        return files, conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        conn.close()


def _moved(sample_home, settings, fake, monkeypatch, how):
    first = index(settings, embedder=fake)
    moved = sample_home.with_name("moved-memory")
    how(sample_home, moved)
    monkeypatch.setenv("MEMSEARCH_HOME", str(moved))
    return first, moved, resolve_settings(moved)


def test_a_root_moved_then_rescanned_by_the_server_loses_nothing_and_shows_nothing_twice(
        sample_home, settings, fake, monkeypatch):
    """The warm server's rescan (every source, scoped) runs before any whole scan: the old place's sources go at
    once, and the whole scan after it still finds every chunk."""
    first, moved, again = _moved(sample_home, settings, fake, monkeypatch, Path.rename)
    assert ingest(again, source_roots(again), vanished=True)
    files, chunks = _files_and_chunks(again)
    assert chunks == first.chunks_added and all(p.startswith(str(moved) + "/") for p in files)
    index(again, embedder=fake)
    assert _files_and_chunks(again) == (files, chunks)
    assert search(again, "pelicans OR export", mode="bm25", embedder=None).hits


def test_a_root_copied_elsewhere_keeps_its_chunks_through_a_hook_ingest_and_a_whole_scan(
        sample_home, settings, fake, monkeypatch):
    """Another copy's sources still exist, so a scoped scan leaves them; the copy being read takes over the chunks
    it shares with them (same path under the root, place and content) rather than being recorded as read with
    none, and the whole scan that then drops the old copy's sources leaves every chunk in place."""
    import shutil

    first, moved, again = _moved(sample_home, settings, fake, monkeypatch,
                                 lambda a, b: shutil.copytree(a, b, ignore=shutil.ignore_patterns(".memsearch")))
    shutil.copytree(sample_home / ".memsearch", moved / ".memsearch")
    assert ingest(again, source_roots(again))
    files, chunks = _files_and_chunks(again)
    assert chunks >= first.chunks_added
    assert all(n == 0 for p, n in files.items() if p.startswith(str(sample_home) + "/"))
    index(again, embedder=fake)
    files, chunks = _files_and_chunks(again)
    assert chunks == first.chunks_added and all(p.startswith(str(moved) + "/") for p in files)
    assert search(again, "pelicans OR export", mode="bm25", embedder=None).hits


# How events are indexed for retrieval: the previous turn as a low-weight FTS column, what an event is embedded
# as, and the migration that brings a version-1 index there. Real SQLite + FTS5, fake embedder.


def _turn(i, content, session="s1", ts="2023-05-07T13:56:00", **kw):
    return orjson.dumps({"id": f"e{i}", "ts": ts, "session_id": session, "type": "prompt", "content": content,
                         **kw}).decode() + "\n"


def _context_of(settings) -> dict[str, list[str]]:
    """event id -> the event ids whose text its context column holds (by matching each event's unique word)."""
    conn = store.connect(settings.db_path)
    try:
        rows = conn.execute("SELECT event_id, text FROM chunks WHERE kind = 'event'").fetchall()
        out = {}
        for event_id, text in rows:
            word = text.split()[0]
            hits = conn.execute("SELECT c.event_id FROM chunks_fts f JOIN chunks c ON c.id = f.rowid"
                                " WHERE chunks_fts MATCH ?", (f'context : "{word}"',)).fetchall()
            out[event_id] = sorted(h[0] for h in hits)
        return out
    finally:
        conn.close()


def _previous(settings) -> dict[str, str | None]:
    """event id -> the event whose text is its context (None when the context is empty)."""
    holders = _context_of(settings)
    out = {e: None for e in holders}
    for source, readers in holders.items():
        for reader in readers:
            out[reader] = source
    return out


class Recording(FakeEmbedder):
    def __init__(self):
        super().__init__(dim=32)
        self.texts: list[str] = []

    def embed_passages(self, texts):
        self.texts += texts
        return super().embed_passages(texts)


# -- the previous turn as context -----------------------------------------------------------------------------

def test_previous_turn_of_the_same_session_is_the_context_within_one_run(home, settings, fake):
    write(home / "events" / "2023-05-07.jsonl",
          _turn(1, "alpha do you go hiking") + _turn(2, "bravo yes every sunday")
          + _turn(3, "xray other session", session="s2") + _turn(4, "charlie where to"))
    write(home / "notes.md", "# Trails\ndelta hiking trails near the lake\n")
    index(settings, embedder=fake)
    assert _previous(settings) == {"e1": None, "e2": "e1", "e3": None, "e4": "e2"}
    conn = store.connect(settings.db_path)
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'context : delta'").fetchone()[0] == 0


def test_a_reply_is_found_by_the_words_of_the_question_it_answers(home, settings, fake):
    write(home / "events" / "2023-05-07.jsonl",
          _turn(1, "Do you still go hiking in the mountains?") + _turn(2, "Yes, every Sunday with my dog.")
          + _turn(3, "The weather was lovely today."))
    index(settings, embedder=fake)
    hits = search(settings, "hiking", mode="bm25").hits
    assert [h.event_id for h in hits] == ["e1", "e2"]  # the question first: its own words weigh more


def test_context_spans_incremental_runs_and_files(home, settings, fake):
    log = write(home / "events" / "2023-05-07.jsonl", _turn(1, "alpha first") + _turn(2, "bravo second"))
    index(settings, embedder=fake)
    with log.open("a") as f:
        f.write(_turn(3, "charlie third") + _turn(4, "yankee elsewhere", session="s2"))
    assert index(settings, embedder=fake).chunks_added == 2
    write(home / "events" / "2023-05-08.jsonl", _turn(5, "delta next day", ts="2023-05-08T09:00:00"))
    assert ingest(settings, [home / "events" / "2023-05-08.jsonl"])  # a hook's scoped run
    assert _previous(settings) == {"e1": None, "e2": "e1", "e3": "e2", "e4": None, "e5": "e3"}


def test_full_rebuild_and_rechunk_give_the_same_context(home, settings, fake):
    write(home / "events" / "2023-05-07.jsonl", _turn(1, "alpha first") + _turn(2, "bravo second"))
    write(home / "events" / "2023-05-08.jsonl", _turn(3, "charlie third", ts="2023-05-08T09:00:00"))
    index(settings, embedder=fake)
    expected = {"e1": None, "e2": "e1", "e3": "e2"}
    assert _previous(settings) == expected
    index(settings, embedder=fake, full=True)  # re-chunks every file in place, in order
    assert _previous(settings) == expected
    rebuild(settings, embedder=fake)
    assert _previous(settings) == expected
    assert check_index(store.connect(settings.db_path)).ok


# -- what an event is embedded as -----------------------------------------------------------------------------

def test_events_are_embedded_with_speaker_and_date(home, settings):
    write(home / "events" / "2023-05-07.jsonl",
          _turn(1, "I went to a support group.", metadata={"speaker": "Caroline"})
          + _turn(2, "What should I fix first?", ts="2026-11-20T10:00:00")
          + orjson.dumps({"id": "e3", "ts": "2026-11-20T10:01:00", "session_id": "s1", "type": "tool",
                          "tool_name": "Bash", "content": "Bash: pytest -q"}).decode() + "\n")
    write(home / "notes.md", "# Trails\nhiking trails near the lake\n")
    model = Recording()
    index(settings, embedder=model)
    assert "Caroline on 7 May 2023: I went to a support group." in model.texts
    # then the turn each replies to: a prompt the other speaker's turn before it, a tool observation its request
    assert "user on 20 November 2026: What should I fix first?\n(in reply to: I went to a support group.)" in (
        model.texts)
    assert "tool on 20 November 2026: Bash: pytest -q\n(in reply to: What should I fix first?)" in model.texts
    assert "Trails\n# Trails\nhiking trails near the lake" in model.texts  # a note: title and text, as before
    conn = store.connect(settings.db_path)
    for title, text, speaker, ts, reply, h in conn.execute("SELECT title, text, speaker, ts, reply_to, hash FROM chunks"):
        assert h == xxhash.xxh3_128_hexdigest(embed_input(title, text, speaker, ts, reply).encode())


def test_note_and_fact_hashes_are_those_of_version_1(sample_home, settings, fake):
    """Changing what events are embedded as must not re-embed any note: their hash is the old formula's."""
    index(settings, embedder=fake)
    conn = store.connect(settings.db_path)
    rows = conn.execute("SELECT title, text, hash, speaker FROM chunks WHERE kind != 'event'").fetchall()
    assert len(rows) > 20
    for title, text, h, speaker in rows:
        old = f"{title}\n{text}" if title else text
        assert speaker is None and h == xxhash.xxh3_128_hexdigest(old.encode("utf-8", "surrogatepass"))
        assert content_hash(title, text) == h


def test_event_without_date_or_speaker_name():
    assert embed_input("response", "Done.", "assistant", None) == "assistant: Done."
    assert embed_input("response", "Done.", "assistant", "garbage") == "assistant: Done."
    assert embed_input("", "plain", None, "2023-05-07T00:00:00") == "plain"


# -- the migration from version 1 -----------------------------------------------------------------------------

def _v1_index(path):
    """A version-1 index as the previous release wrote it: two FTS columns, no speaker, old event hashes."""
    import apsw

    conn = apsw.Connection(str(path))
    store.load_sqlite_vec(conn)
    with conn:
        store.m001_initial(conn)
        conn.pragma("user_version", 1)
        conn.execute("INSERT INTO files(path, source, mtime_ns, size, indexed_at) VALUES ('f', 'events', 0, 0, 0)")
        conn.execute("INSERT INTO meta(key, value) VALUES ('chunker', '1:1200:200')")
        rows = [("n1", "note", "Trails", "lake trails for hiking", None, None),
                ("e2", "event", "prompt", "bravo reply second", "s1", "2023-05-07T10:00:00"),
                ("e1", "event", "prompt", "alpha question first", "s1", "2023-05-07T09:00:00"),
                ("e3", "event", "prompt", "charlie other session", "s2", "2023-05-07T09:30:00"),
                ("e4", "event", "prompt", "delta after alpha", "s1", "2023-05-07T11:00:00")]
        for i, (uid, kind, title, text, session, ts) in enumerate(rows, start=1):
            conn.execute("INSERT INTO chunks(id, uid, hash, file, path, seq, kind, title, text, event_id, ts,"
                         " session_id) VALUES (?, ?, ?, 'f', 'f', ?, ?, ?, ?, ?, ?, ?)",
                         (i, uid, content_hash(title, text), i, kind, title, text, uid, ts, session))
            conn.execute("INSERT INTO chunks_fts(rowid, title, body) VALUES (?, ?, ?)", (i, title, text))
    conn.close()


def test_migration_from_version_1_refills_fts_with_context(tmp_path):
    path = tmp_path / "index.db"
    _v1_index(path)
    conn = store.connect(path)
    assert conn.pragma("user_version") == len(store.MIGRATIONS) == 4
    columns = [r[1] for r in conn.execute("PRAGMA table_info(chunks_fts)")]
    assert columns == ["title", "body", "context"]
    assert "speaker" in [r[1] for r in conn.execute("PRAGMA table_info(chunks)")]

    def matching(expr):
        return sorted(r[0] for r in conn.execute(
            "SELECT c.uid FROM chunks_fts f JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ?", (expr,)))

    assert matching("body : bravo") == ["e2"] and matching("title : trails") == ["n1"]
    # by time within the session, not by id: e1 (09:00) comes before e2 (10:00) though inserted after it
    assert matching("context : alpha") == ["e2"] and matching("context : bravo") == ["e4"]
    assert matching("context : charlie") == [] and matching("context : lake") == []
    assert matching("title : may") == ["e1", "e2", "e3", "e4"]  # events carry their date, spelled out
    assert check_index(conn).ok
    conn.execute("DELETE FROM chunks WHERE uid = 'e2'")  # the delete trigger follows the new table
    assert matching("body : bravo") == [] and matching("bravo") == ["e4"] and check_index(conn).ok


def test_a_version_1_index_is_rechunked_by_the_next_full_scan_not_by_a_hook(home, settings):
    log = write(home / "events" / "2023-05-07.jsonl",
                _turn(1, "alpha first", metadata={"speaker": "Mel"}) + _turn(2, "bravo second"))
    index(settings, embedder=None)
    conn = store.connect(settings.db_path)
    with conn:  # as the previous release left them: old chunker version, no speaker, hashes of title and text
        store.set_meta(conn, "chunker", "1:1200:200")
        for cid, title, text in conn.execute("SELECT id, title, text FROM chunks").fetchall():
            conn.execute("UPDATE chunks SET speaker = NULL, hash = ? WHERE id = ?", (content_hash(title, text), cid))
    embed_pending(conn, FakeEmbedder(dim=32))  # their vectors, of "prompt · Mel\nalpha first" and so on
    with log.open("a") as f:
        f.write(_turn(3, "charlie third"))
    assert ingest(settings, [log])
    assert store.get_meta(conn, "chunker") == "1:1200:200"  # a scoped run leaves the re-chunk to a full scan
    model = Recording()
    report = index(settings, embedder=model)
    assert report.full and "chunker settings changed" in report.model_note
    assert store.get_meta(conn, "chunker").startswith(CHUNKER_VERSION + ":")
    assert dict(conn.execute("SELECT event_id, speaker FROM chunks")) == {"e1": "Mel", "e2": "user", "e3": "user"}
    assert sorted(model.texts) == ["Mel on 7 May 2023: alpha first",
                                   "user on 7 May 2023: bravo second\n(in reply to: alpha first)",
                                   "user on 7 May 2023: charlie third\n(in reply to: alpha first)"]
    assert conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 3  # the old vectors were dropped
    assert check_index(conn).ok and check_index(conn).orphan_embeddings == 0


# -- the turn an event replies to ---------------------------------------------------------------------------------

def _said(i, etype, content, session="s1", ts="2026-11-20T10:00:00", **kw):
    return orjson.dumps({"id": f"e{i}", "ts": ts, "session_id": session, "type": etype, "content": content,
                         **kw}).decode() + "\n"


def _replies(settings) -> dict[str, set[str]]:
    """event id -> the reply_to of its chunks."""
    conn = store.connect(settings.db_path)
    try:
        out: dict[str, set[str]] = {}
        for event_id, reply in conn.execute("SELECT event_id, reply_to FROM chunks WHERE kind = 'event'"):
            out.setdefault(event_id, set()).add(reply)
        return out
    finally:
        conn.close()


CONVERSATION = (
    _said(1, "prompt", "Why does the login test fail?")
    + _said(2, "tool", "Bash: pytest tests/test_login.py", tool_name="Bash")
    + _said(3, "response", "The token expired: " + "the clock is mocked one hour ahead. " * 60)
    + _said(4, "prompt", "Fix it.")
    + _said(5, "prompt", "And add a test.")
    + _said(6, "response", "Yes.")
    + _said(7, "prompt", "Other session opener.", session="s2")
    + _said(8, "response", "Yes.", session="s2")
)


def test_each_event_is_embedded_with_the_turn_it_replies_to(home, settings):
    write(home / "events" / "2026-11-20.jsonl", CONVERSATION)
    write(home / "notes.md", "# Tokens\nTokens expire after an hour.\n")
    model = Recording()
    index(settings, embedder=model)
    long_reply = "The token expired: the clock is mocked one hour ahead. The clock is mocked"  # its first words
    assert _replies(settings) == {
        "e1": {""},  # a session's first turn replies to nothing
        "e2": {"Why does the login test fail?"},  # a tool observation: the request it carries out
        "e3": {"Why does the login test fail?"},  # a response: its prompt (every chunk of a long one)
        "e4": {_shorten_of(settings, "e3")},  # a prompt: the response before it, shortened
        "e5": {_shorten_of(settings, "e3")},  # a second prompt in a row answers the same turn
        "e6": {"And add a test."},
        "e7": {""}, "e8": {"Other session opener."},  # sessions never mix
    }
    assert _shorten_of(settings, "e3").startswith(long_reply[:50]) and _shorten_of(settings, "e3").endswith("…")
    assert len(_shorten_of(settings, "e3")) <= REPLY_CHARS + 1
    conn = store.connect(settings.db_path)
    assert conn.execute("SELECT count(*) FROM chunks WHERE event_id = 'e3'").fetchone()[0] > 1
    assert conn.execute("SELECT reply_to FROM chunks WHERE kind = 'note'").fetchall() == [("",)]
    # the same words in two contexts are two contents, each with its own vector; the hash is of what is embedded
    yes = dict(conn.execute("SELECT event_id, hash FROM chunks WHERE text = 'Yes.'"))
    assert yes["e6"] != yes["e8"] and yes["e6"] == content_hash("response", "Yes.", "assistant",
                                                                "2026-11-20T10:00:00", "And add a test.")
    assert "assistant on 20 November 2026: Yes.\n(in reply to: And add a test.)" in model.texts
    assert "assistant on 20 November 2026: Yes.\n(in reply to: Other session opener.)" in model.texts
    assert conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == conn.execute(
        "SELECT count(DISTINCT hash) FROM chunks").fetchone()[0]
    # BM25 never matches an event by the words of the turn it replies to (only the low-weight context column,
    # which holds the previous event's text, may)
    assert [h.event_id for h in search(settings, "opener", mode="bm25").hits] == ["e7", "e8"]
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH '{title body} : opener'"
                        ).fetchone()[0] == 1


def _shorten_of(settings, event_id: str) -> str:
    conn = store.connect(settings.db_path)
    try:
        text = conn.execute("SELECT text FROM chunks WHERE event_id = ? ORDER BY seq LIMIT 1", (event_id,)).fetchone()[0]
    finally:
        conn.close()
    return shorten(text)


def test_the_reply_is_the_same_across_incremental_runs_a_hook_ingest_and_a_rebuild(home, settings, fake):
    lines = CONVERSATION.splitlines(keepends=True)
    log = write(home / "events" / "2026-11-20.jsonl", "".join(lines[:3]))
    index(settings, embedder=fake)
    with log.open("a") as f:
        f.write("".join(lines[3:5]))
    assert ingest(settings, [log])  # a hook's scoped run: the turn before comes from the index
    with log.open("a") as f:
        f.write("".join(lines[5:]))
    index(settings, embedder=fake)
    incremental = _replies(settings)
    rebuild(settings, embedder=fake)
    assert _replies(settings) == incremental
    index(settings, embedder=fake, full=True)
    assert _replies(settings) == incremental and incremental["e6"] == {"And add a test."}
    assert index(settings, embedder=fake).chunks_embedded == 0


@hsettings(max_examples=25, deadline=None)
@given(turns=st.lists(st.tuples(st.sampled_from(["prompt", "response", "tool"]), st.sampled_from(["s1", "s2"]),
                                st.integers(1, 3)), min_size=1, max_size=12),
       cut=st.integers(0, 12))
def test_replies_read_in_two_runs_are_those_of_one_pass(turns, cut):
    """Property: however a conversation (two sessions interleaved, long events in several chunks, tool calls) is
    split between two index runs, each event replies to what one full pass gives it."""
    with tempfile.TemporaryDirectory() as tmp:  # a fresh memory root for every example
        home = Path(tmp) / "memory"
        settings = resolve_settings(home, model="none", chunk_chars=200, chunk_overlap=0)
        lines = [_said(i, etype, f"w{i} " + f"t{i} filler words here. " * (9 * size - 8), session=session,
                       ts=f"2026-11-20T10:{i:02d}:00")
                 for i, (etype, session, size) in enumerate(turns)]
        log = write(home / "events" / "2026-11-20.jsonl", "".join(lines[:cut]))
        index(settings, embedder=None)
        with log.open("a") as f:
            f.write("".join(lines[cut:]))
        index(settings, embedder=None)
        incremental = _replies(settings)
        index(settings, embedder=None, full=True)
        assert _replies(settings) == incremental
        assert all(len(r) == 1 for r in incremental.values())  # every chunk of an event: the same reply


def test_no_unredacted_text_reaches_a_reply(home, settings, fake):
    """The reply is taken from events the privacy filter already redacted (in this run, or stored by an earlier
    one): a private span in a prompt is a marker in the reply of its response too."""
    log = write(home / "events" / "2026-11-20.jsonl",
                _said(1, "prompt", "My badge pin is <private>4417-alpha</private>, where do I use it?"))
    index(settings, embedder=fake)
    with log.open("a") as f:
        f.write(_said(2, "response", "At the side door."))  # the prompt comes from the index this time
    write(home / "events" / "2026-11-21.jsonl",
          _said(3, "prompt", "Secret <private>zebra-99</private> here.", session="s3")
          + _said(4, "response", "Noted.", session="s3"))  # the prompt comes from the same run
    model = Recording()
    index(settings, embedder=model)
    replies = _replies(settings)
    assert replies["e2"] == {"My badge pin is [REDACTED:private], where do I use it?"}
    assert replies["e4"] == {"Secret [REDACTED:private] here."}
    conn = store.connect(settings.db_path)
    stored = " ".join(r[0] for r in conn.execute("SELECT reply_to FROM chunks"))
    assert "4417" not in stored and "zebra" not in stored
    assert not any("4417" in t or "zebra" in t for t in model.texts)


def _as_version_2(settings) -> None:
    """Turn the index back into what the previous release left: no reply_to column, user_version 2, chunker 2,
    every hash of the old formula (no reply) and the vectors of those texts."""
    conn = store.connect(settings.db_path)
    with conn:
        for cid, title, text, speaker, ts in conn.execute(
                "SELECT id, title, text, speaker, ts FROM chunks").fetchall():
            conn.execute("UPDATE chunks SET hash = ? WHERE id = ?", (content_hash(title, text, speaker, ts), cid))
        conn.execute("ALTER TABLE chunks DROP COLUMN reply_to")
        for (trigger,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%count%'"
                                       ).fetchall():  # and no kept counts (version 4)
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP TABLE counts")
        conn.execute("DELETE FROM vec_chunks")
        conn.execute("DELETE FROM embeddings")
        store.set_meta(conn, "chunker", "2:1200:200")
        conn.pragma("user_version", 2)
    conn.close()


def test_an_upgraded_index_embeds_every_event_once_more_and_keeps_everything(home, settings):
    write(home / "events" / "2026-11-20.jsonl", CONVERSATION)
    write(home / "notes.md", "# Tokens\nTokens expire after an hour.\n")
    index(settings, embedder=FakeEmbedder(dim=32))
    _as_version_2(settings)
    old = Recording()
    conn = store.connect(settings.db_path)  # opening migrates: the column is there, '' where the old hash holds
    assert conn.pragma("user_version") == len(store.MIGRATIONS) == 4
    assert {r[0] for r in conn.execute("SELECT reply_to FROM chunks")} == {""}
    embed_pending(conn, old)  # the vectors the previous release had made
    assert check_index(conn).ok and len(old.texts) == conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    uids_before = {r[0] for r in conn.execute("SELECT uid FROM chunks WHERE kind = 'note'")}
    assert status(settings)["rechunk_due"] is True
    assert ingest(settings, [home / "events" / "2026-11-20.jsonl"])  # a hook leaves it to the full run
    assert store.get_meta(conn, "chunker") == "2:1200:200"

    model = Recording()
    report = index(settings, embedder=model)
    assert report.full and "chunker settings changed" in report.model_note
    # each event that replies to a turn, once; a session's opener (nothing to reply to) and the note keep theirs
    replying = conn.execute("SELECT count(DISTINCT hash) FROM chunks WHERE kind = 'event' AND reply_to <> ''").get
    assert report.chunks_embedded == len(model.texts) == replying
    assert all("(in reply to: " in t for t in model.texts)
    assert not any(t.startswith("Tokens") for t in model.texts)
    assert {r[0] for r in conn.execute("SELECT uid FROM chunks WHERE kind = 'note'")} == uids_before
    assert conn.execute("SELECT count(DISTINCT event_id) FROM chunks").fetchone()[0] == 8  # nothing lost
    assert _replies(settings)["e6"] == {"And add a test."}
    assert check_index(conn).ok and check_index(conn).orphan_embeddings == 0
    assert status(settings)["rechunk_due"] is False and pending_count(conn, model.model_id) == 0

    again = Recording()  # run twice: no further work
    second = index(settings, embedder=again)
    assert (second.full, second.chunks_embedded, again.texts, second.chunks_added) == (False, 0, [], 0)
    conn.close()


def test_maintenance_upgrades_an_index_as_an_index_run_does(home, settings):
    from indexer.maintain import maintain

    write(home / "events" / "2026-11-20.jsonl", CONVERSATION)
    write(home / "notes.md", "# Tokens\nTokens expire after an hour.\n")
    index(settings, embedder=FakeEmbedder(dim=32))
    _as_version_2(settings)
    conn = store.connect(settings.db_path)
    embed_pending(conn, Recording())
    model = Recording()
    report = maintain(settings, embedder=model)
    assert report.ok and report.index.chunks_embedded == len(model.texts) > 0
    assert all("(in reply to: " in t for t in model.texts)  # the events that answer a turn; the note kept its vector
    assert _replies(settings)["e4"] == _replies(settings)["e5"] and status(settings)["rechunk_due"] is False
    again = Recording()
    assert maintain(settings, embedder=again).index.chunks_embedded == 0 and again.texts == []
    conn.close()


def test_an_event_is_found_by_its_date_a_note_is_not(home, settings, fake):
    write(home / "events" / "2023-10-13.jsonl",
          _turn(1, "Here is the one I painted last week, inspired by sunsets.", ts="2023-10-13T14:00:00")
          + _turn(2, "I painted a lake at sunrise.", ts="2023-06-07T09:00:00"))
    write(home / "daily" / "2023-10-13.md", "# Painting\nI painted the fence.\n")
    index(settings, embedder=fake)

    def ranked(query):
        return [h.event_id or h.path for h in search(settings, query, mode="bm25").hits]

    assert ranked("what did she paint on 13 October 2023")[0] == "e1"
    assert ranked("what did she paint in June")[0] == "e2"
    # the note is dated 13 October too (by its name), but only events carry their date in the index
    conn = store.connect(settings.db_path)
    dated = conn.execute("SELECT c.event_id, c.kind FROM chunks_fts f JOIN chunks c ON c.id = f.rowid"
                         " WHERE chunks_fts MATCH 'title : october'").fetchall()
    assert dated == [("e1", "event")]


def test_text_the_model_cannot_represent_is_not_embedded(home, settings, real_embedder):
    from indexer.status import status

    write(home / "notes" / "tokyo.md", "# 東京\n東京大学の図書館は午前九時に開館し、学生証で入館できる。土曜日は午後五時まで。\n")
    write(home / "notes" / "deploy.md", "# Deploys\nDeploys go out on Tuesdays after the payments smoke test passes.\n")
    report = index(settings, embedder=real_embedder)
    info = status(settings)
    assert info["pending_embeddings"] == 0
    assert info["not_embedded"] == 1  # the CJK note: no vector, not pending either
    assert report.chunks_embedded == 2  # both were dealt with by the embedding pass
    conn = store.connect(settings.db_path)
    try:
        assert conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0] == 1
    finally:
        conn.close()
    # BM25 still finds it, and a second run has nothing to embed
    assert search(settings, "東京", mode="bm25").hits[0].path == "notes/tokyo.md"
    assert index(settings, embedder=real_embedder).chunks_embedded == 0


def test_with_embeddings_disabled_no_chunk_is_reported_awaiting_one(sample_home, settings, fake):
    """model = "none": nothing awaits an embedding (status says 0 too), whether or not vectors exist already."""
    from indexer.base.settings import resolve_settings

    index(settings, embedder=fake)
    disabled = resolve_settings(sample_home, model="none")
    report = index(disabled)
    assert report.model is None and report.chunks_pending == 0 and "disabled" in (report.model_note or "")
