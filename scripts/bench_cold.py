"""The cold-process sections of the benchmark: the prompt hook (BM25 cold, and through a running ``memsearch
serve``), ``memsearch search`` and ``memsearch index`` as processes with their peak RSS, the no-op reindex, and
the interpreter baselines."""

from __future__ import annotations

import io
import json
import os
import pstats
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from scripts.bench_build import RecycledEmbedder, db_bytes, emb_db_path, log, remove_db, timed_index
from scripts.bench_corpus import CORPUS_VERSION, build_noop_corpus
from scripts.bench_proc import (
    cli_search_hook,
    interpreter_floor,
    measure_command,
    run_process,
    template_hook,
    wait_until_warm,
)
from scripts.bench_profile import profiled
from scripts.stats import summary


def warm_hook(exe: str, plugged, queries: list[str], runs: int, env: dict[str, str],
              cli=None, cli_runs: int = 0) -> tuple[dict, dict]:
    """The prompt hook while ``memsearch serve`` runs (model loaded, vectors in memory): the hybrid warm path.
    Also the server's own peak RSS (VmHWM) and how long it took to answer its first ping, and with ``cli``,
    ``memsearch search`` processes answered by that server (``cli_runs`` of them, under the server's key
    ``cli_search``)."""
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
        warm = wait_until_warm(memsearch, env)
        warm_s = time.perf_counter() - started
        result = measure_command(plugged, queries, runs, env, floor=interpreter_floor(sys.executable))
        through = measure_command(cli, queries, cli_runs, env, warmup=1) if cli is not None and cli_runs else None
        status = Path(f"/proc/{server.pid}/status").read_text()
        hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
        return result, {"ready_s": ready_s, "warm_s": warm_s, "lexicon": warm.get("lexicon"),
                        "peak_rss_mb": hwm / 1024, "cli_search": through}
    finally:
        subprocess.run([memsearch, "serve", "--stop"], env=env, capture_output=True)
        server.wait(timeout=60)


def restore_corpus(root: Path, scratch: Path) -> None:
    """Put the cached corpus back in its place after the hooks wrote to a copy there (also after an interrupted
    run: the corpus is then still in ``scratch/kept``)."""
    if (scratch / "kept").is_dir():
        shutil.rmtree(root, ignore_errors=True)
        (scratch / "kept").rename(root)
    shutil.rmtree(scratch, ignore_errors=True)


def process_section(args, n: int, root: Path, db: Path, queries: list[str], exe: str) -> dict:
    restore_corpus(root, args.work / "scratch")
    env = dict(os.environ, MEMSEARCH_DB=str(db), MEMSEARCH_HOME=str(root))
    out: dict = {}
    hook = cli_search_hook(exe, root, "bm25")
    log(f"  hook stand-in: {args.hook_runs} cold processes of `{hook.name}`")
    out["loadavg_before"] = os.getloadavg()[0]
    out["hook"] = measure_command(hook, queries, args.hook_runs, env)
    if args.hook_cmd:
        # a real prompt hook records the prompt (appends to events/, ingests it): run it on a scratch copy so the
        # cached corpus and index stay untouched. The copy takes the corpus's own path (the corpus is moved aside
        # meanwhile): the index names its sources by path, and under another path the warm server would index
        # every file again while idle, in the middle of the measurement
        scratch = args.work / "scratch"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        db_bytes(db)  # checkpoint so the copy is complete
        shutil.copy2(db, scratch / "index.db")
        root.rename(scratch / "kept")
        try:
            shutil.copytree(scratch / "kept", root, ignore=shutil.ignore_patterns(".memsearch"))
            plugged = template_hook(args.hook_cmd, root)
            log(f"  plugged hook: {args.hook_runs} cold processes of `{plugged.name}` (on a scratch copy)")
            penv = dict(env, MEMSEARCH_DB=str(scratch / "index.db"))
            out["hook_plugged"] = measure_command(plugged, queries, args.hook_runs,
                                                  dict(penv, MEMSEARCH_NO_SERVER="1"),
                                                  floor=interpreter_floor(sys.executable))
            log(f"  plugged hook through the warm server: {args.hook_runs} cold processes (server on the scratch copy)")
            out["hook_warm"], out["server"] = warm_hook(exe, plugged, queries, args.hook_runs, penv,
                                                        cli_search_hook(exe, root, "hybrid"),
                                                        args.hybrid_cli_runs and max(args.hybrid_cli_runs, 20))
        finally:
            restore_corpus(root, scratch)
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
            # with the model: one event file (~70 chunks) is enough to see the model's memory; into an empty index,
            # or the run would embed every chunk the BM25-only run above left pending (all 100k at --sizes 100000)
            remove_db(tmp_db)
            first = sorted((root / "events").glob("*.jsonl"))[0]
            r2 = run_process([exe, "index", str(first), "--json", "--home", str(root)],
                             env=dict(env, MEMSEARCH_DB=str(tmp_db)), timeout=3600)
            rep = json.loads(r2.stdout or b"{}") if r2.returncode == 0 else {}
            out["cli_index_embed"] = {"seconds": r2.seconds, "max_rss_mb": r2.max_rss_mb,
                                      "returncode": r2.returncode, "chunks_embedded": rep.get("chunks_embedded")}
        remove_db(tmp_db)
    return out


def noop_section(args, emb, pool: np.ndarray, exe: str, sources) -> dict:
    from indexer.base.settings import resolve_settings

    root = args.work / f"noop-v{CORPUS_VERSION}-{args.noop_files}"
    log(f"no-op reindex: {args.noop_files} note files")
    build_noop_corpus(root, args.noop_files, sources)
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
