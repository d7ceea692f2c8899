"""Crashes: ``kill -9`` of ``memsearch index``, ``memsearch maintain`` and ``memsearch serve`` at random moments,
then the checks that matter after a crash, and at the end a comparison with an index built from scratch.

Each round changes the memory a little (notes edited, added, deleted; events appended), starts one of the three
commands (the server is also sent searches and ingests while it runs), kills it with SIGKILL after a random delay,
and then checks: ``PRAGMA integrity_check`` and FTS5's integrity check are ok, and the chunk, FTS and vector tables
agree row for row; then the next ``memsearch index`` must complete, and the checks must hold again. At the end the
surviving index is compared with one built from scratch over the same files (``MEMSEARCH_DB`` elsewhere): the same
chunks, the same BM25 answers (every matching chunk with its score), the same vectors, and the same hybrid results.

    python -m scripts.stress_crash                       # 12 kills of each command (36), real model
    python -m scripts.stress_crash --rounds 5 --model none --seed 3

Bounded by the number of rounds; local only (a temporary memory root).
"""

from __future__ import annotations

import argparse
import array
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.stress_common import (
    MEMSEARCH,
    TOPICS,
    check_db,
    env_for,
    finish,
    initial_index,
    machine_note,
    make_root,
    mutate,
    run,
)

KINDS = {
    "index": (["index"], (0.05, 3.5)),
    "maintain": (["maintain"], (0.05, 2.5)),
    "serve": (["serve", "--idle-timeout", "120"], (0.3, 8.0)),
}
QUERIES = [*TOPICS, "database lock timeout", "webhook signature token", "rollback release branch", "東京"]


