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
- cold processes: the prompt hook (``python -m hooks.entry prompt``, on a scratch copy) BM25 cold and through a
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
import cProfile
import io
import json
import os
import platform
import pstats
import shutil
import sys
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
sys.path.insert(0, str(SCRIPTS))

import numpy as np  # noqa: E402
from bench_build import (  # noqa: E402
    BUILD_VERSION,
    PrecomputedEmbedder,
    RecycledEmbedder,
    db_bytes,
    emb_db_path,
    ensure_embedded,
    log,
    read_vectors,
    remove_db,
    timed_index,
)
from bench_corpus import CORPUS_VERSION, build_corpus, build_noop_corpus, load_sources, query_set  # noqa: E402
from bench_proc import (  # noqa: E402
    cli_search_hook,
    interpreter_floor,
    measure_command,
    run_process,
    template_hook,
)
from bench_stats import summary, time_each  # noqa: E402

TARGETS = {
    "embed_index_vs_raw": 0.85,
    "bm25_index_cps": 5000.0,
    "noop_seconds": 1.0,
    "vector_vs_numpy": 2.0,
    "recall_at_10": 0.97,
    "hybrid_p50_ms": 40.0,
    "hook_p95_ms": 150.0,
    #: the prompt hook's p95 over the interpreter floor's (python -c "import json, socket", measured pair by pair)
    "hook_warm_floor_x": 2.5,
    "hook_cold_floor_x": 4.0,
    "hook_rss_mb": 100.0,
}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000", help="corpus sizes in chunks, comma-separated")
    p.add_argument("--huge", action="store_true", help="also 1,000,000 chunks (recycled vectors)")
    p.add_argument("--queries", type=int, default=200, help="queries per latency measurement")
    p.add_argument("--hook-runs", type=int, default=30, help="cold hook processes per size")
    p.add_argument("--hybrid-cli-runs", type=int, default=5, help="cold `memsearch search` hybrid processes per size")
    p.add_argument("--hook-cmd", default="auto",
                   help="prompt hook command line measured beside the stand-in `memsearch search Q --mode bm25 "
                        "--json` ({query}, {home} substituted; UserPromptSubmit JSON on stdin; run on a scratch "
                        "copy of corpus and index). 'auto': `python -m hooks.entry prompt` when hooks/entry.py "
                        "exists; 'none': the stand-in only")
    p.add_argument("--noop-files", type=int, default=10000)
    p.add_argument("--noop-runs", type=int, default=5)
    p.add_argument("--embed-fresh-max", type=int, default=1000,
                   help="sizes up to this are re-embedded and timed against raw fastembed every run")
    p.add_argument("--embed-real-max", type=int, default=10000,
                   help="sizes above this get recycled vectors instead of running the model on every chunk")
    p.add_argument("--raw-sample", type=int, default=2000,
                   help="texts for the raw fastembed reference when an index is first built (fresh builds use all)")
    p.add_argument("--rebuild", action="store_true", help="ignore cached indexes with vectors")
    p.add_argument("--skip", default="", help="comma list of sections to skip: embed,search,process,noop,variants,privacy,plot")
    p.add_argument("--profile", action="store_true", help="write cProfile reports to <out>/profiles/")
    p.add_argument("--out", default=str(REPO / "bench-results"))
    p.add_argument("--work", default=None, help="cache of corpora and indexes (default <out>/work)")
    args = p.parse_args(argv)
    args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()} | ({1_000_000} if args.huge else set()))
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    args.out = Path(args.out).resolve()
    args.work = Path(args.work).resolve() if args.work else args.out / "work"
    if args.hook_cmd == "auto":
        args.hook_cmd = f"{sys.executable} -m hooks.entry prompt" if (REPO / "hooks" / "entry.py").exists() else None
    elif args.hook_cmd in ("none", ""):
        args.hook_cmd = None
    return args


# -- profiling -----------------------------------------------------------------------------------------------


def profiled(args, name: str, fn):
    """Run ``fn`` under cProfile when --profile; writes <out>/profiles/<name>.{pstats,txt}."""
    if not args.profile:
        return fn()
    prof = cProfile.Profile()
    result = prof.runcall(fn)
    d = args.out / "profiles"
    d.mkdir(parents=True, exist_ok=True)
    prof.dump_stats(str(d / f"{name}.pstats"))
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf).strip_dirs()
    st.sort_stats("cumulative").print_stats(30)
    st.sort_stats("tottime").print_stats(25)
    (d / f"{name}.txt").write_text(buf.getvalue())
    log(f"  profile written: {d / (name + '.txt')}")
    return result


# -- sections ------------------------------------------------------------------------------------------------


