"""The in-process search section of the benchmark: latency per mode (excluding and including query embedding),
the warm server's path with its in-memory vector matrix, the components of one search, and the references
measured in the same run (exact NumPy brute force and recall@10 against it, a bare FTS5 query, vector variants)."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import numpy as np

from scripts import bench_vector_variants
from scripts.bench_build import log, precomputed, read_vectors
from scripts.bench_profile import profiled
from scripts.stats import summary, time_each


def chunk_ids(rows) -> list[int]:
    """The chunk ids of a store's vector candidates."""
    return [r.id for r in rows]


def topk_numpy(mat: np.ndarray, q: np.ndarray, k: int = 10) -> np.ndarray:
    sims = mat @ q
    top = np.argpartition(-sims, k)[:k]
    return top[np.argsort(-sims[top])]


def search_section(args, n: int, root: Path, db: Path, emb, queries: list[str]) -> dict:
    from indexer.base.embedder import ModelChoice
    from indexer.base.settings import resolve_settings
    from indexer.store import sqlite as store
    from indexer.store.local import SqliteStore
    from indexer.store.sqlite_read import fts5_query
    from search_engine.filters import Filters
    from search_engine.lexical import lexical_search
    from search_engine.query import ParsedQuery, content_terms, terms
    from search_engine.search import result_health, search

    settings = resolve_settings(root, db_path=db)
    conn = store.connect(db)
    cold = SqliteStore(conn, db)  # vec0's KNN, as a one-shot process searches
    out: dict = {}
    try:
        # query embeddings, once, with the warm model (their latency is reported too)
        qv: dict[str, bytes] = {}
        embed_ms = []
        for q in queries:
            t0 = time.perf_counter()
            qv[q] = emb.embed_query(q)
            embed_ms.append((time.perf_counter() - t0) * 1000)
        out["query_embed_ms"] = summary(embed_ms)
        pre, readable = precomputed(emb, queries, qv)
        modes: dict = {}
        for mode in ("bm25", "vector", "hybrid"):
            asked = readable if mode == "vector" else queries
            log(f"  search latency {mode} ({len(asked)} queries)")
            cpu: list[float] = []
            excl = time_each(partial(search, settings, mode=mode, k=10, embedder=pre, store=cold), asked,
                             cpu_out=cpu)
            modes[mode] = {"excl_embed_ms": summary(excl), "excl_embed_cpu_ms": summary(cpu)}
            if mode == "bm25":
                modes[mode]["incl_embed_ms"] = modes[mode]["excl_embed_ms"]
            else:
                incl = time_each(partial(search, settings, mode=mode, k=10, embedder=emb, store=cold), asked)
                modes[mode]["incl_embed_ms"] = summary(incl)
        hits = search(settings, queries[0], mode="hybrid", k=10, embedder=pre, store=cold)
        modes["hybrid"]["mode_used"] = hits.mode_used
        out["modes"] = modes

        if args.profile and n == max(args.sizes):
            profiled(args, f"search-hybrid-{n}", lambda: [search(settings, q, mode="hybrid", k=10, embedder=pre,
                                                                 store=cold) for q in queries])
            profiled(args, f"search-vector-{n}", lambda: [search(settings, q, mode="vector", k=10, embedder=pre,
                                                                 store=cold) for q in readable])
            profiled(args, f"search-bm25-{n}", lambda: [search(settings, q, mode="bm25", k=10, embedder=pre,
                                                               store=cold) for q in queries])

        # the warm path: what the server (and so the prompt hook) runs, with its in-memory copy of the vectors
        warm_index = None
        if "warm" not in args.skip:
            log("  warm path: search with the server's in-memory vector matrix")
            t0 = time.perf_counter()
            warm_index = SqliteStore(conn, db)
            matrix = warm_index.keep_vectors_in_memory(emb.model_id)
            assert matrix is not None, "the benchmark index has vectors"
            warm: dict = {"matrix_load_s": time.perf_counter() - t0, "matrix_mb": matrix.matrix.nbytes / 2**20}
            # and its BM25 postings, read as the server reads them while idle, slice after slice
            t0, cpu0 = time.perf_counter(), time.process_time()
            lexicon = warm_index.keep_lexicon_in_memory()
            while not lexicon.warm(conn, 0.05):
                pass
            warm["lexicon_warm_s"] = time.perf_counter() - t0
            warm["lexicon_warm_cpu_s"] = time.process_time() - cpu0
            warm["lexicon"] = lexicon.describe()
            warm["lexical_pool50_ms"] = summary(time_each(
                lambda q: lexical_search(warm_index, ParsedQuery.parse(q), Filters(), max(settings.candidates, 10)),
                queries))
            for mode in ("vector", "hybrid"):
                asked = readable if mode == "vector" else queries
                warm[mode] = {"excl_embed_ms": summary(time_each(
                    partial(search, settings, mode=mode, k=10, embedder=pre, store=warm_index), asked))}
                warm[mode]["incl_embed_ms"] = summary(time_each(
                    partial(search, settings, mode=mode, k=10, embedder=emb, store=warm_index), asked))
            warm["vector_ranking_top10_ms"] = summary(time_each(
                lambda q: warm_index.vector_candidates(qv[q], emb.model_id, Filters(), 10), queries))
            out["warm"] = warm

        # components of one search
        choice = ModelChoice(True, emb.model_id, dim=emb.dim)
        pool = max(settings.candidates, 10)
        vr_cpu: list[float] = []
        comp = {
            "health_ms": summary(time_each(lambda q: result_health(cold, choice), queries)),
            "lexical_pool50_ms": summary(time_each(
                lambda q: lexical_search(cold, ParsedQuery.parse(q), Filters(), pool), queries)),
            "vector_ranking_pool50_ms": summary(time_each(
                lambda q: cold.vector_candidates(qv[q], emb.model_id, Filters(), pool), queries)),
            "vector_ranking_top10_ms": summary(time_each(
                lambda q: cold.vector_candidates(qv[q], emb.model_id, Filters(), 10), queries, cpu_out=vr_cpu)),
        }
        comp["vector_ranking_top10_cpu_ms"] = summary(vr_cpu)
        out["components"] = comp

        # references: exact NumPy brute force over the same vectors, recall of the product's vector search
        log("  references: NumPy brute force, recall@10, bare FTS5")
        ids, mat = read_vectors(conn)
        norm = mat / np.linalg.norm(mat, axis=1, keepdims=True)
        qmat = {q: np.frombuffer(qv[q], dtype=np.float32) / np.linalg.norm(np.frombuffer(qv[q], dtype=np.float32))
                for q in queries}
        exact = [set(int(ids[i]) for i in topk_numpy(norm, qmat[q])) for q in queries]
        np_cpu: list[float] = []
        np_ms = time_each(lambda q: topk_numpy(norm, qmat[q]), queries, cpu_out=np_cpu)
        chunk_to_vec = dict(conn.execute(
            "SELECT c.id, e.id FROM chunks c JOIN embeddings e ON e.hash = c.hash AND e.model = ?", (emb.model_id,)))
        def recall_of(index) -> list[float]:
            out = []
            for q, ex in zip(queries, exact):
                got = []
                for cid in chunk_ids(index.vector_candidates(qv[q], emb.model_id, Filters(), 10)):
                    vid = chunk_to_vec.get(cid)
                    if vid is not None and vid not in got:
                        got.append(vid)
                out.append(len(set(got[:10]) & ex) / 10)
            return out

        recalls = recall_of(cold)
        if warm_index is not None:
            out["warm"]["recall_at_10"] = float(np.mean(recall_of(warm_index)))
        out["vectors"] = int(len(ids))
        out["numpy_bruteforce_ms"] = summary(np_ms)
        out["numpy_bruteforce_cpu_ms"] = summary(np_cpu)  # main thread only: BLAS may use more
        out["recall_at_10"] = float(np.mean(recalls))
        out["recall_min"] = float(np.min(recalls))

        # bare FTS5: the same MATCH expressions the product runs (AND, then OR when too few), no join, no filter
        def bare(q: str, limit: int) -> list[int]:
            tt = content_terms(terms(q))
            if not tt:
                return []
            sql = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?"
            got = [r[0] for r in conn.execute(sql, (fts5_query(tt, "AND"), limit))]
            if len(tt) > 1 and len(got) < limit:
                seen = set(got)
                got += [r[0] for r in conn.execute(sql, (fts5_query(tt, "OR"), limit)) if r[0] not in seen]
            return got[:limit]

        fts_cpu: list[float] = []
        out["bare_fts5_top10_ms"] = summary(time_each(lambda q: bare(q, 10), queries, cpu_out=fts_cpu))
        out["bare_fts5_top10_cpu_ms"] = summary(fts_cpu)
        out["bare_fts5_top50_ms"] = summary(time_each(lambda q: bare(q, 50), queries))
    finally:
        conn.close()

    if "variants" not in args.skip:
        log("  vector variants (vec0 bare, mmap, bit[384]/int8 + rescoring)")
        out["vector_variants"] = bench_vector_variants.run(db, ids, mat, [qv[q] for q in queries], exact)
    return out
