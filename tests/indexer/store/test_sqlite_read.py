"""The reading half of the local store (indexer/store/sqlite_read.py) on a real index: SQLite with FTS5 and
sqlite-vec, filled by the real indexer from the sample memory (fake embedder). Each ranking is checked against a
reference computed another way (every match scored, filtered and sorted in Python)."""

from __future__ import annotations

import numpy as np
import pytest

from indexer.base.errors import UsageError
from indexer.base.types import HIDDEN_STATUSES
from indexer.pipeline import index
from indexer.store import HitRow, Scored, Store
from indexer.store.local import SqliteStore
from indexer.store.sqlite_read import CONTEXT_WEIGHT, fts5_query
from search_engine.filters import Filters
from search_engine.query import ParsedQuery, Term


@pytest.fixture
def store(sample_home, settings, fake):
    index(settings, embedder=fake)
    opened = SqliteStore.open(settings.db_path)
    yield opened
    opened.close()


def reference_bm25(store: SqliteStore, expression: str, keep, limit: int) -> list[tuple[int, float]]:
    """Every match with its score, filtered in Python, best first (ties by nothing: compared as score lists)."""
    rows = store.conn.execute(
        f"SELECT c.id, -bm25(chunks_fts, 1.0, 1.0, {CONTEXT_WEIGHT}), c.kind, c.status FROM chunks_fts"
        " JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ?", (expression,)).fetchall()
    kept = sorted(((cid, score) for cid, score, kind, status in rows if keep(kind, status)), key=lambda r: -r[1])
    return kept[:limit]


def visible(kind, status) -> bool:
    return (status or "") not in HIDDEN_STATUSES


READING = ("lexical_top_k", "lexical_expression", "lexical_native", "vector_model", "vector_candidates",
           "fetch_hits", "health", "get_meta")


def test_the_reading_half_implements_the_contract_s_reading_operations(store):
    for name in READING:
        assert callable(getattr(Store, name)) and callable(getattr(store, name)), name


@pytest.mark.parametrize("op", ["AND", "OR"])
def test_lexical_top_k_is_the_bm25_ranking_within_the_filters(store, op):
    terms = ParsedQuery.parse("sqlite deploy retry webhook").terms
    expression = fts5_query(terms, op)
    for filters, keep in ((Filters(), visible), (Filters(kind="note"), lambda k, s: k == "note" and visible(k, s))):
        for limit in (1, 3, 50):
            got = store.lexical_top_k(terms, op, filters, limit)
            want = reference_bm25(store, expression, keep, limit)
            assert [s.score for s in got] == pytest.approx([s for _, s in want])
            assert {s.id for s in got} <= {cid for cid, _ in reference_bm25(store, expression, keep, 10_000)}
            assert all(isinstance(s, Scored) for s in got)
    assert store.lexical_expression(terms, op) == expression


def test_ranking_inside_fts5_first_still_fills_the_list_when_hidden_rows_crowd_the_top(store):
    """The unfiltered query ranks inside FTS5 and joins only the best 2 x limit; when hidden statuses take those
    places, the full query runs and the list is still full and right."""
    terms = [Term("the")]
    expression = fts5_query(terms, "AND")
    everything = reference_bm25(store, expression, lambda k, s: True, 10_000)
    assert len(everything) > 6
    top = [cid for cid, _ in everything[:4]]
    with store.conn:
        store.conn.execute(f"UPDATE chunks SET status = 'superseded' WHERE id IN ({','.join('?' * len(top))})", top)
    got = store.lexical_top_k(terms, "AND", Filters(), 2)
    assert len(got) == 2 and not {s.id for s in got} & set(top)
    assert [s.score for s in got] == pytest.approx([s for _, s in reference_bm25(store, expression, visible, 2)])
    shown = store.lexical_top_k(terms, "AND", Filters(all_status=True), 2)
    assert [s.id for s in shown] == top[:2]