def chunk_ids(rows) -> list[int]:
    """The chunk ids of a store's vector candidates."""
    return [r.id for r in rows]


def topk_numpy(mat: np.ndarray, q: np.ndarray, k: int = 10) -> np.ndarray:
    sims = mat @ q
    top = np.argpartition(-sims, k)[:k]
    return top[np.argsort(-sims[top])]


def search_section(args, n: int, root: Path, db: Path, emb, queries: list[str]) -> dict:
    import bench_vector_variants

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
        pre = PrecomputedEmbedder(emb.model_id, emb.dim, qv)
        modes: dict = {}
        for mode in ("bm25", "vector", "hybrid"):
            log(f"  search latency {mode} ({len(queries)} queries)")
            cpu: list[float] = []
            excl = time_each(lambda q, m=mode: search(settings, q, mode=m, k=10, embedder=pre, store=cold), queries,
                             cpu_out=cpu)
            modes[mode] = {"excl_embed_ms": summary(excl), "excl_embed_cpu_ms": summary(cpu)}
            if mode == "bm25":
                modes[mode]["incl_embed_ms"] = modes[mode]["excl_embed_ms"]
            else:
                incl = time_each(lambda q, m=mode: search(settings, q, mode=m, k=10, embedder=emb, store=cold), queries)
                modes[mode]["incl_embed_ms"] = summary(incl)
        hits = search(settings, queries[0], mode="hybrid", k=10, embedder=pre, store=cold)
        modes["hybrid"]["mode_used"] = hits.mode_used
        out["modes"] = modes

        if args.profile and n == max(args.sizes):
            profiled(args, f"search-hybrid-{n}", lambda: [search(settings, q, mode="hybrid", k=10, embedder=pre,
                                                                 store=cold) for q in queries])
            profiled(args, f"search-vector-{n}", lambda: [search(settings, q, mode="vector", k=10, embedder=pre,
                                                                 store=cold) for q in queries])
            profiled(args, f"search-bm25-{n}", lambda: [search(settings, q, mode="bm25", k=10, embedder=pre,
                                                               store=cold) for q in queries])

        # the warm path: what the server (and so the prompt hook) runs, with its in-memory copy of the vectors
        log("  warm path: search with the server's in-memory vector matrix")
        t0 = time.perf_counter()
        warm_index = SqliteStore(conn, db)
        matrix = warm_index.keep_vectors_in_memory(emb.model_id)
        warm: dict = {"matrix_load_s": time.perf_counter() - t0, "matrix_mb": matrix.matrix.nbytes / 2**20}
        for mode in ("vector", "hybrid"):
            warm[mode] = {"excl_embed_ms": summary(time_each(
                lambda q, m=mode: search(settings, q, mode=m, k=10, embedder=pre, store=warm_index), queries))}
            warm[mode]["incl_embed_ms"] = summary(time_each(
                lambda q, m=mode: search(settings, q, mode=m, k=10, embedder=emb, store=warm_index), queries))
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


