#!/usr/bin/env python
"""memsearch benchmark suite (``make bench``). A benchmark, not a test: it measures, prints, and never fails on a
missed target (exit 0 unless something crashed).

What it measures, per corpus size (1k, 10k, 100k chunks; 1M with --huge), on corpora generated from the public
evaluation texts in ../shared/eval (see bench_corpus.py):

- indexing throughput (chunks/s): BM25 only (embedder=None), and with embeddings from the bundled model;
- search latency p50/p95 per mode (bm25, vector, hybrid), in-process, excluding and including query embedding,
  with the components (health, BM25 list, vector list) timed apart;
- references in the same run: raw fastembed on the same texts and batch size, exact NumPy brute-force top-10
  over the same vectors, recall@10 of the product's vector search against it, a bare FTS5 query on the same
  table, and vector variants (vec0 bare SQL, mmap, binary and int8 quantization with float rescoring);
- cold processes: the prompt hook (``memsearch-hook prompt``, on a scratch copy) BM25 cold and through a
  running ``memsearch serve`` (hybrid warm), with the hook's and the server's peak RSS; ``memsearch search
  --mode bm25`` and hybrid as CLI processes; CLI index RSS; database size per 1,000 chunks;
- the no-op reindex of 10,000 unchanged files.

Embedding is slow on a small CPU, so indexes with vectors are cached under --work: sizes up to
--embed-fresh-max are re-embedded (and timed against raw fastembed) every run, larger ones are built once and
reused; sizes above --embed-real-max get "recycled" vectors (real MiniLM vectors of the smaller corpus plus
noise; see bench_build.py) so vector latency and recall can still be measured at 100k and 1M.

Outputs: a table on stdout, bench-results/bench.json, bench-results/latency.png, and with --profile cProfile
reports under bench-results/profiles/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from scripts.bench_build import (
    BUILD_VERSION,
    db_bytes,
    ensure_embedded,
    log,
    read_vectors,
    remove_db,
    timed_index,
)
from scripts.bench_cold import baselines, noop_section, process_section
from scripts.bench_corpus import CORPUS_VERSION, build_corpus, load_sources, query_set
from scripts.bench_profile import profiled
from scripts.bench_report import TARGETS, evaluate_targets, plot, print_report
from scripts.bench_search import search_section

REPO = Path(__file__).resolve().parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000", help="corpus sizes in chunks, comma-separated")
    p.add_argument("--huge", action="store_true", help="also 1,000,000 chunks (recycled vectors)")
    p.add_argument("--queries", type=int, default=200, help="queries per latency measurement")
    p.add_argument("--hook-runs", type=int, default=100,
                   help="cold hook processes per size (a p95 of 30 runs is their second largest: one stall decides it)")
    p.add_argument("--hybrid-cli-runs", type=int, default=5, help="cold `memsearch search` hybrid processes per size")
    p.add_argument("--hook-cmd", default="auto",
                   help="prompt hook command line measured beside the stand-in `memsearch search Q --mode bm25 "
                        "--json` ({query}, {home} substituted; UserPromptSubmit JSON on stdin; run on a scratch "
                        "copy of corpus and index). 'auto': this environment's `memsearch-hook prompt` (what "
                        "`memsearch install` and the plugin's hooks/run.sh run); 'none': the stand-in only")
    p.add_argument("--noop-files", type=int, default=10000)
    p.add_argument("--noop-runs", type=int, default=5)
    p.add_argument("--embed-fresh-max", type=int, default=1000,
                   help="sizes up to this are re-embedded and timed against raw fastembed every run")
    p.add_argument("--embed-real-max", type=int, default=10000,
                   help="sizes above this get recycled vectors instead of running the model on every chunk")
    p.add_argument("--raw-sample", type=int, default=2000,
                   help="texts for the raw fastembed reference when an index is first built (fresh builds use all)")
    p.add_argument("--rebuild", action="store_true", help="ignore cached indexes with vectors")
    p.add_argument("--skip", default="", help="comma list of sections to skip: bm25,embed,search,warm,process,noop,variants,privacy,plot")
    p.add_argument("--profile", action="store_true", help="write cProfile reports to <out>/profiles/")
    p.add_argument("--scifact", action="store_true",
                   help="also index the whole SciFact corpus with the model in its own process: its peak RSS against "
                        "the 1 GB goal (tens of minutes on 2 cores; alone: python -m scripts.bench_scifact)")
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite",
                   help="postgres: also the team store on PostgreSQL + pgvector, next to SQLite's figures of the same "
                        "run (see bench_pg.py; needs the team extra)")
    p.add_argument("--pg-url", default=None,
                   help="with --backend postgres: an administrator's URL of the server to use (a fresh database is "
                        "made per size); default: a throwaway local server (scripts/pg_local.py)")
    p.add_argument("--pg-sync", choices=("maintained", "index-after", "both"), default="maintained",
                   help="with --backend postgres: sync into a store with the HNSW index (kept up to date per insert, "
                        "what a member's sync pays), or without it and the index built after (the administrator's "
                        "first import: `team init --defer-vector-index`), or both (searches run on the second)")
    p.add_argument("--keep-pg", action="store_true", help="keep the benchmark's databases on --pg-url")
    p.add_argument("--out", default=str(REPO / "bench-results"))
    p.add_argument("--work", default=None, help="cache of corpora and indexes (default <out>/work)")
    args = p.parse_args(argv)
    args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()} | ({1_000_000} if args.huge else set()))
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    args.out = Path(args.out).resolve()
    args.work = Path(args.work).resolve() if args.work else args.out / "work"
    if args.hook_cmd == "auto":
        script = Path(sys.executable).with_name("memsearch-hook")  # what `memsearch install` and hooks/run.sh run
        args.hook_cmd = f"{script} prompt" if script.exists() else None
    elif args.hook_cmd in ("none", ""):
        args.hook_cmd = None
    return args


# -- main --------------------------------------------------------------------------------------------------------

SOURCES = None


def real_vector_pool(args, emb, done: dict) -> np.ndarray:
    """Real vectors to recycle: from the largest real-vector index built so far (or cached)."""
    from indexer.store import sqlite as store

    cands = sorted(args.work.glob("db/emb-*-real.db"), key=lambda p: int(p.name.split("-")[1]))
    if not cands:
        root = args.work / f"corpus-v{CORPUS_VERSION}-1000"
        assert SOURCES is not None  # loaded by main()
        build_corpus(root, 1000, SOURCES)
        ensure_embedded(args.work, 1000, root, emb, fresh=False, raw_max=0, real=True)
        cands = sorted(args.work.glob("db/emb-*-real.db"))
    conn = store.connect(cands[-1])
    try:
        _, mat = read_vectors(conn)
    finally:
        conn.close()
    log(f"recycled-vector pool: {len(mat)} real vectors from {cands[-1].name}")
    return mat


def main(argv=None) -> int:
    global SOURCES
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.work / "db").mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("XDG_CACHE_HOME", str(args.work / "cache"))
    os.environ.pop("MEMSEARCH_DB", None)
    # cold processes should start the way they do on a user's machine: with cached bytecode. Where the
    # environment forbids writing .pyc files, every cold start recompiles the sources (~50-100 ms of 'hook' time).
    pyc_was_off = os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None
    from indexer.base.embedder import load_embedder
    from indexer.base.settings import resolve_settings

    exe = str(Path(sys.executable).parent / "memsearch")
    res: dict = {
        "meta": {
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": sys.argv[1:], "python": platform.python_version(),
            "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "loadavg_start": os.getloadavg()[0], "corpus_version": CORPUS_VERSION, "build_version": BUILD_VERSION,
            "targets": TARGETS, "cache": os.environ["XDG_CACHE_HOME"],
            "pythondontwritebytecode_removed": pyc_was_off,
        },
        "sizes": {},
    }
    try:
        import apsw
        import fastembed
        import onnxruntime
        import sqlite_vec

        res["meta"]["versions"] = {"fastembed": fastembed.__version__, "onnxruntime": onnxruntime.__version__,
                                   "sqlite": apsw.sqlite_lib_version(), "apsw": apsw.apsw_version()}
        res["meta"]["versions"]["sqlite_vec"] = getattr(sqlite_vec, "__version__", "?")
    except Exception:  # versions are informative only
        pass
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                res["meta"]["cpu"] = line.split(":", 1)[1].strip()
                break

    SOURCES = load_sources()
    queries = query_set(SOURCES, args.queries)
    res["meta"]["queries"] = len(queries)
    log("loading the bundled model")
    emb = load_embedder(resolve_settings(args.work))
    emb.embed_query("warm up")
    pg_server = None
    if args.backend == "postgres":
        from scripts.bench_pg import SERVER_OPTIONS
        from scripts.pg_team import Server

        pg_server = Server(args.pg_url, SERVER_OPTIONS)
    try:
        run_sizes(args, res, emb, queries, exe, pg_server)
    finally:
        if pg_server is not None:
            pg_server.stop()
    return report(args, res, emb, exe)


def run_sizes(args, res: dict, emb, queries: list[str], exe, pg_server) -> None:
    assert SOURCES is not None  # loaded by main()
    pool = None
    for n in args.sizes:
        log(f"== {n:,} chunks")
        r: dict = {}
        root = args.work / f"corpus-v{CORPUS_VERSION}-{n}"
        t0 = time.perf_counter()
        r["corpus"] = build_corpus(root, n, SOURCES)
        r["corpus"]["seconds"] = time.perf_counter() - t0
        r["corpus"]["root"] = str(root)

        if "bm25" not in args.skip:  # a fresh BM25-only index, timed (at 1M: ~10 min)
            log("  BM25-only index (fresh)")
            from indexer.base.settings import resolve_settings as rs

            db_b = args.work / "db" / f"bm25-{n}.db"
            remove_db(db_b)
            b = timed_index(rs(root, db_path=db_b), None)
            b["chunks_per_s"] = b["chunks"] / b["seconds"]
            b["chunks_per_cpu_s"] = b["chunks"] / b["cpu_seconds"]
            b["loadavg"] = os.getloadavg()[0]
            b["db_bytes"] = db_bytes(db_b)
            r["bm25_index"] = b
            log(f"  {b['chunks']} chunks in {b['seconds']:.2f}s = {b['chunks_per_s']:.0f}/s")
            if args.profile and n == (10000 if 10000 in args.sizes else min(args.sizes)):
                remove_db(db_b)
                profiled(args, f"index-bm25-{n}", lambda root=root, db_b=db_b: timed_index(rs(root, db_path=db_b), None))
            remove_db(db_b)

        if "embed" not in args.skip:
            real = n <= args.embed_real_max
            fresh = (n <= args.embed_fresh_max) or args.rebuild
            if not real and pool is None:
                pool = real_vector_pool(args, emb, res["sizes"])
            db_e, rec = ensure_embedded(args.work, n, root, emb, fresh=fresh,
                                        raw_max=(10 ** 9 if fresh else args.raw_sample), real=real, pool=pool)
            r["embedded_index"] = rec
            r["embedded_index"]["db"] = str(db_e)
            if "search" not in args.skip:
                r["search"] = search_section(args, n, root, db_e, emb, queries)
            if pg_server is not None:
                from scripts.bench_pg import pg_section

                r["postgres"] = pg_section(args, pg_server, n, root, db_e, emb, queries)
            if "process" not in args.skip:
                r["process"] = process_section(args, n, root, db_e, queries, str(exe))
        res["sizes"][n] = r
        (args.out / "bench.partial.json").write_text(json.dumps(res, indent=1, default=str))


def report(args, res: dict, emb, exe) -> int:
    pool = None
    if "noop" not in args.skip:
        if pool is None:
            pool = real_vector_pool(args, emb, res["sizes"])
        res["noop"] = noop_section(args, emb, pool, exe, SOURCES)
    if "process" not in args.skip:
        res["baselines"] = baselines(exe)
    if "privacy" not in args.skip:
        from scripts.bench_privacy import privacy_section

        log("privacy filter cost")
        res["privacy"] = privacy_section()
        for name, r in res["privacy"].items():
            log(f"  {name}: {r} " + ("ms" if name == "import_ms" else ""))
    if args.scifact:
        from scripts.bench_scifact import scifact_index

        log("indexing the whole SciFact corpus with the model (`memsearch index`)")
        res["scifact_index"] = scifact_index(args.work, exe)
        log(f"  {res['scifact_index']}")
    res["meta"]["loadavg_end"] = os.getloadavg()[0]
    res["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    res["targets"] = evaluate_targets(res)
    (args.out / "bench.json").write_text(json.dumps(res, indent=1, default=str))
    (args.out / "bench.partial.json").unlink(missing_ok=True)
    print_report(res)
    if args.backend == "postgres":
        from scripts.bench_pg import print_backends

        print_backends(res)
    if "plot" not in args.skip:
        try:
            plot(res, args.out / "latency.png")
            print(f"\nwrote {args.out / 'bench.json'} and {args.out / 'latency.png'}")
        except ImportError:
            print(f"\nwrote {args.out / 'bench.json'}; no plot: pip install -e '.[bench]' for matplotlib")
    else:
        print(f"\nwrote {args.out / 'bench.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
