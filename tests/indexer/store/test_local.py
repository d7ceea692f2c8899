"""What the local index does beyond the store contract (tests/indexer/store/test_store.py): the transactions of a scan,
the scoped sources of a hook's ingest, the turn context, what forget selects and deletes, one model's vectors,
the upkeep of the file. Real SQLite with FTS5 and sqlite-vec; the tests read the tables directly to check."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from indexer.store import ChunkRow, SourceState
from indexer.store.local import SqliteStore, as_store


@pytest.fixture
def local(tmp_path):
    store = SqliteStore.open(tmp_path / "index.db")
    yield store
    store.close()


def source(path: str, kind: str = "notes") -> SourceState:
    return SourceState(path=path, source=kind, mtime_ns=1, size=10, content_hash="h-" + path)


def chunk(uid: str, text: str, kind: str = "note", **kw) -> ChunkRow:
    return ChunkRow(uid=uid, hash=kw.pop("hash", "hash-" + uid), kind=kind, text=text, path=kw.pop("path", "n.md"),
                    **kw)


def fts(store: SqliteStore, query: str) -> set[int]:
    return {r[0] for r in store.conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (query,))}


def test_writes_join_the_callers_transaction_and_roll_back_with_it(local):
    local.write_batch(source("/m/keep.md"), [chunk("k", "kept")])
    with pytest.raises(RuntimeError), local.transaction():
        local.write_batch(source("/m/a.md"), [chunk("a", "alpha")])
        local.delete_source("/m/keep.md")
        assert set(local.sources()) == {"/m/a.md"}
        raise RuntimeError("a fault in the middle of a batch")
    assert set(local.sources()) == {"/m/keep.md"}
    assert local.chunk_count() == 1 and fts(local, "kept") and not fts(local, "alpha")


def test_a_scan_batch_commits_many_sources_at_once(local):
    local.begin()
    for i in range(3):
        local.write_batch(source(f"/m/{i}.md"), [chunk(f"c{i}", f"text {i}")])
    assert local.in_transaction
    local.rollback()
    assert local.sources() == {}
    local.begin()
    local.write_batch(source("/m/x.md"), [chunk("x", "text")])
    local.commit()
    assert set(local.sources()) == {"/m/x.md"} and not local.in_transaction


def test_sources_under_a_path_stop_at_its_boundary(local):
    for path in ("/m/events", "/m/events/a.jsonl", "/m/events/sub/b.jsonl", "/m/events-old/c.jsonl", "/m/eventsx"):
        local.write_batch(source(path), [])
    assert set(local.sources_under(["/m/events"])) == {"/m/events", "/m/events/a.jsonl", "/m/events/sub/b.jsonl"}
    assert set(local.sources_under(["/m/events/a.jsonl", "/m/eventsx"])) == {"/m/events/a.jsonl", "/m/eventsx"}
    assert local.sources_under([]) == {}


def test_the_previous_turn_is_the_latest_event_of_the_session_up_to_a_time(local):
    local.write_batch(source("/m/e.jsonl", "events"), [
        chunk("e1", "first question", kind="event", session_id="s", ts="2026-05-01T10:00:00"),
        chunk("e2", "the answer", kind="event", session_id="s", ts="2026-05-01T10:01:00", seq=1),
        chunk("o1", "another session", kind="event", session_id="t", ts="2026-05-01T10:02:00", seq=2),
        chunk("n1", "a note in the session", session_id="s", ts="2026-05-01T10:03:00", seq=3),
    ])
    assert local.previous_turn("s", "2026-05-01T10:05:00") == "the answer"
    assert local.previous_turn("s", "2026-05-01T10:00:30") == "first question"
    assert local.previous_turn("s", None) == "the answer"
    assert local.previous_turn("unknown", None) == ""


def test_the_context_column_is_indexed_at_low_weight(local):
    local.write_batch(source("/m/e.jsonl", "events"), [
        chunk("e2", "yes twice a week", kind="event", session_id="s", context="how often do you swim"),
    ])
    [cid] = fts(local, "twice")
    assert fts(local, "swim") == {cid} and fts(local, "context:swim") == {cid} and not fts(local, "body:swim")


def test_stored_chunks_select_by_every_condition_and_any_number_of_ids(local):
    rows = [chunk(f"u{i:04d}", f"text {i}", kind="event", session_id=f"s{i % 3}", project="p" if i % 2 else "q",
                  ts=f"2026-05-{1 + i % 28:02d}T10:00:00", seq=i, event_id=f"ev{i // 2}") for i in range(1200)]
    local.write_batch(source("/m/e.jsonl", "events"), rows)
    uids = [r.uid for r in rows]
    found = local.stored_chunks(uids=uids)  # more than one statement's worth of parameters
    assert len(found) == 1200 and [(r.ts, r.id) for r in found] == sorted((r.ts, r.id) for r in found)
    assert {r.uid for r in local.stored_chunks(session="s1", project="p")} == {
        r.uid for r in rows if r.session_id == "s1" and r.project == "p"}
    window = local.stored_chunks(since="2026-05-03T00:00:00", before="2026-05-04T10:00:00")
    assert {r.ts for r in window} == {"2026-05-03T10:00:00"}
    ids = [r.id for r in found[:700]]
    assert {r.id for r in local.stored_chunks(ids=ids, session="s0")} == {r.id for r in found[:700] if
                                                                           r.session_id == "s0"}
    assert {r.uid for r in local.stored_chunks(file="/m/e.jsonl", event_id="ev7", kind="event")} == {"u0014", "u0015"}
    assert local.ids_of("u0003") == [found[[r.uid for r in found].index("u0003")].id]
    assert len(local.ids_of("ev7")) == 2
    assert len(local.ids_with_prefix("u00", limit=2)) == 2
    with pytest.raises(ValueError):
        local.stored_chunks(ids=[1], uids=["u0001"])


def test_deleted_chunks_leave_the_fts_index_and_the_turn_context_is_rebuilt(local):
    local.write_batch(source("/m/e.jsonl", "events"), [
        chunk("q", "secret question about salaries", kind="event", session_id="s", ts="2026-05-01T10:00:00"),
        chunk("a", "the reply", kind="event", session_id="s", ts="2026-05-01T10:01:00", seq=1,
              context="secret question about salaries"),
    ])
    [qid] = local.ids_of("q")
    assert local.delete_chunks([qid]) == 1
    local.refresh_turn_context({"s"})
    assert not fts(local, "salaries")  # neither the chunk nor the next turn's context keeps the words
    assert fts(local, "reply")
    assert local.check().ok


def test_vectors_of_another_model_replace_the_index_vectors(local):
    rng = np.random.default_rng(1)
    local.write_batch(source("/m/a.md"), [chunk("a", "x", hash="H1"), chunk("b", "y", hash="H2", seq=1)])
    assert local.put_embeddings("m1", [("H1", rng.normal(size=8).astype(np.float32).tobytes())]) == 1
    assert local.get_meta("vector_model") == "m1" and local.get_meta("vector_dim") == "8"
    assert local.put_embeddings("m2", [("H2", rng.normal(size=4).astype(np.float32).tobytes())]) == 1
    assert local.get_meta("vector_model") == "m2"
    assert [p.hash for p in local.pending_embeddings("m2")] == ["H1"]
    assert local.stored_vectors("m2", ["H1", "H2"]).keys() == {"H2"}
    assert local.health("m2").vectors == 1 and local.health("m1").vectors == 0


def test_orphan_vectors_are_dropped_on_demand(local):
    local.write_batch(source("/m/a.md"), [chunk("a", "x", hash="H1")])
    local.put_embeddings("m", [("H1", [0.1, 0.2, 0.3, 0.4])])
    local.delete_source("/m/a.md")
    assert local.check().orphan_embeddings == 1
    assert local.drop_orphan_vectors() == 1
    check = local.check()
    assert (check.orphan_embeddings, check.vectors, check.ok) == (0, 0, True)


def test_the_upkeep_keeps_the_file_sound_and_a_backup_replaces_another_index(local, tmp_path):
    local.write_batch(source("/m/a.md"), [chunk(f"c{i}", f"text {i}", seq=i) for i in range(50)])
    local.optimize_fts()
    local.vacuum()
    assert local.checkpoint("TRUNCATE") and local.quick_check() == ["ok"]
    with pytest.raises(ValueError):
        local.checkpoint("NOW; DROP TABLE chunks")
    other = SqliteStore.open(tmp_path / "other.db")
    try:
        other.write_batch(source("/m/old.md"), [chunk("old", "old text")])
        assert other.copy_from(local)
        assert set(other.sources()) == {"/m/a.md"} and other.chunk_count() == 50
    finally:
        other.close()


def test_counts_for_status(local):
    local.write_batch(source("/m/e.jsonl", "events"), [chunk("e1", "x", kind="event"), chunk("e2", "y", kind="event",
                                                                                         seq=1)])
    local.write_batch(source("/m/n.md"), [chunk("n", "z", hash="hash-e1")])  # the same content as e1
    assert local.event_chunks_by_source() == {"/m/e.jsonl": 2}
    assert (local.pending_count("m"), local.pending_estimate("m")) == (2, 2)
    local.put_embeddings("m", [("hash-e1", None)])
    assert (local.pending_count("m"), local.pending_estimate("m"), local.not_embedded()) == (1, 1, 0)
    local.put_embeddings("m", [("hash-e2", [1.0, 0.0])])
    assert (local.pending_count("m"), local.not_embedded()) == (0, 1)
    assert local.pending_count(None) == 2  # no model: every content is pending
    assert as_store(local.conn).chunk_count() == 3 and as_store(local) is local
    before = local.state_version()
    local.set_meta("x", "1")
    assert local.state_version() != before


# ---- the counts health reads are kept by triggers ---------------------------------------------------------------

_WRITES = st.lists(st.one_of(
    st.tuples(st.just("write"), st.sampled_from("abc"), st.lists(st.sampled_from(["H1", "H2", "H3", "H4"]),
                                                                  max_size=4)),
    st.tuples(st.just("delete"), st.sampled_from("abc"), st.none()),
    st.tuples(st.just("embed"), st.sampled_from(["m1", "m2"]), st.lists(st.sampled_from(["H1", "H2", "H3", "H4"]),
                                                                         max_size=3)),
    st.tuples(st.just("rehash"), st.sampled_from(["H1", "H2", "H3", "H4"]), st.sampled_from(["H1", "H5"])),
    st.tuples(st.just("drop orphans"), st.none(), st.none()),
), max_size=12)


@given(writes=_WRITES)
def test_the_kept_counts_follow_every_write(tmp_path_factory, writes):
    local = SqliteStore.open(tmp_path_factory.mktemp("counts") / "index.db")
    try:
        for op, what, hashes in writes:
            if op == "write":  # a source's chunks replace its previous ones; hashes repeat across sources
                local.write_batch(source(f"/m/{what}.md"), [chunk(f"{what}{i}", f"text {h}", hash=h, seq=i)
                                                              for i, h in enumerate(hashes)])
            elif op == "delete":
                local.delete_source(f"/m/{what}.md")
            elif op == "embed":  # a vector of another model replaces the index's vectors (and their rows)
                local.put_embeddings(what, [(h, [0.1, 0.2, 0.3, 0.4]) for h in dict.fromkeys(hashes)])
            elif op == "rehash":
                with local.transaction():
                    local.conn.execute("UPDATE chunks SET hash = ? WHERE hash = ?", (hashes, what))
            else:
                local.drop_orphan_vectors()
            assert local.check().miscounted == ()
            assert local.chunk_count() == local.conn.execute("SELECT count(*) FROM chunks").get
            if not local.check().orphan_embeddings:
                for model in ("m1", "m2"):
                    assert local.pending_estimate(model) == local.pending_count(model)
    finally:
        local.close()


def test_a_miscount_is_reported_and_the_recount_repairs_it(local):
    local.write_batch(source("/m/a.md"), [chunk("a", "x", hash="H1"), chunk("b", "y", hash="H1", seq=1)])
    assert (local.chunk_count(), local.pending_estimate(None)) == (2, 1)
    with local.transaction():
        local.conn.execute("UPDATE counts SET n = 7 WHERE name = 'hashes'")
    assert local.check().miscounted == ("hashes",) and not local.check().ok
    local.recount()
    assert local.check().miscounted == () and local.pending_estimate(None) == 1


def test_an_index_of_the_previous_version_gets_its_counts(tmp_path):
    path = tmp_path / "index.db"
    old = SqliteStore.open(path)
    old.write_batch(source("/m/a.md"), [chunk("a", "x", hash="H1"), chunk("b", "y", hash="H2", seq=1),
                                        chunk("c", "z", hash="H2", seq=2)])
    old.put_embeddings("m", [("H1", [0.1, 0.2, 0.3, 0.4])])
    with old.transaction():  # back to version 3: no counts
        for trigger in ("chunks_count_insert", "chunks_count_delete", "chunks_count_rehash", "embeddings_count_insert",
                        "embeddings_count_delete", "embeddings_count_model"):
            old.conn.execute(f"DROP TRIGGER {trigger}")
        old.conn.execute("DROP TABLE counts")
        old.conn.pragma("user_version", 3)
    old.close()
    upgraded = SqliteStore.open(path)
    try:
        assert (upgraded.chunk_count(), upgraded.pending_estimate(None), upgraded.pending_estimate("m")) == (3, 2, 1)
        assert upgraded.check().ok
    finally:
        upgraded.close()
