"""The store contract (:mod:`indexer.store`), one suite for every backend: the local SQLite index (real FTS5 and
sqlite-vec) and the team's PostgreSQL + pgvector (a real server, see ``pg_server``; skipped with its reason when
none can be had here). A new backend joins the ``store`` fixture's params and passes all of it."""

from __future__ import annotations

import numpy as np
import pytest

from indexer.base.chunktext import embed_input
from indexer.store import ChunkRow, SourceState, Store
from search_engine.filters import Filters
from search_engine.query import content_terms, terms

MODEL, DIM = "test-model@1", 16  # the team fixture's database has an HNSW index for this model


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request, tmp_path):
    """A fresh, empty store of each backend (on PostgreSQL: member alice of a fresh team database)."""
    if request.param == "sqlite":
        from indexer.store.local import SqliteStore

        local = SqliteStore.open(tmp_path / "index.db")
        yield local
        local.close()
    else:
        pytest.importorskip("psycopg", reason="the team extra (psycopg, pgvector) is not installed")
        yield request.getfixturevalue("team").store("alice")


def source(path: str, kind: str = "notes", **kw) -> SourceState:
    return SourceState(path=path, source=kind, mtime_ns=kw.pop("mtime_ns", 1), size=10,
                       content_hash=kw.pop("content_hash", "h-" + path), **kw)


def chunk(uid: str, text: str, kind: str = "note", **kw) -> ChunkRow:
    return ChunkRow(uid=uid, hash=kw.pop("hash", "hash-" + uid), kind=kind, text=text, path=kw.pop("path", "n.md"),
                    **kw)