def warm_hook(exe: str, plugged, queries: list[str], runs: int, env: dict[str, str]) -> tuple[dict, dict]:
    """The prompt hook while ``memsearch serve`` runs (model loaded, vectors in memory): the hybrid warm path.
    Also the server's own peak RSS (VmHWM) and how long it took to answer its first ping."""
    import subprocess

    memsearch = str(Path(exe).parent / "memsearch")
    env = {k: v for k, v in env.items() if k != "MEMSEARCH_NO_SERVER"}
    started = time.perf_counter()
    server = subprocess.Popen([memsearch, "serve", "--idle-timeout", "900"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while subprocess.run([memsearch, "serve", "--status"], env=env, capture_output=True).returncode != 0:
            if server.poll() is not None or time.perf_counter() - started > 300:
                raise RuntimeError("memsearch serve did not come up")
            time.sleep(0.1)
        ready_s = time.perf_counter() - started
        result = measure_command(plugged, queries, runs, env, floor=interpreter_floor(sys.executable))
        status = Path(f"/proc/{server.pid}/status").read_text()
        hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
        return result, {"ready_s": ready_s, "peak_rss_mb": hwm / 1024}
    finally:
        subprocess.run([memsearch, "serve", "--stop"], env=env, capture_output=True)
        server.wait(timeout=60)


def process_section(args, n: int, root: Path, db: Path, queries: list[str], exe: str) -> dict:
    env = dict(os.environ, MEMSEARCH_DB=str(db), MEMSEARCH_HOME=str(root))
    out: dict = {}
    hook = cli_search_hook(exe, root, "bm25")
    log(f"  hook stand-in: {args.hook_runs} cold processes of `{hook.name}`")
    out["loadavg_before"] = os.getloadavg()[0]
    out["hook"] = measure_command(hook, queries, args.hook_runs, env)
    if args.hook_cmd:
        # a real prompt hook records the prompt (appends to events/, ingests it): run it on a scratch copy so the
        # cached corpus and index stay untouched
        scratch = args.work / "scratch"
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(root, scratch / "home", ignore=shutil.ignore_patterns(".memsearch"))
        db_bytes(db)  # checkpoint so the copy is complete
        shutil.copy2(db, scratch / "index.db")
        plugged = template_hook(args.hook_cmd, scratch / "home")
        log(f"  plugged hook: {args.hook_runs} cold processes of `{plugged.name}` (on a scratch copy)")
        penv = dict(env, MEMSEARCH_DB=str(scratch / "index.db"), MEMSEARCH_HOME=str(scratch / "home"))
        out["hook_plugged"] = measure_command(plugged, queries, args.hook_runs, dict(penv, MEMSEARCH_NO_SERVER="1"),
                                              floor=interpreter_floor(sys.executable))
        log(f"  plugged hook through the warm server: {args.hook_runs} cold processes (server on the scratch copy)")
        out["hook_warm"], out["server"] = warm_hook(exe, plugged, queries, args.hook_runs, penv)
        shutil.rmtree(scratch, ignore_errors=True)
    if args.hybrid_cli_runs:
        log(f"  CLI hybrid search: {args.hybrid_cli_runs} cold processes")
        out["cli_search_hybrid"] = measure_command(cli_search_hook(exe, root, "hybrid"), queries,
                                                   args.hybrid_cli_runs, env, warmup=1)
    if args.profile and n == max(args.sizes):
        d = args.out / "profiles"
        d.mkdir(parents=True, exist_ok=True)
        prof = d / f"hook-process-{n}.pstats"
        run_process([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "search_engine.cli.main", "search",
                     queries[0], "--mode", "bm25", "--json", "--home", str(root)], env=env)
        buf = io.StringIO()
        st = pstats.Stats(str(prof), stream=buf).strip_dirs()
        st.sort_stats("cumulative").print_stats(35)
        (d / f"hook-process-{n}.txt").write_text(buf.getvalue())
        r = run_process([sys.executable, "-X", "importtime", "-m", "search_engine.cli.main", "search", queries[0],
                         "--mode", "bm25", "--json", "--home", str(root)], env=env)
        (d / f"hook-importtime-{n}.txt").write_text(r.stderr.decode(errors="replace"))
    if n <= 100_000:
        tmp_db = args.work / "db" / f"cli-index-{n}.db"
        remove_db(tmp_db)
        r = run_process([exe, "index", "--json", "--model", "none", "--home", str(root)],
                        env=dict(env, MEMSEARCH_DB=str(tmp_db)), timeout=3600)
        out["cli_index_bm25"] = {"seconds": r.seconds, "max_rss_mb": r.max_rss_mb, "returncode": r.returncode}
        if r.returncode == 0 and "embed" not in args.skip and n == min(args.sizes):
            # with the model: one event file (~70 chunks) is enough to see the model's memory
            first = sorted((root / "events").glob("*.jsonl"))[0]
            r2 = run_process([exe, "index", str(first), "--json", "--home", str(root)],
                             env=dict(env, MEMSEARCH_DB=str(tmp_db)), timeout=3600)
            rep = json.loads(r2.stdout or b"{}") if r2.returncode == 0 else {}
            out["cli_index_embed"] = {"seconds": r2.seconds, "max_rss_mb": r2.max_rss_mb,
                                      "returncode": r2.returncode, "chunks_embedded": rep.get("chunks_embedded")}
        remove_db(tmp_db)
    return out


def noop_section(args, emb, pool: np.ndarray, exe: str) -> dict:
    from indexer.base.settings import resolve_settings

    root = args.work / f"noop-v{CORPUS_VERSION}-{args.noop_files}"
    log(f"no-op reindex: {args.noop_files} note files")
    build_noop_corpus(root, args.noop_files, SOURCES)
    db = emb_db_path(args.work, args.noop_files, emb.model_id, "noop")
    settings = resolve_settings(root, db_path=db)
    out: dict = {"files": args.noop_files}
    if not db.exists() or args.rebuild:
        remove_db(db)
        # the no-op path never reads vector values: recycled vectors under the real model id are enough
        out["initial_index"] = timed_index(settings, RecycledEmbedder(emb.model_id, pool))
    none_runs, auto_runs = [], []
    for _ in range(args.noop_runs):
        none_runs.append(timed_index(settings, None))
    from indexer.pipeline import index

    for _ in range(args.noop_runs):
        t0 = time.perf_counter()
        rep = index(settings)  # AUTO: resolves the model, checks pending, must not load it
        auto_runs.append({"seconds": time.perf_counter() - t0, "embedded": rep.chunks_embedded,
                          "unchanged": rep.files_unchanged, "scanned": rep.files_scanned})
    out["embedder_none_s"] = summary([r["seconds"] for r in none_runs])
    out["auto_s"] = summary([r["seconds"] for r in auto_runs])
    out["auto_last"] = auto_runs[-1]
    profiled(args, "noop-reindex", lambda: index(settings))
    env = dict(os.environ, MEMSEARCH_DB=str(db))
    cli = [run_process([exe, "index", "--json", "--home", str(root)], env=env) for _ in range(3)]
    out["cli_s"] = summary([r.seconds for r in cli])
    out["cli_max_rss_mb"] = max(r.max_rss_mb for r in cli)
    return out


def baselines(exe: str) -> dict:
    py = sys.executable
    cmds = {
        "python -c pass": [py, "-c", "pass"],
        "python -c 'import search_engine.cli.main'": [py, "-c", "import search_engine.cli.main"],
        "memsearch --help": [exe, "--help"],
    }
    out = {}
    for name, argv in cmds.items():
        run_process(argv)
        rs = [run_process(argv) for _ in range(7)]
        out[name] = {"latency_ms": summary([r.seconds * 1000 for r in rs]), "max_rss_mb": max(r.max_rss_mb for r in rs)}
    return out


# -- report ----------------------------------------------------------------------------------------------------


def evaluate_targets(res: dict) -> list[dict]:
    rows = []

    def add(name, size, measured, target, ok, note=""):
        rows.append({"target": name, "size": size, "measured": measured, "goal": target, "pass": ok, "note": note})

    for n, r in res["sizes"].items():
        e = r.get("embedded_index") or {}
        raw = e.get("raw_fastembed")
        if raw and e.get("vectors") == "real":
            ratio = e["chunks_per_s"] / raw["chunks_per_s"]
            cpu_ratio = (e["index"]["chunks"] / e["index"]["cpu_seconds"]) / raw["chunks_per_cpu_s"]
            add("embed indexing / raw fastembed", n, f"{ratio:.2f}x ({e['chunks_per_s']:.1f} vs "
                f"{raw['chunks_per_s']:.1f}/s; CPU-time {cpu_ratio:.2f}x)",
                f">= {TARGETS['embed_index_vs_raw']}x", ratio >= TARGETS["embed_index_vs_raw"],
                ("cached build " + e.get("built_at", "")) if e.get("cached") else "this run")
        b = r["bm25_index"]
        add("BM25-only indexing", n, f"{b['chunks_per_s']:.0f} chunks/s", f">= {TARGETS['bm25_index_cps']:.0f}",
            b["chunks_per_s"] >= TARGETS["bm25_index_cps"],
            f"{b['chunks_per_cpu_s']:.0f} chunks per CPU-second; loadavg {b.get('loadavg', 0):.1f}")
        s = r.get("search")
        if s:
            vec_p50 = s["components"]["vector_ranking_top10_ms"]["p50"]
            np_p50 = s["numpy_bruteforce_ms"]["p50"]
            w = s.get("warm")
            if w:
                wv = w["vector_ranking_top10_ms"]["p50"]
                add("vector top-10 p50 / NumPy, warm (server)", n, f"{wv / np_p50:.1f}x ({wv:.2f} vs {np_p50:.2f} ms)",
                    f"<= {TARGETS['vector_vs_numpy']}x", wv / np_p50 <= TARGETS["vector_vs_numpy"],
                    f"vectors loaded from sqlite-vec in {w['matrix_load_s']:.2f} s, {w['matrix_mb']:.0f} MB")
                add("vector recall@10 vs exact, warm", n, f"{w['recall_at_10']:.3f}", f">= {TARGETS['recall_at_10']}",
                    w["recall_at_10"] >= TARGETS["recall_at_10"], r["embedded_index"]["vectors"] + " vectors")
            add("vector top-10 p50 / NumPy, cold (vec0 KNN)", n,
                f"{vec_p50 / np_p50:.1f}x ({vec_p50:.2f} vs {np_p50:.2f} ms)",
                f"<= {TARGETS['vector_vs_numpy']}x", vec_p50 / np_p50 <= TARGETS["vector_vs_numpy"],
                f"search(mode=vector) p50 {s['modes']['vector']['excl_embed_ms']['p50']:.2f} ms")
            add("vector recall@10 vs exact, cold", n, f"{s['recall_at_10']:.3f}", f">= {TARGETS['recall_at_10']}",
                s["recall_at_10"] >= TARGETS["recall_at_10"], r["embedded_index"]["vectors"] + " vectors")
            if w:
                h = w["hybrid"]["excl_embed_ms"]["p50"]
                add("hybrid p50 excl. query embedding, warm", n, f"{h:.1f} ms", f"<= {TARGETS['hybrid_p50_ms']:.0f} ms",
                    h <= TARGETS["hybrid_p50_ms"], f"incl. embedding {w['hybrid']['incl_embed_ms']['p50']:.1f} ms")
            h = s["modes"]["hybrid"]["excl_embed_ms"]["p50"]
            add("hybrid p50 excl. query embedding, cold", n, f"{h:.1f} ms", f"<= {TARGETS['hybrid_p50_ms']:.0f} ms",
                h <= TARGETS["hybrid_p50_ms"], f"incl. embedding {s['modes']['hybrid']['incl_embed_ms']['p50']:.1f} ms")
        p = r.get("process")
        if p:
            def process_rows(label: str, m: dict, note: str, rss_label: str, n=n) -> None:
                failed = f"; {m['failures']} failed" if m["failures"] else ""
                add(label, n, f"{m['latency_ms']['p95']:.0f} ms", f"<= {TARGETS['hook_p95_ms']:.0f} ms",
                    m["latency_ms"]["p95"] <= TARGETS["hook_p95_ms"], note + failed)
                add(rss_label, n, f"{m['max_rss_mb']:.0f} MB", f"<= {TARGETS['hook_rss_mb']:.0f} MB",
                    m["max_rss_mb"] <= TARGETS["hook_rss_mb"], m["command"])

            def floor_row(label: str, m: dict, times: float, n=n) -> None:
                if m.get("floor_ms"):
                    hook95, floor95 = m["latency_ms"]["p95"], m["floor_ms"]["p95"]
                    add(label, n, f"{hook95 / floor95:.1f}x ({hook95:.0f} vs {floor95:.0f} ms)", f"<= {times}x",
                        hook95 <= times * floor95, 'floor: python -c "import json, socket", pair by pair')

            process_rows("CLI bm25 search p95 (cold process)", p["hook"], p["hook"]["command"], "CLI bm25 search peak RSS")
            if p.get("hook_plugged"):
                process_rows("hook p95, BM25 cold (no server)", p["hook_plugged"], p["hook_plugged"]["command"],
                             "hook peak RSS (BM25 path)")
                floor_row("hook p95 / interpreter floor, BM25 cold", p["hook_plugged"], TARGETS["hook_cold_floor_x"])
            if p.get("hook_warm"):
                hw = p["hook_warm"]
                process_rows("hook p95, hybrid through the warm server", hw, f"p50 {hw['latency_ms']['p50']:.0f} ms; "
                             f"server peak RSS {p['server']['peak_rss_mb']:.0f} MB", "hook peak RSS (warm path)")
                floor_row("hook p95 / interpreter floor, through the server", hw, TARGETS["hook_warm_floor_x"])
    nz = res.get("noop")
    if nz:
        for key, label in (("embedder_none_s", "embedder=None"), ("auto_s", "default embedder"),
                           ("cli_s", "CLI process")):
            v = nz[key]["p50"]
            add(f"no-op reindex {nz['files']:,} files, {label}", "-", f"{v:.2f} s", f"<= {TARGETS['noop_seconds']} s",
                v <= TARGETS["noop_seconds"])
    return rows


def fmt(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


def print_report(res: dict) -> None:
    sizes = list(res["sizes"])
    print()
    print(f"memsearch benchmark  {res['meta']['started']}  {res['meta']['cpu']}  {res['meta']['cores']} cores  "
          f"loadavg at start {res['meta']['loadavg_start']:.1f}, end {res['meta'].get('loadavg_end', 0):.1f}")
    print("(another agent shares this machine: absolute timings are noisy; ratios measured back to back are less so)")
    col = 12
    header = f"{'':50}" + "".join(f"{int(n):>{col},}" for n in sizes)
    print()
    print(header)

    def row(label, getter, spec=".1f"):
        vals = []
        for n in sizes:
            try:
                vals.append(fmt(getter(res["sizes"][n]), spec))
            except (KeyError, TypeError):
                vals.append("-")
        print(f"{label:50}" + "".join(f"{v:>{col}}" for v in vals))

    row("chunks indexed", lambda r: r["bm25_index"]["chunks"], ",d")
    row("files", lambda r: r["bm25_index"]["files"], ",d")
    row("BM25-only index, chunks/s", lambda r: r["bm25_index"]["chunks_per_s"], ",.0f")
    row("  chunks per CPU-second (own process)", lambda r: r["bm25_index"]["chunks_per_cpu_s"], ",.0f")
    row("  loadavg (1 min) after", lambda r: r["bm25_index"]["loadavg"], ".1f")
    row("embedded index, chunks/s", lambda r: r["embedded_index"]["chunks_per_s"] if r["embedded_index"]["vectors"] == "real" else None)
    row("  per CPU-second", lambda r: r["embedded_index"]["index"]["chunks"] / r["embedded_index"]["index"]["cpu_seconds"] if r["embedded_index"]["vectors"] == "real" else None)
    row("  raw fastembed, chunks/s (same texts)", lambda r: r["embedded_index"]["raw_fastembed"]["chunks_per_s"])
    row("  raw fastembed, per CPU-second", lambda r: r["embedded_index"]["raw_fastembed"]["chunks_per_cpu_s"])
    row("  vectors", lambda r: r["embedded_index"]["vectors"] + ("*" if r["embedded_index"].get("cached") else ""), "")
    row("DB KB / 1k chunks, BM25 only", lambda r: r["bm25_index"]["db_bytes"] / r["bm25_index"]["chunks"], ",.0f")
    row("DB KB / 1k chunks, with vectors", lambda r: r["embedded_index"]["db_bytes"] / r["bm25_index"]["chunks"], ",.0f")
    for mode in ("bm25", "vector", "hybrid"):
        for key, lab in (("excl_embed_ms", "excl"), ("incl_embed_ms", "incl")):
            if mode == "bm25" and key == "incl_embed_ms":
                continue
            for p in ("p50", "p95"):
                row(f"{mode} search {p} ms ({lab}. query embed)" if mode != "bm25" else f"bm25 search {p} ms",
                    lambda r, m=mode, k=key, p=p: r["search"]["modes"][m][k][p], ".2f")
    for mode in ("vector", "hybrid"):
        for key, lab in (("excl_embed_ms", "excl"), ("incl_embed_ms", "incl")):
            for p in ("p50", "p95"):
                row(f"{mode} search {p} ms ({lab}. embed), warm matrix",
                    lambda r, m=mode, k=key, p=p: r["search"]["warm"][m][k][p], ".2f")
    row("  warm: vector_ranking(top 10) p50 ms", lambda r: r["search"]["warm"]["vector_ranking_top10_ms"]["p50"], ".2f")
    row("  warm: matrix load s / MB", lambda r: f"{r['search']['warm']['matrix_load_s']:.2f}/"
        f"{r['search']['warm']['matrix_mb']:.0f}", "")
    for mode in ("bm25", "vector", "hybrid"):
        row(f"{mode} search p50 CPU ms (calling thread, excl. embed)",
            lambda r, m=mode: r["search"]["modes"][m]["excl_embed_cpu_ms"]["p50"], ".2f")
    row("query embedding p50 ms", lambda r: r["search"]["query_embed_ms"]["p50"], ".2f")
    row("  health() p50 ms", lambda r: r["search"]["components"]["health_ms"]["p50"], ".2f")
    row("  lexical_search(pool 50) p50 ms", lambda r: r["search"]["components"]["lexical_pool50_ms"]["p50"], ".2f")
    row("  vector_ranking(pool 50) p50 ms", lambda r: r["search"]["components"]["vector_ranking_pool50_ms"]["p50"], ".2f")
    row("  vector_ranking(top 10) p50 ms", lambda r: r["search"]["components"]["vector_ranking_top10_ms"]["p50"], ".2f")
    row("  vector_ranking(top 10) p50 CPU ms", lambda r: r["search"]["components"]["vector_ranking_top10_cpu_ms"]["p50"], ".2f")
    row("ref: NumPy brute-force top-10 p50 ms", lambda r: r["search"]["numpy_bruteforce_ms"]["p50"], ".2f")
    row("ref: NumPy brute-force p50 CPU ms (main thread)", lambda r: r["search"]["numpy_bruteforce_cpu_ms"]["p50"], ".2f")
    row("ref: recall@10 product vs exact", lambda r: r["search"]["recall_at_10"], ".3f")
    row("ref: bare FTS5 top-10 p50 ms", lambda r: r["search"]["bare_fts5_top10_ms"]["p50"], ".2f")
    row("ref: bare FTS5 top-10 p50 CPU ms", lambda r: r["search"]["bare_fts5_top10_cpu_ms"]["p50"], ".2f")
    row("ref: bare FTS5 top-50 p50 ms", lambda r: r["search"]["bare_fts5_top50_ms"]["p50"], ".2f")
    variants = []
    for r in res["sizes"].values():
        for k in (r.get("search") or {}).get("vector_variants", {}):
            if not k.startswith("_") and k not in variants:
                variants.append(k)
    for k in variants:
        row(f"var: {k[:41]} p50", lambda r, k=k: r["search"]["vector_variants"][k]["latency_ms"]["p50"], ".2f")
        row("       recall@10", lambda r, k=k: r["search"]["vector_variants"][k]["recall_at_10"], ".3f")
    row("CLI search --mode bm25 p50 ms (cold process)", lambda r: r["process"]["hook"]["latency_ms"]["p50"], ".0f")
    row("CLI search --mode bm25 p95 ms", lambda r: r["process"]["hook"]["latency_ms"]["p95"], ".0f")
    row("CLI search --mode bm25 peak RSS MB", lambda r: r["process"]["hook"]["max_rss_mb"], ".0f")
    row("prompt hook p50 ms, BM25 cold (no server)", lambda r: r["process"]["hook_plugged"]["latency_ms"]["p50"], ".0f")
    row("prompt hook p95 ms, BM25 cold", lambda r: r["process"]["hook_plugged"]["latency_ms"]["p95"], ".0f")
    row("prompt hook peak RSS MB, BM25 cold", lambda r: r["process"]["hook_plugged"]["max_rss_mb"], ".0f")
    row("warm hook p50 ms (server running)", lambda r: r["process"]["hook_warm"]["latency_ms"]["p50"], ".0f")
    row("warm hook p95 ms", lambda r: r["process"]["hook_warm"]["latency_ms"]["p95"], ".0f")
    row("warm hook peak RSS MB", lambda r: r["process"]["hook_warm"]["max_rss_mb"], ".0f")
    row("server peak RSS MB", lambda r: r["process"]["server"]["peak_rss_mb"], ".0f")
    row("server ready s (model + first ping)", lambda r: r["process"]["server"]["ready_s"], ".1f")
    row("CLI search hybrid p50 ms (cold, loads model)", lambda r: r["process"]["cli_search_hybrid"]["latency_ms"]["p50"], ".0f")
    row("CLI search hybrid peak RSS MB", lambda r: r["process"]["cli_search_hybrid"]["max_rss_mb"], ".0f")
    row("CLI index --model none: s", lambda r: r["process"]["cli_index_bm25"]["seconds"], ".1f")
    row("CLI index --model none: peak RSS MB", lambda r: r["process"]["cli_index_bm25"]["max_rss_mb"], ".0f")
    row("CLI index with model: peak RSS MB", lambda r: r["process"]["cli_index_embed"]["max_rss_mb"], ".0f")
    print("  * = index with vectors reused from the cache (its throughput is from the build recorded in its .json)")

    nz = res.get("noop")
    if nz:
        print()
        print(f"no-op reindex of {nz['files']} unchanged files: embedder=None p50 {nz['embedder_none_s']['p50']:.3f} s, "
              f"default p50 {nz['auto_s']['p50']:.3f} s (embedded {nz['auto_last']['embedded']}), "
              f"`memsearch index` process p50 {nz['cli_s']['p50']:.2f} s, peak RSS {nz['cli_max_rss_mb']:.0f} MB")
    bl = res.get("baselines")
    if bl:
        print("process baselines: " + "; ".join(f"{k} p50 {v['latency_ms']['p50']:.0f} ms / {v['max_rss_mb']:.0f} MB"
                                               for k, v in bl.items()))
    print()
    print(f"{'target':48}{'size':>9}  {'measured':46}{'goal':>10}  result")
    for t in res["targets"]:
        size = f"{int(t['size']):,}" if t["size"] != "-" else "-"
        print(f"{t['target']:48}{size:>9}  {t['measured']:46}{t['goal']:>10}  {'PASS' if t['pass'] else 'MISS'}"
              + (f"  ({t['note']})" if t["note"] else ""))


def plot(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [n for n in res["sizes"] if res["sizes"][n].get("search")]
    if not sizes:
        return
    xs = [res["sizes"][n]["bm25_index"]["chunks"] for n in sizes]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 6.4))

    def series(getter):
        ys = []
        for n in sizes:
            try:
                ys.append(getter(res["sizes"][n]))
            except (KeyError, TypeError):
                ys.append(float("nan"))
        return ys

    lines = [
        ("hybrid, excl. query embed", lambda r: r["search"]["modes"]["hybrid"]["excl_embed_ms"], "C3", "o"),
        ("hybrid warm (server matrix), excl. embed", lambda r: r["search"]["warm"]["hybrid"]["excl_embed_ms"], "C5",
         "D"),
        ("hybrid, incl. query embed", lambda r: r["search"]["modes"]["hybrid"]["incl_embed_ms"], "C1", "o"),
        ("vector, excl. query embed", lambda r: r["search"]["modes"]["vector"]["excl_embed_ms"], "C0", "s"),
        ("bm25", lambda r: r["search"]["modes"]["bm25"]["excl_embed_ms"], "C2", "^"),
        ("ref: NumPy brute-force top-10", lambda r: r["search"]["numpy_bruteforce_ms"], "C7", "x"),
        ("ref: bare FTS5 top-10", lambda r: r["search"]["bare_fts5_top10_ms"], "C8", "+"),
    ]
    for label, get, color, marker in lines:
        ax1.plot(xs, series(lambda r, g=get: g(r)["p50"]), color=color, marker=marker, label=f"{label} p50")
        ax1.plot(xs, series(lambda r, g=get: g(r)["p95"]), color=color, marker=marker, linestyle=":", alpha=0.6)
    def finish_axes(ax, target: float, target_label: str, color: str, ylabel: str, title: str) -> None:
        ax.axhline(target, color=color, linestyle="--", linewidth=0.8)
        ax.text(xs[-1], target * 1.08, target_label, color=color, fontsize=8, ha="right")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("corpus size (chunks)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)

    finish_axes(ax1, TARGETS["hybrid_p50_ms"], "hybrid p50 target 40 ms", "C3", "latency per query (ms)",
                "In-process search latency (solid p50, dotted p95)")

    processes = [  # (key under "process", label, colour, marker, with p95)
        ("hook", "CLI search --mode bm25", "C2", "^", True),
        ("cli_search_hybrid", "CLI hybrid (loads model)", "C1", "o", False),
        ("hook_plugged", "prompt hook, BM25 cold", "C4", "v", True),
        ("hook_warm", "prompt hook via warm server (hybrid)", "C5", "s", True),
    ]
    for key, label, color, marker, with_p95 in processes:
        if not any(key in (res["sizes"][n].get("process") or {}) for n in sizes):
            continue
        for p, style in (("p50", "-"), ("p95", ":"))[: 2 if with_p95 else 1]:
            ax2.plot(xs, series(lambda r, k=key, p=p: r["process"][k]["latency_ms"][p]), color=color, marker=marker,
                     linestyle=style, label=f"{label} {p}")
    base = (res.get("baselines") or {}).get("python -c pass")
    if base:
        ax2.axhline(base["latency_ms"]["p50"], color="C7", linestyle="-.", linewidth=0.8)
        ax2.text(xs[-1], base["latency_ms"]["p50"] * 1.08, "bare `python -c pass`", color="C7", fontsize=8, ha="right")
    finish_axes(ax2, TARGETS["hook_p95_ms"], "hook p95 target 150 ms", "C2", "wall time per process (ms)",
                "Cold process latency")
    fig.suptitle(f"memsearch bench {res['meta']['started']} ({res['meta']['cores']} cores, shared machine)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- main --------------------------------------------------------------------------------------------------------

SOURCES = None


def real_vector_pool(args, emb, done: dict) -> np.ndarray:
    """Real vectors to recycle: from the largest real-vector index built so far (or cached)."""
    from indexer.store import sqlite as store

    cands = sorted(args.work.glob("db/emb-*-real.db"), key=lambda p: int(p.name.split("-")[1]))
    if not cands:
        root = args.work / f"corpus-v{CORPUS_VERSION}-1000"
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
    pool = None

    for n in args.sizes:
        log(f"== {n:,} chunks")
        r: dict = {}
        root = args.work / f"corpus-v{CORPUS_VERSION}-{n}"
        t0 = time.perf_counter()
        r["corpus"] = build_corpus(root, n, SOURCES)
        r["corpus"]["seconds"] = time.perf_counter() - t0
        r["corpus"]["root"] = str(root)

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
            if "process" not in args.skip:
                r["process"] = process_section(args, n, root, db_e, queries, str(exe))
        res["sizes"][n] = r
        (args.out / "bench.partial.json").write_text(json.dumps(res, indent=1, default=str))

    if "noop" not in args.skip:
        if pool is None:
            pool = real_vector_pool(args, emb, res["sizes"])
        res["noop"] = noop_section(args, emb, pool, exe)
    if "process" not in args.skip:
        res["baselines"] = baselines(exe)
    if "privacy" not in args.skip:
        from bench_privacy import privacy_section

        log("privacy filter cost")
        res["privacy"] = privacy_section()
        for name, r in res["privacy"].items():
            log(f"  {name}: {r} " + ("ms" if name == "import_ms" else ""))
    res["meta"]["loadavg_end"] = os.getloadavg()[0]
    res["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    res["targets"] = evaluate_targets(res)
    (args.out / "bench.json").write_text(json.dumps(res, indent=1, default=str))
    (args.out / "bench.partial.json").unlink(missing_ok=True)
    print_report(res)
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
