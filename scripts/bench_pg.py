"""The team store's section of the benchmark (``python -m scripts.bench --backend postgres``): the same corpus, the
same index with vectors and the same queries as the SQLite figures of the run, on a real PostgreSQL 18 + pgvector.

Per corpus size, in a fresh database of one server (a throwaway one from :mod:`scripts.pg_local`, or ``--pg-url``,
an administrator's URL):

- **indexing**: ``memsearch team init`` (schema, row-level security, the HNSW index of the model), then
  :func:`indexer.sync.sync` of the cached SQLite index with vectors, timed: what a member's first ``memsearch
  index`` pays on top of local indexing (chunks, their tsvectors, the HNSW index kept up to date per insert, the
  vectors taken from the local index, never recomputed). ``chunks/s`` counts chunks synced per wall second; the
  end-to-end rate is local indexing and the sync one after the other. With ``--pg-sync index-after`` the
  administrator's first-import path instead: ``team init --defer-vector-index``, the sync, then ``team init``
  again, which builds the HNSW index in one pass (timed apart; ``chunks/s`` counts both); ``both`` measures the
  two, in two databases, and searches the second;
- **search latency** (bm25, vector, hybrid; excluding query embedding, and hybrid including it) through
  :func:`search_engine.search.search` on an open :class:`~indexer.store.postgres.PgStore`, as the warm server
  searches, with ``ef_search`` from the setting;
- **recall@10** of the product's vector list (the pool hybrid asks for, ``candidates``, and the top 10 alone)
  against the exact top 10 by cosine over the same vectors (NumPy, the SQLite reference), per content hash; with the
  curve over ``ef_search`` values;
- sizes: the tables and the HNSW index on disk.

The server runs with fsync on (the defaults of a real one) and ``shared_buffers`` large enough to hold the corpus, as
an administrator would size it; ``ANALYZE`` runs after the sync, as autovacuum would soon after.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import numpy as np

from scripts.bench_build import cpu_seconds, log, precomputed
from scripts.bench_search import topk_numpy
from scripts.pg_team import Server
from scripts.stats import summary, time_each

#: ``ef_search`` values of the recall curve (the setting's value is always measured too).
EF_CURVE = (10, 40, 100, 200, 400)
#: The throwaway server's settings: a real server's durability (fsync on), memory for the corpus.
#: ``maintenance_work_mem`` is what the one-pass HNSW build may hold in memory (a cap: 100k vectors take ~0.2 GB,
#: 1M ~2.5 GB); a graph larger than it is built on disk, much slower.
SERVER_OPTIONS = {"shared_buffers": "1GB", "maintenance_work_mem": "3GB", "max_connections": "20",
                  "max_wal_size": "4GB"}


def _admin_query(admin_url: str, query: str, params: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def _exact_by_hash(db: Path, model: str) -> tuple[list[str], np.ndarray]:
    """(content hashes, unit vectors) of every vector of the local index."""
    from indexer.store import sqlite as store

    conn = store.connect(db)
    try:
        rows = conn.execute("SELECT e.hash, v.embedding FROM embeddings e JOIN vec_chunks v ON v.rowid = e.id"
                            " WHERE e.model = ?", (model,)).fetchall()
    finally:
        conn.close()
    blobs = [r[1] for r in rows]
    mat = np.frombuffer(b"".join(b for b in blobs if isinstance(b, bytes)), dtype=np.float32).reshape(len(rows), -1)
    return [str(r[0]) for r in rows], mat / np.linalg.norm(mat, axis=1, keepdims=True)


def _timed_sync(server: Server, database: str, root: Path, db: Path, emb, n: int, *,
                index_after: bool) -> tuple[dict, str, str]:
    """A fresh team database, and the timed sync of the local index ``db`` into it; with ``index_after``, the HNSW
    index is left out and built afterwards (timed apart). Returns (the record, the admin's URL, the member's)."""
    from indexer.base.settings import resolve_settings
    from indexer.store.postgres import PgStore, apply_team_init
    from indexer.sync import sync

    admin_url, url = server.fresh_database(database, None if index_after else emb.model_id, emb.dim)
    settings = resolve_settings(root, db_path=db, db_url=url)
    how = "then the HNSW index built in one pass" if index_after else "the HNSW index kept up to date"
    log(f"  postgres: sync of the {n:,}-chunk index into an empty team store ({how})")
    team = PgStore(url, max_size=4, timeout=30)
    try:
        c0, t0 = cpu_seconds(), time.perf_counter()
        report = sync(settings, team=team, machine="bench")
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    finally:
        team.close()
    record = {"seconds": wall, "client_cpu_seconds": cpu, "chunks": report.chunks_added,
              "sources": report.sources_sent, "vectors": report.vectors_sent,
              "vectors_pending": report.vectors_pending, "chunks_per_s": report.chunks_added / wall}
    log(f"  {report.chunks_added:,} chunks, {report.vectors_sent:,} vectors in {wall:.1f}s "
        f"({report.chunks_added / wall:,.0f} chunks/s)")
    if index_after:
        t0 = time.perf_counter()
        apply_team_init(admin_url, [], [(emb.model_id, emb.dim)])
        build = time.perf_counter() - t0
        record.update(sync_seconds=wall, index_build_seconds=build, seconds=wall + build,
                      chunks_per_s=report.chunks_added / (wall + build))
        log(f"  HNSW index built in {build:.1f}s: {record['chunks_per_s']:,.0f} chunks/s with the sync")
    return record, admin_url, url


def pg_section(args, server: Server, n: int, root: Path, db: Path, emb, queries: list[str]) -> dict:
    from indexer.base.settings import resolve_settings
    from indexer.store.postgres import PgStore
    from indexer.sync import sync
    from search_engine.filters import Filters
    from search_engine.lexical import lexical_search
    from search_engine.query import ParsedQuery
    from search_engine.search import search

    out: dict = {"server": "local throwaway" if server.local else "--pg-url",
                 "server_options": SERVER_OPTIONS if server.local else None, "sync_mode": args.pg_sync}
    database = f"memsearch_bench_{n}"
    if args.pg_sync == "both":  # the HNSW index kept up to date per insert, in a database of its own
        out["sync_maintained"] = _timed_sync(server, f"{database}_maintained", root, db, emb, n, index_after=False)[0]
        server.drop_database(f"{database}_maintained")
    after = args.pg_sync != "maintained"
    record, admin_url, url = _timed_sync(server, database, root, db, emb, n, index_after=after)
    out["sync"] = record
    if after:
        out["sync_index_after"] = record
    else:
        out["sync_maintained"] = record
    settings = resolve_settings(root, db_path=db, db_url=url)
    out["ef_search"] = settings.ef_search
    team = PgStore(url, max_size=4, timeout=30)
    try:
        t0 = time.perf_counter()
        again = sync(settings, team=team, machine="bench")
        out["sync_noop"] = {"seconds": time.perf_counter() - t0, "sources_unchanged": again.sources_unchanged,
                            "chunks": again.chunks_added}
        _admin_query(admin_url, "ANALYZE")
        sizes = dict(_admin_query(admin_url, "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c"
                                  " JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = 'memsearch'"
                                  " AND c.relkind IN ('r', 'i')"))
        out["bytes"] = {"chunks_table": sizes.get("chunks"), "vectors_table": sizes.get("vectors"),
                        "hnsw_index": next((v for k, v in sizes.items() if k.startswith("vectors_hnsw_")), None),
                        "database": _admin_query(admin_url, "SELECT pg_database_size(current_database())")[0][0]}

        qv = {q: emb.embed_query(q) for q in queries}
        pre, readable = precomputed(emb, queries, qv)
        pool = settings.candidates
        log("  postgres: recall@10 of the HNSW list against the exact top 10")
        hashes, mat = _exact_by_hash(db, emb.model_id)
        exact = [{hashes[i] for i in topk_numpy(mat, np.frombuffer(qv[q], dtype=np.float32)
                                                / np.linalg.norm(np.frombuffer(qv[q], dtype=np.float32)))}
                 for q in queries]
        hash_of = dict(_admin_query(admin_url, "SELECT id, hash FROM memsearch.chunks"))

        def recall(ef: int, limit: int) -> dict:
            per_query, ms = [], []
            for q, ex in zip(queries, exact):
                t0 = time.perf_counter()
                found = team.vector_candidates(qv[q], emb.model_id, Filters(), limit, ef_search=ef)
                ms.append((time.perf_counter() - t0) * 1000)
                top = list(dict.fromkeys(hash_of[s.id] for s in found))[:10]
                per_query.append(len(set(top) & ex) / 10)
            return {"recall_at_10": float(np.mean(per_query)), "recall_min": float(np.min(per_query)),
                    "ms": summary(ms)}

        out["recall"] = recall(settings.ef_search, pool)
        out["recall_top10_only"] = recall(settings.ef_search, 10)
        out["recall_curve"] = {ef: {"pool": recall(ef, pool), "top10_only": recall(ef, 10)}
                               for ef in sorted({*EF_CURVE, settings.ef_search})}
        log(f"  recall@10 {out['recall']['recall_at_10']:.3f} (ef_search {settings.ef_search}, list of {pool})")
        modes: dict = {}
        for mode in ("bm25", "vector", "hybrid"):
            asked = readable if mode == "vector" else queries
            log(f"  postgres: search latency {mode} ({len(asked)} queries)")
            modes[mode] = {"excl_embed_ms": summary(time_each(
                partial(search, settings, mode=mode, k=10, embedder=pre, store=team), asked))}
        modes["hybrid"]["incl_embed_ms"] = summary(time_each(
            partial(search, settings, mode="hybrid", k=10, embedder=emb, store=team), queries))
        modes["hybrid"]["mode_used"] = search(settings, queries[0], mode="hybrid", k=10, embedder=pre,
                                              store=team).mode_used
        out["modes"] = modes
        out["components"] = {
            "lexical_pool_ms": summary(time_each(
                lambda q: lexical_search(team, ParsedQuery.parse(q), Filters(), pool), queries)),
            "vector_pool_ms": summary(time_each(
                lambda q: team.vector_candidates(qv[q], emb.model_id, Filters(), pool,
                                                 ef_search=settings.ef_search), queries)),
        }

    finally:
        team.close()
    if not args.keep_pg:
        server.drop_database(database)
    return out


def print_backends(res: dict) -> None:
    """The two backends side by side, per size: indexing, hybrid latency, recall@10."""
    sizes = [n for n, r in res["sizes"].items() if "postgres" in r]
    if not sizes:
        return
    print()
    print("SQLite and PostgreSQL + pgvector, same corpus, index and queries, same run")
    for n in sizes:
        r = res["sizes"][n]
        pg, lite = r["postgres"], r.get("search", {})
        emb = r.get("embedded_index", {})
        print(f"\n{int(n):,} chunks{'':37}{'SQLite':>14}{'PostgreSQL':>14}")

        def row(label, a, b, spec=",.1f"):
            cell = [("-" if v is None else format(v, spec)) for v in (a, b)]
            print(f"  {label:48}{cell[0]:>14}{cell[1]:>14}")

        bm = r.get("bm25_index", {})
        row("index BM25 only (local), chunks/s", bm.get("chunks_per_s"), None, ",.0f")
        row("index with vectors (local), chunks/s" + (" *" if emb.get("cached") else ""),
            emb.get("chunks_per_s"), None, ",.0f")
        kept, after = pg.get("sync_maintained"), pg.get("sync_index_after")
        if kept:
            row("sync, HNSW index kept up to date, chunks/s", None, kept["chunks_per_s"], ",.0f")
        if after:
            row("sync, then the HNSW index built, chunks/s", None, after["chunks_per_s"], ",.0f")
            split = f"{after['sync_seconds']:.0f} / {after['index_build_seconds']:.0f}"
            print(f"  {'  the sync alone / the index build, s':48}{'-':>14}{split:>14}")
        local = emb.get("chunks_per_s")
        end = 1 / (1 / local + 1 / pg["sync"]["chunks_per_s"]) if local else None
        row("index + sync, end to end, chunks/s", local, end, ",.0f")
        row("no-op sync, s", None, pg["sync_noop"]["seconds"], ".2f")
        for mode in ("bm25", "vector", "hybrid"):
            a = lite.get("modes", {}).get(mode, {}).get("excl_embed_ms", {})
            b = pg["modes"][mode]["excl_embed_ms"]
            row(f"{mode} p50 ms (excl. query embedding)", a.get("p50"), b["p50"], ".1f")
            row(f"{mode} p95 ms", a.get("p95"), b["p95"], ".1f")
        a = lite.get("modes", {}).get("hybrid", {}).get("incl_embed_ms", {})
        b = pg["modes"]["hybrid"]["incl_embed_ms"]
        row("hybrid p50 / p95 ms incl. embedding: p50", a.get("p50"), b["p50"], ".1f")
        row("                                     p95", a.get("p95"), b["p95"], ".1f")
        row(f"recall@10 vs exact (ef_search {pg['ef_search']}, list of 50)", lite.get("recall_at_10"),
            pg["recall"]["recall_at_10"], ".3f")
        row("recall@10, top 10 alone", None, pg["recall_top10_only"]["recall_at_10"], ".3f")
        row("  worst query", lite.get("recall_min"), pg["recall"]["recall_min"], ".2f")
        row("DB MB (PostgreSQL: whole database)", emb.get("db_bytes", 0) / 2**20 if emb.get("db_bytes") else None,
            pg["bytes"]["database"] / 2**20, ",.0f")
        row("  HNSW index MB", None, (pg["bytes"]["hnsw_index"] or 0) / 2**20, ",.0f")
        print("  recall@10 by ef_search (list of 50 / top 10 alone; p50 ms of the top-10 query):")
        for ef, c in pg["recall_curve"].items():
            print(f"    ef_search {int(ef):>4}: {c['pool']['recall_at_10']:.3f} / {c['top10_only']['recall_at_10']:.3f}"
                  f"   {c['top10_only']['ms']['p50']:.1f} ms")
    print("  * the local index with vectors is cached from an earlier run (at 100k+ its vectors are recycled, "
          "see bench_build.py)")
