#!/usr/bin/env python
"""Indexing the whole SciFact corpus with the model, as a user would (``memsearch index`` in its own process):
wall time, chunks, and the process's peak RSS against the 1 GB goal. The corpus's 5,183 abstracts are written as
markdown notes (title as H1, as ``make eval`` writes them) into a fresh memory root each run, so nothing cached is
reused. On 2 cores it takes tens of minutes, so ``make bench`` runs it only with ``--scifact``; alone:

    .venv/bin/python -m scripts.bench_scifact [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from scripts.bench_corpus import EVAL_DIR
from scripts.bench_proc import run_process
from scripts.eval_data import load_scifact

#: The goal of the indexing process's peak RSS on this corpus, in MB.
RSS_GOAL_MB = 1024.0


def scifact_index(work: Path, exe: str, eval_dir: Path = EVAL_DIR, timeout: float = 3 * 3600) -> dict:
    """Write SciFact's notes under ``work`` (emptied first), index them with ``exe index`` and measure it."""
    root = work / "scifact-index"
    shutil.rmtree(root, ignore_errors=True)
    files = load_scifact(eval_dir).roots["corpus"]
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    r = run_process([exe, "index", "--json", "--home", str(root)], timeout=timeout)
    report = json.loads(r.stdout or b"{}") if r.returncode == 0 else {}
    out = {"documents": len(files), "seconds": round(r.seconds, 1), "cpu_seconds": round(r.cpu_seconds, 1),
           "max_rss_mb": round(r.max_rss_mb, 1), "returncode": r.returncode,
           "chunks": report.get("chunks_added"), "model": report.get("model"),
           "chunks_embedded": report.get("chunks_embedded")}
    if r.returncode != 0:
        out["error"] = (r.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
    shutil.rmtree(root, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, default=Path("bench-results") / "work")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    exe = str(Path(sys.executable).parent / "memsearch")
    out = scifact_index(args.work, exe)
    if args.json:
        print(json.dumps(out))
    else:
        verdict = "PASS" if out["returncode"] == 0 and out["max_rss_mb"] <= RSS_GOAL_MB else "MISS"
        print(f"SciFact indexed with the model: {out['documents']} notes, {out['chunks_embedded']} chunks embedded, "
              f"{out['seconds']:.0f} s ({out['cpu_seconds']:.0f} CPU-s), peak RSS {out['max_rss_mb']:.0f} MB "
              f"(goal <= {RSS_GOAL_MB:.0f} MB: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