def test_cjk_terms_match_inside_longer_runs(store):
    found = store.lexical_top_k(ParsedQuery.parse("東京").terms, "AND", Filters(), 10)
    assert found
    rows = store.fetch_hits([s.id for s in found])
    assert all("東京" in rows[s.id].text or "東京" in rows[s.id].title for s in found)


def test_lexical_native_runs_fts5_syntax_and_rejects_bad_syntax_in_one_line(store):
    assert store.lexical_native("sqlite OR deploy", Filters(), 5)
    with pytest.raises(UsageError) as raised:
        store.lexical_native('"unbalanced', Filters(), 5)
    assert "\n" not in str(raised.value) and "invalid FTS5 query" in str(raised.value)


def reference_nearest(store: SqliteStore, qvec: bytes, model: str, keep, limit: int) -> list[tuple[int, float]]:
    rows = store.conn.execute(
        "SELECT c.id, c.kind, c.status, v.embedding FROM chunks c JOIN embeddings e ON e.hash = c.hash"
        " AND e.model = ? JOIN vec_chunks v ON v.rowid = e.id", (model,)).fetchall()
    q = np.frombuffer(qvec, dtype=np.float32)
    out = []
    for cid, kind, status, blob in rows:
        if keep(kind, status):
            v = np.frombuffer(blob, dtype=np.float32)
            out.append((cid, 1.0 - float(v @ q) / (float(np.linalg.norm(v) * np.linalg.norm(q)) or 1.0)))
    return sorted(out, key=lambda r: (r[1], r[0]))[:limit]


def test_vector_candidates_are_the_nearest_chunks_within_the_filters(store, fake):
    model = fake.model_id
    assert store.vector_model() == model
    for query in ("refund webhook race", "retry with jitter", "東京 deploy"):
        qvec = fake.embed_query(query)
        for filters, keep in ((Filters(), visible), (Filters(kind="note"), lambda k, s: k == "note" and visible(k, s))):
            got = store.vector_candidates(qvec, model, filters, 8)
            want = reference_nearest(store, qvec, model, keep, 8)
            assert [s.score for s in got] == pytest.approx([d for _, d in want], abs=1e-4)
        floats = list(np.frombuffer(qvec, dtype=np.float32))
        assert store.vector_candidates(floats, model, Filters(), 8) == store.vector_candidates(qvec, model, Filters(), 8)


def test_a_wide_filter_reads_the_nearest_vectors_first_with_the_same_answer(store, fake, monkeypatch):
    """A filter that lets more than EXACT_MAX chunks through is read by the widened KNN, not by distances to every
    chunk it passes: the same nearest chunks either way, and no exact scan when the KNN finds enough."""
    import indexer.store.sqlite_read as sqlite_read

    model = fake.model_id
    qvec = fake.embed_query("refund webhook race")
    wide = Filters(since="2000-01-01")
    keep = lambda k, s: visible(k, s)  # noqa: E731
    exact = store.vector_candidates(qvec, model, wide, 5)
    assert [s.score for s in exact] == pytest.approx([d for _, d in reference_nearest(store, qvec, model, keep, 5)],
                                                     abs=1e-4)
    passing = store._count_passing(wide, 10_000)
    assert 5 < passing == store._count_passing(Filters(), 10_000) - store.conn.execute(
        "SELECT count(*) FROM chunks WHERE ts IS NULL OR ts < '2000-01-01'").fetchone()[0]
    assert store._count_passing(wide, 3) == 3  # counted up to the bound only
    monkeypatch.setattr(sqlite_read, "EXACT_MAX", 2)
    monkeypatch.setattr(SqliteStore, "_exact", lambda *a, **k: pytest.fail("the exact scan ran"))
    assert store.vector_candidates(qvec, model, wide, 5) == exact


