"""How events are indexed for retrieval: the previous turn as a low-weight FTS column, what an event is embedded
as, and the migration that brings a version-1 index there. Real SQLite + FTS5, fake embedder."""

import orjson
import xxhash

from conftest import write
from fake_embedder import FakeEmbedder
from indexer.base.chunktext import content_hash, embed_input
from indexer.maintain import check_index
from indexer.pipeline import embed_pending, index, ingest
from indexer.rebuild import rebuild
from indexer.store import sqlite as store
from search_engine.search import search


def _event(i, content, session="s1", ts="2023-05-07T13:56:00", **kw):
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
          _event(1, "alpha do you go hiking") + _event(2, "bravo yes every sunday")
          + _event(3, "xray other session", session="s2") + _event(4, "charlie where to"))
    write(home / "notes.md", "# Trails\ndelta hiking trails near the lake\n")
    index(settings, embedder=fake)
    assert _previous(settings) == {"e1": None, "e2": "e1", "e3": None, "e4": "e2"}
    conn = store.connect(settings.db_path)
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'context : delta'").fetchone()[0] == 0


def test_a_reply_is_found_by_the_words_of_the_question_it_answers(home, settings, fake):
    write(home / "events" / "2023-05-07.jsonl",
          _event(1, "Do you still go hiking in the mountains?") + _event(2, "Yes, every Sunday with my dog.")
          + _event(3, "The weather was lovely today."))
    index(settings, embedder=fake)
    hits = search(settings, "hiking", mode="bm25").hits
    assert [h.event_id for h in hits] == ["e1", "e2"]  # the question first: its own words weigh more


def test_context_spans_incremental_runs_and_files(home, settings, fake):
    log = write(home / "events" / "2023-05-07.jsonl", _event(1, "alpha first") + _event(2, "bravo second"))
    index(settings, embedder=fake)
    with log.open("a") as f:
        f.write(_event(3, "charlie third") + _event(4, "yankee elsewhere", session="s2"))
    assert index(settings, embedder=fake).chunks_added == 2
    write(home / "events" / "2023-05-08.jsonl", _event(5, "delta next day", ts="2023-05-08T09:00:00"))
    assert ingest(settings, [home / "events" / "2023-05-08.jsonl"])  # a hook's scoped run
    assert _previous(settings) == {"e1": None, "e2": "e1", "e3": "e2", "e4": None, "e5": "e3"}


def test_full_rebuild_and_rechunk_give_the_same_context(home, settings, fake):
    write(home / "events" / "2023-05-07.jsonl", _event(1, "alpha first") + _event(2, "bravo second"))
    write(home / "events" / "2023-05-08.jsonl", _event(3, "charlie third", ts="2023-05-08T09:00:00"))
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
          _event(1, "I went to a support group.", metadata={"speaker": "Caroline"})
          + _event(2, "What should I fix first?", ts="2026-11-20T10:00:00")
          + orjson.dumps({"id": "e3", "ts": "2026-11-20T10:01:00", "session_id": "s1", "type": "tool",
                          "tool_name": "Bash", "content": "Bash: pytest -q"}).decode() + "\n")
    write(home / "notes.md", "# Trails\nhiking trails near the lake\n")
    model = Recording()
    index(settings, embedder=model)
    assert "Caroline on 7 May 2023: I went to a support group." in model.texts
    assert "user on 20 November 2026: What should I fix first?" in model.texts
    assert "tool on 20 November 2026: Bash: pytest -q" in model.texts
    assert "Trails\n# Trails\nhiking trails near the lake" in model.texts  # a note: title and text, as before
    conn = store.connect(settings.db_path)
    for title, text, speaker, ts, h in conn.execute("SELECT title, text, speaker, ts, hash FROM chunks"):
        assert h == xxhash.xxh3_128_hexdigest(embed_input(title, text, speaker, ts).encode())


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
    assert conn.pragma("user_version") == len(store.MIGRATIONS) == 2
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
                _event(1, "alpha first", metadata={"speaker": "Mel"}) + _event(2, "bravo second"))
    index(settings, embedder=None)
    conn = store.connect(settings.db_path)
    with conn:  # as the previous release left them: old chunker version, no speaker, hashes of title and text
        store.set_meta(conn, "chunker", "1:1200:200")
        for cid, title, text in conn.execute("SELECT id, title, text FROM chunks").fetchall():
            conn.execute("UPDATE chunks SET speaker = NULL, hash = ? WHERE id = ?", (content_hash(title, text), cid))
    embed_pending(conn, FakeEmbedder(dim=32))  # their vectors, of "prompt · Mel\nalpha first" and so on
    with log.open("a") as f:
        f.write(_event(3, "charlie third"))
    assert ingest(settings, [log])
    assert store.get_meta(conn, "chunker") == "1:1200:200"  # a scoped run leaves the re-chunk to a full scan
    model = Recording()
    report = index(settings, embedder=model)
    assert report.full and "chunker settings changed" in report.model_note
    assert store.get_meta(conn, "chunker").startswith("2:")
    assert dict(conn.execute("SELECT event_id, speaker FROM chunks")) == {"e1": "Mel", "e2": "user", "e3": "user"}
    assert sorted(model.texts) == ["Mel on 7 May 2023: alpha first", "user on 7 May 2023: bravo second",
                                   "user on 7 May 2023: charlie third"]
    assert conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 3  # the old vectors were dropped
    assert check_index(conn).ok and check_index(conn).orphan_embeddings == 0


def test_an_event_is_found_by_its_date_a_note_is_not(home, settings, fake):
    write(home / "events" / "2023-10-13.jsonl",
          _event(1, "Here is the one I painted last week, inspired by sunsets.", ts="2023-10-13T14:00:00")
          + _event(2, "I painted a lake at sunrise.", ts="2023-06-07T09:00:00"))
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
