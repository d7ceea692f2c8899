#!/usr/bin/env python3
"""Retrieval quality of memsearch on public datasets (``make eval``). An evaluation, not a test: it prints
numbers, it does not assert them.

Each dataset is written into a memory root *the way the product stores it* (events as ``events/*.jsonl``, documents
as markdown notes), indexed by the real indexer with the bundled model, and queried through ``search()`` in each
mode (bm25, vector, hybrid):

- ``locomo``: LoCoMo dev, 5 conversations, each its own memory root; one event per dialog turn; questions of
  categories 1-4; gold = the evidence turns. Turn recall@1/5/10, session recall@1/5/10, MRR@10, nDCG@10,
  overall and per category, and what fusion kept of its two lists: the questions with a gold turn in the BM25 or
  vector top 10 but not in hybrid's (buried), and the other way (gained).
- ``timeline``: temporal questions in the style of LongMemEval, written for memsearch (``scripts/eval_timeline.py``):
  one user's event log of a year and a half where the same kinds of things recur and only the time a question names
  ("last weekend", "in the summer of 2024", "two days before the concert") tells which one it means. Recall@1/5,
  MRR@10, per form of time expression and by whether the event was told inside the time named or after it.
- ``scifact``: BEIR SciFact, abstracts as notes (title as H1), 300 test queries; nDCG@10 (graded qrels),
  recall@1/5/10, MRR@10.
- ``cjk`` (= ``cmrc2018,drcd,korquad,jsquad``): SQuAD-format sets, one note per paragraph, gold = the paragraph
  the question was asked on; recall@1/5, MRR@10, plus two subsets that stress 2-character CJK words (below).

Ranking unit: hits are mapped to documents (turn id, or note file) and de-duplicated keeping the first rank, so
a document split into several chunks counts once, at its best rank. Events are fetched with k=10; notes with k=30
so that ten distinct documents remain after that mapping.

CJK subsets: ``2char-word`` = questions holding a standalone CJK run of exactly 2 characters (between
punctuation, spaces or Latin text); ``bigram-only`` = questions that share no 3-character CJK string with their
gold paragraph but do share a 2-character one, i.e. the ones a trigram index cannot find lexically.

Latency is the wall time of one ``search()`` call with a warm model and an open connection (what the warm server
and a long-lived process see), query embedding included. Index time is the ``index()`` call of the run that built
the index (a cached index is re-checked, which takes well under a second, and its original build time reported).

Indexes are cached under ``<work>/<dataset>/<key>/`` where the key holds everything that changes the index
(chunk size and overlap, model, this script's data layout), so re-runs do not re-embed; search-time settings
(weights, rrf_k, candidates, dedup threshold) reuse the same index. Settings come from ``MEMSEARCH_*``
environment variables or ``--set name=value``.

    python -m scripts.eval                                   # everything, all modes
    python -m scripts.eval --datasets locomo --limit 100     # quick look
    python -m scripts.eval --datasets locomo --half A        # choose a setting on half of the questions
    python -m scripts.eval --datasets locomo,scifact --dedup-curve
    MEMSEARCH_BM25_WEIGHT=1.5 python -m scripts.eval --datasets scifact --modes hybrid
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from indexer.base.embedder import load_embedder, resolve_model
from indexer.base.errors import MemsearchError, ModelUnavailable
from indexer.base.settings import resolve_settings
from scripts.eval_data import CJK_SETS, half_queries, limit_queries, load_dataset
from scripts.eval_report import injection_targets, render, targets
from scripts.eval_run import Runner, evaluate, evaluate_injection, log

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("MEMSEARCH_EVAL_DATA") or REPO.parent / "shared" / "eval")
DEFAULT_OUT = REPO / "eval-results" / "eval.json"
MODES = ("bm25", "vector", "hybrid")
ALL_DATASETS = ("locomo", "timeline", "scifact", *CJK_SETS, "injection")
#: Index-changing settings: part of the cache key.
INDEX_SETTINGS = ("chunk_chars", "chunk_overlap", "model", "model_dir")
SEARCH_SETTINGS = ("bm25_weight", "vector_weight", "rrf_k", "candidates", "dedup_threshold", "fusion", "bm25_share",
                   "session_share", "speaker_share", "feedback_share")


def git_info() -> dict:
    def run(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"commit": run("rev-parse", "--short", "HEAD"),
            "dirty_paths": run("status", "--porcelain", "--", "indexer", "search_engine").splitlines()}


# ---------------------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--datasets", default="locomo,timeline,scifact,cjk,injection",
                   help="comma list of locomo, timeline (temporal questions on a user's memory; see\n"
                        "scripts/eval_timeline.py), scifact, cjk (= cmrc2018,drcd,korquad,jsquad), single CJK sets, or\n"
                        "injection (LoCoMo as a user's memory, through the prompt hook; see scripts/eval_injection.py)")
    p.add_argument("--modes", default=",".join(MODES), help="comma list of bm25, vector, hybrid")
    p.add_argument("--limit", type=int, default=None, help="at most N queries per dataset (spread evenly)")
    p.add_argument("--half", choices=("A", "B"), default=None,
                   help="only half of each dataset's questions (A: md5 of the question id even, B: odd), to choose a\n"
                        "setting on one half and confirm it on the other")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file (default eval-results/eval.json)")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the evaluation data folder")
    p.add_argument("--work", type=Path, default=None, help="where indexes are cached (default <out dir>/work)")
    p.add_argument("--dedup-curve", action="store_true", help="recall@5 and hidden duplicates per dedup threshold"
                   " (LoCoMo and SciFact, hybrid)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                   help="a settings override, e.g. --set bm25_weight=1.5 (same names as memsearch.toml)")
    p.add_argument("--k", type=int, default=None, help="hits fetched per query (default 10 for events, 30 notes)")
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite",
                   help="postgres: index locally (cached), sync each memory root into a fresh team database on\n"
                        "PostgreSQL + pgvector and ask the questions there (the injection section stays local)")
    p.add_argument("--pg-url", default=None, help="with --backend postgres: an administrator's URL; default a\n"
                   "throwaway local server (scripts/pg_local.py)")
    p.add_argument("--fresh", action="store_true", help="rebuild the cached indexes from nothing")
    p.add_argument("--dump-queries", type=Path, default=None,
                   help="write per-query rankings (all --k hits fetched) as JSON lines")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names: list[str] = []
    for n in (x.strip().lower() for x in args.datasets.split(",") if x.strip()):
        expanded = list(CJK_SETS) if n == "cjk" else [n]
        for e in expanded:
            if e not in ALL_DATASETS:
                print(f"unknown dataset {e!r}: use {', '.join(ALL_DATASETS)} or cjk", file=sys.stderr)
                return 2
            if e not in names:
                names.append(e)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        print(f"invalid --modes {args.modes!r}: use {', '.join(MODES)}", file=sys.stderr)
        return 2
    modes = [m for m in MODES if m in modes]
    if not args.data.expanduser().is_dir():
        print(f"no evaluation data at {args.data}; pass --data or set MEMSEARCH_EVAL_DATA", file=sys.stderr)
        return 1
    overrides: dict[str, Any] = {}
    for item in args.overrides:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"--set needs NAME=VALUE, got {item!r}", file=sys.stderr)
            return 2
        overrides[key.strip()] = value.strip()

    # Absolute paths only: the product resolves a relative db_path or cache_dir against each memory root.
    out_path: Path = args.out.expanduser().absolute()
    work = (args.work.expanduser() if args.work else out_path.parent / "work").absolute()
    cache_env = os.environ.get("MEMSEARCH_CACHE_DIR")
    cache_dir = Path(cache_env).expanduser().absolute() if cache_env else work / "cache"
    args.data = args.data.expanduser().absolute()
    probe = resolve_settings(work, cache_dir=cache_dir, **overrides)
    choice = resolve_model(probe)
    embedder, note = None, None
    if choice.available:
        embedder = load_embedder(probe)
        try:
            embedder.embed_query("warm up")
        except ModelUnavailable as exc:
            embedder, note = None, str(exc)
    else:
        note = choice.reason
    if embedder is None:
        log(f"no embedding model ({note}): BM25 only; vector mode is skipped and hybrid falls back to bm25")
    runner = Runner(work, cache_dir, overrides, embedder, note)
    if args.backend == "postgres":
        from scripts.pg_team import Server

        runner.pg = Server(args.pg_url)

    dump: list | None = [] if args.dump_queries else None
    results: dict[str, Any] = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "settings": {n: getattr(probe, n) if not isinstance(getattr(probe, n), Path) else str(getattr(probe, n))
                     for n in (*INDEX_SETTINGS, *SEARCH_SETTINGS)},
        "model": {"id": choice.model_id, "available": embedder is not None, "note": note},
        "backend": args.backend,
        "git": git_info(),
        "host": {"python": platform.python_version(), "cpus": os.cpu_count(), "machine": platform.machine()},
        "datasets": {},
    }
    started = time.perf_counter()
    try:
        for name in names:
            t0 = time.perf_counter()
            if name == "injection":
                results["injection"] = evaluate_injection(args.data, runner, args.fresh, args.limit, out_path.parent,
                                                          dump, args.half)
                log(f"[{name}] done in {time.perf_counter() - t0:.1f}s")
                continue
            ds = load_dataset(args.data, name)
            ds.queries = limit_queries(half_queries(ds.queries, args.half), args.limit)
            curve = args.dedup_curve and name in ("locomo", "scifact")
            results["datasets"][name] = evaluate(ds, runner, modes, args.fresh, curve, args.k, dump)
            log(f"[{name}] done in {time.perf_counter() - t0:.1f}s")
    except MemsearchError as exc:
        print(f"eval failed: {exc}", file=sys.stderr)
        return 1
    finally:
        if runner.pg is not None:
            runner.pg.stop()
    results["targets"] = targets(results["datasets"]) + injection_targets(results.get("injection"))
    results["seconds"] = round(time.perf_counter() - started, 1)

    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if dump is not None:
        args.dump_queries.parent.mkdir(parents=True, exist_ok=True)
        with args.dump_queries.open("w", encoding="utf-8") as f:
            for row in dump:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(render(results))
    print(f"\n{results['seconds']}s; model {choice.model_id or 'none'}; results in {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