def test_the_in_memory_matrix_ranks_like_sqlite_vec_and_follows_new_vectors(store, fake, settings, home):
    from conftest import write

    plain = SqliteStore(store.conn, store.db_path)
    matrix = store.keep_vectors_in_memory(fake.model_id)
    assert matrix is not None and len(matrix.ids) == store.conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    for query in ("refund webhook race", "retry with jitter"):
        qvec = fake.embed_query(query)
        fast, slow = store.vector_candidates(qvec, fake.model_id, Filters(), 20), \
            plain.vector_candidates(qvec, fake.model_id, Filters(), 20)
        assert [s.score for s in fast] == pytest.approx([s.score for s in slow], abs=1e-4)
    assert store.keep_vectors_in_memory(fake.model_id) is matrix, "unchanged vectors: the same matrix"
    loaded = len(matrix.ids)
    write(home / "notes" / "late.md", "# Late note\n\nzygomorphic orchids bloom late\n")
    index(settings, embedder=fake)
    assert store.keep_vectors_in_memory(fake.model_id) is matrix and len(matrix.ids) == loaded + 1, \
        "a new vector is appended, not the whole matrix loaded again"
    _same_as_a_fresh_load(store, fake)
    top = store.conn.execute("SELECT max(id) FROM embeddings").fetchone()[0]
    write(home / "notes" / "late.md", "# Late note\n\nzygomorphic orchids bloom early, in the frost\n")
    index(settings, embedder=fake)  # the old vector is an orphan at the top of the ids: the new one takes its id
    assert store.conn.execute("SELECT max(id) FROM embeddings").fetchone()[0] == top
    again = store.keep_vectors_in_memory(fake.model_id)
    assert again is not matrix and len(again.ids) == loaded + 1
    _same_as_a_fresh_load(store, fake)


def _same_as_a_fresh_load(store, fake):
    """The warm matrix ranks every query as a matrix loaded from the index now."""
    from indexer.store.vector_matrix import VectorMatrix

    kept = store.keep_vectors_in_memory(fake.model_id)
    fresh = VectorMatrix(store.conn, fake.model_id)
    assert sorted(kept.ids.tolist()) == sorted(fresh.ids.tolist())
    for query in ("zygomorphic orchids", "frost", "refund webhook race"):
        qvec = fake.embed_query(query)
        assert [i for i, _ in kept.nearest(qvec, 5)] == [i for i, _ in fresh.nearest(qvec, 5)]
        assert [d for _, d in kept.nearest(qvec, 5)] == pytest.approx([d for _, d in fresh.nearest(qvec, 5)], abs=1e-6)


def test_fetch_hits_and_reading_by_id_and_time(store):
    ids = [row[0] for row in store.conn.execute("SELECT id FROM chunks ORDER BY id LIMIT 3")]
    rows = store.fetch_hits([*ids, 10**9])
    assert set(rows) == set(ids) and all(isinstance(r, HitRow) and r.id == i for i, r in rows.items())
    assert store.fetch_hits([]) == {}
    row = rows[ids[0]]
    found = store.find_uid_prefix(row.uid[:8])
    assert [r.uid for r, _, _ in found] == [row.uid]
    _, file, seq = found[0]
    prev, nxt, count = store.neighbours(file, seq)
    assert count == store.conn.execute("SELECT count(*) FROM chunks WHERE file = ?", (file,)).fetchone()[0]
    assert prev is None if seq == min(s for (s,) in store.conn.execute("SELECT seq FROM chunks WHERE file = ?",
                                                                        (file,))) else prev
    dated = store.conn.execute("SELECT id FROM chunks WHERE ts IS NOT NULL AND session_id IS NULL"
                               " ORDER BY ts, id").fetchall()
    if len(dated) >= 3:
        center = store.fetch_hits([dated[1][0]])[dated[1][0]]
        before, after = store.around(center, 1)
        assert [r.ts <= center.ts for r in before] == [True] and [r.ts >= center.ts for r in after] == [True]