def unit(rng, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def lexical(store, query: str, filters: Filters | None = None, op: str = "AND", limit: int = 10) -> list[int]:
    return [s.id for s in store.lexical_top_k(content_terms(terms(query)), op, filters or Filters(), limit)]


def uids(store, ids) -> set[str]:
    return {row.uid for row in store.fetch_hits(list(ids)).values()}


# -- sources and chunks ---------------------------------------------------------------------------------------


def test_write_batch_is_idempotent_and_delete_by_source_removes_its_chunks(store):
    rows = [chunk("a1", "first note", seq=0), chunk("a2", "second note", seq=1)]
    assert store.write_batch(source("/m/a.md"), rows) == 2
    assert store.write_batch(source("/m/a.md"), rows) == 0  # a re-run sync adds no duplicates
    assert store.write_batch(source("/m/b.md"), [chunk("b1", "other file")]) == 1
    assert set(store.sources()) == {"/m/a.md", "/m/b.md"}
    assert store.sources()["/m/a.md"] == source("/m/a.md")
    health = store.health(MODEL)
    assert (health.chunks, health.sources, health.own_chunks, dict(health.by_kind)) == (3, 2, 3, {"note": 3})
    assert health.pending_embeddings == 3 and health.vectors == 0
    assert store.delete_source("/m/a.md") == 2
    assert set(store.sources()) == {"/m/b.md"}
    assert store.health(MODEL).chunks == 1
    assert store.delete_source("/m/a.md") == 0  # gone already: nothing, no error
    assert store.write_batch(source("/m/a.md"), rows) == 2  # and it can come back whole


def test_write_batch_records_the_sources_latest_state(store):
    store.write_batch(source("/m/e.jsonl", "events", consumed=100, head_hash="h1"), [chunk("e1", "x", kind="event")])
    later = source("/m/e.jsonl", "events", mtime_ns=2, content_hash=None, consumed=250, head_hash="h2")
    assert store.write_batch(later, []) == 0  # a state with no new chunks is still recorded
    assert store.sources() == {"/m/e.jsonl": later}
    assert dict(store.health(None).by_kind) == {"event": 1}
    assert store.health(None).pending_embeddings == 0  # no model: nothing is pending for it


def test_a_batch_with_a_chunk_that_exists_adds_only_the_new_ones(store):
    store.write_batch(source("/m/a.md"), [chunk("a1", "first")])
    assert store.write_batch(source("/m/a.md"), [chunk("a1", "first"), chunk("a2", "second", seq=1)]) == 1
    assert store.health(None).chunks == 2


# -- vectors ----------------------------------------------------------------------------------------------


def test_pending_embeddings_is_one_row_per_content_hash_oldest_first(store):
    store.write_batch(source("/m/a.md"), [
        chunk("a1", "shared text", hash="H1", title="T", seq=0),
        chunk("a2", "other text", hash="H2", seq=1),
    ])
    store.write_batch(source("/m/b.md"), [
        chunk("b1", "shared text", hash="H1", title="T", path="b.md"),  # the same content in another file
        chunk("b2", "an event", kind="event", hash="H3", speaker="user", ts="2026-05-01T10:00:00", path="b.md",
              seq=1),
    ])
    pending = store.pending_embeddings(MODEL)
    assert [p.hash for p in pending] == ["H1", "H2", "H3"]
    assert (pending[0].title, pending[0].text) == ("T", "shared text")
    assert (pending[2].speaker, pending[2].ts) == ("user", "2026-05-01T10:00:00")
    first = store.pending_embeddings(MODEL, limit=2)
    assert [p.hash for p in first] == ["H1", "H2"]
    assert [p.hash for p in store.pending_embeddings(MODEL, limit=2, after=first[-1].id)] == ["H3"]
    assert [p.hash for p in store.pending_embeddings(MODEL, after=first[0].id)] == ["H2", "H3"]
    assert store.health(MODEL).pending_embeddings == 3


def test_the_turn_an_event_replies_to_is_embedded_with_it_and_never_matched_lexically(store):
    asked = "Do you still go running by the canal?"
    store.write_batch(source("/m/e.jsonl", "events"), [
        chunk("e1", "Yes, twice a week.", kind="event", hash="H1", speaker="Jon", ts="2023-05-07T10:00:00",
              reply_to=asked),
        chunk("e2", "Good for you.", kind="event", hash="H2", speaker="Mel", seq=1),
    ])
    first, second = store.pending_embeddings(MODEL)
    assert (first.hash, first.reply_to, second.reply_to) == ("H1", asked, "")
    assert first.input == embed_input("", "Yes, twice a week.", "Jon", "2023-05-07T10:00:00", asked)
    assert first.input.endswith(f"(in reply to: {asked})") and second.input == "Mel: Good for you."
    assert uids(store, lexical(store, "twice week")) == {"e1"}
    assert lexical(store, "canal") == [] and lexical(store, "running") == []  # the other turn's words


def test_put_embeddings_stores_each_hash_once_and_none_is_no_longer_pending(store):
    rng = np.random.default_rng(5)
    store.write_batch(source("/m/a.md"), [chunk(f"c{i}", f"text {i}", hash=f"H{i}", seq=i) for i in range(4)])
    v = unit(rng, 3)
    assert store.put_embeddings(MODEL, [("H0", v[0].tobytes()), ("H1", list(map(float, v[1])))]) == 2
    assert [p.hash for p in store.pending_embeddings(MODEL)] == ["H2", "H3"]
    assert store.put_embeddings(MODEL, [("H0", v[2].tobytes())]) == 0  # a second writer's put: a no-op
    assert store.put_embeddings(MODEL, [("H2", None)]) == 1  # content the model cannot represent
    assert [p.hash for p in store.pending_embeddings(MODEL)] == ["H3"]
    assert store.put_embeddings(MODEL, [("H2", None), ("H3", None)]) == 1
    assert store.pending_embeddings(MODEL) == []
    assert store.put_embeddings(MODEL, []) == 0
    health = store.health(MODEL)
    assert (health.pending_embeddings, health.vectors) == (0, 2)  # None puts are no vectors


def test_content_put_without_a_vector_stays_so_when_the_first_vectors_arrive(store):
    store.write_batch(source("/m/a.md"), [chunk("a1", "東京大学", hash="H1"), chunk("a2", "text", hash="H2", seq=1)])
    assert store.put_embeddings(MODEL, [("H1", None)]) == 1
    assert store.put_embeddings(MODEL, [("H2", unit(np.random.default_rng(3), 1)[0].tobytes())]) == 1
    assert store.pending_embeddings(MODEL) == []


def test_a_vector_outlives_its_chunks_so_content_that_comes_back_is_not_embedded_again(store):
    store.write_batch(source("/m/a.md"), [chunk("a1", "kept content", hash="H1")])
    store.put_embeddings(MODEL, [("H1", unit(np.random.default_rng(2), 1)[0].tobytes())])
    store.delete_source("/m/a.md")
    store.write_batch(source("/m/moved.md"), [chunk("m1", "kept content", hash="H1", path="moved.md")])
    assert store.pending_embeddings(MODEL) == []


def test_it_holds_vectors_of_a_model_once_a_vector_of_it_is_stored(store):
    store.write_batch(source("/m/a.md"), [chunk("a1", "東京大学", hash="H1"), chunk("a2", "text", hash="H2", seq=1)])
    assert not store.holds_vectors(MODEL) and store.vector_model() is None
    store.put_embeddings(MODEL, [("H1", None)])  # content the model cannot represent: no vector
    assert not store.holds_vectors(MODEL)
    store.put_embeddings(MODEL, [("H2", unit(np.random.default_rng(6), 1)[0].tobytes())])
    assert store.holds_vectors(MODEL) and store.vector_model() == MODEL and not store.holds_vectors("other@1")


# -- meta and health ----------------------------------------------------------------------------------------


def test_meta_is_set_replaced_and_deleted(store):
    assert store.get_meta("last_indexed") is None
    store.set_meta("last_indexed", "2026-05-01T10:00:00")
    store.set_meta("last_indexed", "2026-05-02T10:00:00")
    assert store.get_meta("last_indexed") == "2026-05-02T10:00:00"
    store.set_meta("last_indexed", None)
    assert store.get_meta("last_indexed") is None
    store.set_meta("last_indexed", None)  # deleting what is not there is fine


def test_health_counts_by_kind_and_sources(store):
    assert store.health(MODEL).chunks == 0
    store.write_batch(source("/m/n.md"), [chunk("n1", "a note"), chunk("f1", "a fact", kind="fact", seq=1)])
    store.write_batch(source("/m/e.jsonl", "events"), [chunk("e1", "an event", kind="event")])
    health = store.health(MODEL)
    assert (health.chunks, health.sources, dict(health.by_kind)) == (3, 2, {"event": 1, "fact": 1, "note": 1})


# -- reading: ranking inside the store with its filters --------------------------------------------------------


def test_the_store_satisfies_the_protocol(store):
    assert isinstance(store, Store)


def test_lexical_stems_and_applies_filters_inside_the_query(store):
    store.write_batch(source("/m/a.md"), [
        chunk("deploy", "We were deploying the servers on Friday", project="web", ts="2026-05-01T10:00:00"),
        chunk("old", "deployed servers last year", project="web", ts="2025-01-01T10:00:00", seq=1),
        chunk("api", "the servers of another project deploy nightly", project="api", ts="2026-05-02T10:00:00",
              seq=2),
        chunk("gone", "deploy servers, superseded", status="superseded", ts="2026-05-03T10:00:00", seq=3),
        chunk("noise", "nothing to see here", seq=4),
    ])
    assert uids(store, lexical(store, "deploy server")) == {"deploy", "old", "api"}  # stemmed; hidden status out
    assert uids(store, lexical(store, "deploy server", Filters(project="web"))) == {"deploy", "old"}
    assert uids(store, lexical(store, "deploy server", Filters.build(since="2026-01-01"))) == {"deploy", "api"}
    assert uids(store, lexical(store, "deploy server", Filters(all_status=True))) >= {"gone"}
    assert uids(store, lexical(store, "deploy friday")) == {"deploy"}  # AND
    assert uids(store, lexical(store, "friday nightly", op="OR")) == {"deploy", "api"}
    assert lexical(store, 'drop" table -- ) & | !') == []  # query syntax is only words
    ranked = store.lexical_top_k(content_terms(terms("servers")), "AND", Filters(), 10)
    assert [s.score for s in ranked] == sorted((s.score for s in ranked), reverse=True)
    assert len(lexical(store, "servers", limit=2)) == 2


def test_lexical_finds_cjk_text_by_two_character_words(store):
    store.write_batch(source("/m/cjk.md"), [
        chunk("tokyo", "東京大学で機械学習を研究した"),
        chunk("kyoto", "京都の大会は中止", seq=1),
        chunk("seoul", "서울에서 회의를 했다", seq=2),
    ])
    assert uids(store, lexical(store, "大学")) == {"tokyo"}  # a 2-character word inside a longer run
    assert uids(store, lexical(store, "学習")) == {"tokyo"}
    assert uids(store, lexical(store, "京都")) == {"kyoto"}
    assert lexical(store, "大阪") == []
    assert uids(store, lexical(store, "서울은")) == {"seoul"}  # a Korean word found without its particle


def test_lexical_finds_the_forms_of_a_word_that_stem_apart(store):
    store.write_batch(source("/m/forms.md"), [
        chunk("desk", "I bought a standing desk on Saturday"),
        chunk("build", "the nightly build broke after the upgrade", seq=1),
        chunk("kids", "the children loved the museum", seq=2),
        chunk("felt", "I felt the retry policy was too eager", seq=3),
        chunk("noise", "a note about something else", seq=4),
    ])
    assert uids(store, lexical(store, "what did I buy")) == {"desk"}
    assert uids(store, lexical(store, "broken build")) == {"build"}  # AND: each term by any of its forms
    assert uids(store, lexical(store, "child museum")) == {"kids"}
    assert lexical(store, "feel") == []  # a light verb keeps its own forms only


def test_vector_candidates_are_nearest_first_within_the_filters(store):
    rng = np.random.default_rng(7)
    vectors = unit(rng, 60)
    rows = [chunk(f"c{i}", f"chunk {i}", kind="note" if i % 3 else "fact", seq=i) for i in range(60)]
    store.write_batch(source("/m/v.md"), rows)
    assert store.put_embeddings(MODEL, [(r.hash, v.tobytes()) for r, v in zip(rows, vectors)]) == 60
    query = unit(rng, 1)[0]
    order = [f"c{i}" for i in np.argsort(1 - vectors @ query, kind="stable")]
    found = store.vector_candidates(query.tobytes(), MODEL, Filters(), 10, ef_search=100)
    by_id = {h.id: h.uid for h in store.fetch_hits([s.id for s in found]).values()}
    assert [by_id[s.id] for s in found] == order[:10]
    assert [s.score for s in found] == sorted(s.score for s in found)
    assert found[0].score == pytest.approx(float(1 - vectors[int(order[0][1:])] @ query), abs=1e-5)
    facts = store.vector_candidates(query.tobytes(), MODEL, Filters(kind="fact"), 5)
    by_id = {h.id: h.uid for h in store.fetch_hits([s.id for s in facts]).values()}
    assert [by_id[s.id] for s in facts] == [u for u in order if int(u[1:]) % 3 == 0][:5]


def test_a_content_stored_without_a_vector_is_never_a_vector_hit(store):
    rng = np.random.default_rng(9)
    store.write_batch(source("/m/a.md"), [chunk("has", "with a vector", hash="H1"),
                                          chunk("none", "without", hash="H2", seq=1)])
    store.put_embeddings(MODEL, [("H1", unit(rng, 1)[0].tobytes()), ("H2", None)])
    found = store.vector_candidates(unit(rng, 1)[0].tobytes(), MODEL, Filters(), 10)
    assert uids(store, [s.id for s in found]) == {"has"}


def test_fetch_hits_returns_the_rows_of_existing_ids_only(store):
    store.write_batch(source("/m/a.md"), [chunk("a1", "text", title="T", line_start=3, line_end=9,
                                                ts="2026-05-01T10:00:00", session_id="s1", project="p")])
    [hit_id] = lexical(store, "text")
    rows = store.fetch_hits([hit_id, 999_999])
    assert list(rows) == [hit_id]
    hit = rows[hit_id]
    assert (hit.uid, hit.title, hit.text, hit.path, hit.line_start, hit.line_end, hit.session_id, hit.project) == (
        "a1", "T", "text", "n.md", 3, 9, "s1", "p")
    store.delete_source("/m/a.md")
    assert store.fetch_hits([hit_id]) == {}
    assert store.fetch_hits([]) == {}


# -- browsing: show, timeline, recent, sessions, stats, the standing context, forget --------------------------------


def _browsable(store) -> None:
    """A note file of three chunks, a facts file, a session summary and one session's events (a long prompt in two
    chunks, a response with a redacted span, a tool call)."""
    store.write_batch(source("/m/a.md"), [chunk("aaaa01", "first part", seq=0), chunk("aaaa02", "second part", seq=1),
                                          chunk("aaab03", "third part", seq=2)])
    store.write_batch(source("/m/facts.md"), [
        chunk("fa01", "deploys go through staging", kind="fact", project="shop", ts="2026-05-01T09:00:00", seq=0),
        chunk("fa02", "the old rule", kind="fact", project="shop", status="superseded", ts="2026-05-02T09:00:00",
              seq=1),
        chunk("fa03", "tests run in CI", kind="fact", project="shop", ts="2026-05-03T09:00:00", seq=2)])
    store.write_batch(source("/m/sessions/s1.md"), [
        chunk("su01", "summary start", category="session", project="shop", ts="2026-05-01T11:00:00", seq=0),
        chunk("su02", "summary end", category="session", project="shop", ts="2026-05-01T11:00:00", seq=1)])
    event = dict(kind="event", session_id="s1", project="shop", path="events/d.jsonl")
    store.write_batch(source("/m/events/d.jsonl", "events"), [
        chunk("ev01", "please fix the export bug", category="prompt", event_id="e1", ts="2026-05-01T10:00:00",
              seq=0, **event),
        chunk("ev02", "and its tests", category="prompt", event_id="e1", ts="2026-05-01T10:00:00", seq=1, **event),
        chunk("ev03", "the key was [REDACTED:aws-key] in the log", category="response", event_id="e2",
              ts="2026-05-01T10:01:00", seq=1000, **event),
        chunk("ev04", "ran pytest", category="tool", event_id="e3", ts="2026-05-01T10:02:00", seq=2000, **event)])


def test_find_by_id_prefix_then_neighbours_and_time_around(store):
    _browsable(store)
    assert sorted(row.uid for row, _, _ in store.find_uid_prefix("aaaa", limit=5)) == ["aaaa01", "aaaa02"]
    assert store.find_uid_prefix("ffff") == []
    ((row, file, seq),) = store.find_uid_prefix("aaaa02")
    assert (row.uid, row.text, seq) == ("aaaa02", "second part", 1)
    assert store.neighbours(file, seq) == ("aaaa01", "aaab03", 3)
    ((first, file, seq),) = store.find_uid_prefix("aaaa01")
    assert store.neighbours(file, seq) == (None, "aaaa02", 3)
    ((center, _, _),) = store.find_uid_prefix("ev03")
    before, after = store.around(center, 1)  # its session's chunks, by time then id
    assert [r.uid for r in before] == ["ev02"] and [r.uid for r in after] == ["ev04"]
    before, _ = store.around(center, 5)
    assert [r.uid for r in before] == ["ev01", "ev02"]


def test_recent_sessions_and_event_counts(store):
    _browsable(store)
    assert [r.uid for r in store.recent_rows(limit=4)] == ["fa03", "su02", "su01", "ev04"]  # superseded left out
    assert [r.uid for r in store.recent_rows(limit=2, offset=2)] == ["su01", "ev04"]  # the viewer's older pages
    assert [r.uid for r in store.recent_rows(type="fact", offset=1)] == ["fa01"]
    assert [r.uid for r in store.recent_rows(type="prompt")] == ["ev01"]  # one row per event
    assert [r.uid for r in store.recent_rows(type="fact", project="shop")] == ["fa03", "fa01"]
    assert store.recent_rows(session="nope") == []
    counts = sorted(store.session_event_counts())
    assert counts == [("s1", "prompt", 1, "2026-05-01T10:00:00", "2026-05-01T10:00:00", "shop"),
                      ("s1", "response", 1, "2026-05-01T10:01:00", "2026-05-01T10:01:00", "shop"),
                      ("s1", "tool", 1, "2026-05-01T10:02:00", "2026-05-01T10:02:00", "shop")]
    assert store.session_event_counts("elsewhere") == []
    assert list(store.session_prompts(["s1"])) == [("s1", "please fix the export bug"), ("s1", "and its tests")]
    assert store.event_counts() == ({"prompt": 1, "response": 1, "tool": 1}, {"2026-05-01": 3}, 1)
    ((kind, _, event_id, session, text),) = list(store.redacted_texts())
    assert (kind, event_id, session) == ("event", "e2", "s1") and "[REDACTED:aws-key]" in text


def test_the_standing_context_reads_the_latest_summary_and_the_active_facts(store):
    _browsable(store)
    uid, path, text = store.latest_session_summary("shop")
    assert (uid, path, text) == ("su01", "n.md", "summary start\nsummary end")
    assert store.latest_session_summary("elsewhere") is None
    assert [f[0] for f in store.active_facts("shop", 10)] == ["fa03", "fa01"]
    assert [f[0] for f in store.active_facts("shop", 1)] == ["fa03"]


def test_delete_uids_removes_those_chunks_only(store):
    _browsable(store)
    before = store.health(None).chunks
    assert store.delete_uids(["aaaa02", "ev03", "no-such-id"]) == 2
    assert store.delete_uids([]) == 0
    assert store.health(None).chunks == before - 2
    assert store.find_uid_prefix("aaaa02") == [] and store.find_uid_prefix("ev03") == []
    ((_, file, seq),) = store.find_uid_prefix("aaaa01")
    assert store.neighbours(file, seq) == (None, "aaab03", 2)