def kill_one(kind: str, env: dict, rng: random.Random, settings) -> dict:
    """Start ``kind``, kill -9 it after a random delay; what happened."""
    from search_engine.serve.client import request

    args, (low, high) = KINDS[kind]
    delay = rng.uniform(low, high)
    proc = subprocess.Popen([MEMSEARCH, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    started = time.monotonic()
    while time.monotonic() - started < delay and proc.poll() is None:
        if kind == "serve" and rng.random() < 0.3:  # keep it busy: searches and ingests, as the hooks would
            request(settings, {"op": "search", "query": rng.choice(QUERIES), "mode": "hybrid", "k": 5}, timeout=2)
            request(settings, {"op": "ingest", "paths": [str(p) for p in (settings.home / "events").glob("*.jsonl")]},
                    timeout=2)
        time.sleep(0.02)
    alive = proc.poll() is None
    if alive:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    return {"kind": kind, "delay": round(delay, 2), "killed_while_running": alive,
            "exit": proc.returncode, "stderr": stderr.strip()[-300:]}


def vectors(db: Path) -> dict[str, list[float]]:
    from indexer.store import sqlite as store

    conn = store.connect(db)
    try:
        if not store.vec_table_exists(conn):
            return {}
        ids = dict(conn.execute("SELECT id, hash FROM embeddings"))
        return {ids[r]: array.array("f", v).tolist() for r, v in conn.execute("SELECT rowid, embedding FROM vec_chunks")
                if r in ids}
    finally:
        conn.close()


def bm25_answers(db: Path, query: str) -> set[tuple[str, float]]:
    from indexer.store import sqlite as store
    from indexer.store.sqlite_read import fts5_query
    from search_engine.query import content_terms, terms

    expression = fts5_query(content_terms(terms(query)), "OR")
    if not expression:
        return set()
    conn = store.connect(db)
    try:
        return set(conn.execute(
            "SELECT c.uid, round(-bm25(chunks_fts), 9) FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid"
            " WHERE chunks_fts MATCH ?", (expression,)))
    finally:
        conn.close()


def chunks(db: Path) -> set[tuple]:
    from indexer.store import sqlite as store

    conn = store.connect(db)
    try:
        return set(conn.execute("SELECT uid, hash, path, kind, title, text, ts, session_id, status FROM chunks"))
    finally:
        conn.close()


def compare(survivor, fresh) -> dict:
    """The surviving index against one built from scratch."""
    from search_engine.search import search

    same_chunks = chunks(survivor.db_path) == chunks(fresh.db_path)
    bm25_equal = sum(bm25_answers(survivor.db_path, q) == bm25_answers(fresh.db_path, q) for q in QUERIES)
    mine, theirs = vectors(survivor.db_path), vectors(fresh.db_path)
    shared = mine.keys() & theirs.keys()
    worst = max((max(abs(a - b) for a, b in zip(mine[h], theirs[h])) for h in shared), default=0.0)
    hybrid_equal, hybrid_tie_equal, modes = 0, 0, set()
    for q in QUERIES:
        a = search(survivor, q, k=10)
        b = search(fresh, q, k=10)
        modes.add(a.mode_used)
        hybrid_equal += [h.id for h in a.hits] == [h.id for h in b.hits]
        hybrid_tie_equal += sorted((round(h.score, 6), h.id) for h in a.hits) == sorted(
            (round(h.score, 6), h.id) for h in b.hits)
    return {
        "same_chunks": same_chunks,
        "chunks": len(chunks(survivor.db_path)),
        "bm25_answers_equal": f"{bm25_equal}/{len(QUERIES)}",
        "vectors": {"survivor": len(mine), "fresh": len(theirs), "same_hashes": mine.keys() == theirs.keys(),
                    "max_abs_difference": worst},
        "hybrid_top10_identical": f"{hybrid_equal}/{len(QUERIES)}",
        "hybrid_top10_same_scores_and_ids": f"{hybrid_tie_equal}/{len(QUERIES)}",
        "modes_used": sorted(modes),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12, help="kills per command (three commands)")
    parser.add_argument("--model", default="bundled", help="bundled (real MiniLM) or none (BM25 only)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--notes", type=int, default=150)
    parser.add_argument("--events", type=int, default=600)
    parser.add_argument("--json", dest="json_out", help="also write the figures to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary memory root")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="memsearch-crash-"))
    root = make_root(base, args.notes, args.events, seed=args.seed)
    env = env_for(root, args.model, MEMSEARCH_NO_SERVER="1")
    from indexer.base.settings import resolve_settings

    settings = resolve_settings(root, model=args.model)
    db = settings.db_path
    print(f"memory root {root}; {machine_note()}", flush=True)
    if not initial_index(env):
        return 1

    plan = [kind for _ in range(args.rounds) for kind in KINDS]
    rng.shuffle(plan)
    rounds, problems = [], []
    for n, kind in enumerate(plan, 1):
        mutate(root, rng, n)
        result = kill_one(kind, env, rng, settings)
        check = check_db(db)
        result["check_after_kill"] = "ok" if check and check.ok else (str(check) if check else "no index")
        result["orphan_embeddings"] = check.orphan_embeddings if check else None
        result["leftover_builds"] = len(list((root / ".memsearch").glob("rebuild-*")))
        after = run([MEMSEARCH, "index", "--json"], env)
        result["next_index"] = "ok" if after.returncode == 0 else f"exit {after.returncode}: {after.stderr.strip()}"
        result["next_index_s"] = round(after.seconds, 2)
        check = check_db(db)
        result["check_after_index"] = "ok" if check and check.ok else str(check)
        rounds.append(result)
        bad = [k for k in ("check_after_kill", "next_index", "check_after_index") if result[k] != "ok"]
        if bad:
            problems.append(result)
        print(f"{n:3d} {kind:8s} killed after {result['delay']:5.2f}s"
              f" ({'running' if result['killed_while_running'] else 'had exited ' + str(result['exit'])}):"
              f" check {result['check_after_kill']}, next index {result['next_index']} in {result['next_index_s']}s,"
              f" check {result['check_after_index']}", flush=True)

    last = run([MEMSEARCH, "index", "--json"], env)
    fresh = resolve_settings(root, model=args.model, db_path=str(base / "fresh.db"))
    built = run([MEMSEARCH, "index", "--json"], {**env, "MEMSEARCH_DB": str(fresh.db_path)})
    comparison: dict[str, Any] = compare(settings, fresh) if last.returncode == 0 and built.returncode == 0 else {
        "error": (last.stderr + built.stderr).strip()}
    per_kind = {k: {"kills": sum(1 for r in rounds if r["kind"] == k),
                    "killed_while_running": sum(1 for r in rounds if r["kind"] == k and r["killed_while_running"]),
                    "integrity_ok_after_kill": sum(1 for r in rounds if r["kind"] == k and r["check_after_kill"] == "ok"),
                    "next_index_ok": sum(1 for r in rounds if r["kind"] == k and r["next_index"] == "ok")}
                for k in KINDS}
    ok = (not problems and comparison.get("same_chunks") is True
          and comparison.get("bm25_answers_equal") == f"{len(QUERIES)}/{len(QUERIES)}"
          and comparison.get("vectors", {}).get("same_hashes") is True
          and comparison.get("vectors", {}).get("max_abs_difference", 1) < 1e-4)
    figures = {"model": args.model, "seed": args.seed, "kills": len(rounds), "per_kind": per_kind,
               "problems": problems, "final_comparison": comparison, "machine": machine_note(), "ok": ok,
               "rounds": rounds}
    print(json.dumps({k: v for k, v in figures.items() if k != "rounds"}, indent=2))
    print(f"RESULT: {'PASS' if ok else 'FAIL'}")
    return finish(args, figures, base, ok)


if __name__ == "__main__":
    sys.exit(main())
