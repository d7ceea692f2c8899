"""The near-duplicate filter's cost (``search_engine.fusion.dedup``) on realistic hit lists. A benchmark, not a
test: it prints figures and never fails on a missed target (goal: ≤ 2 ms at k = 50).

Hit lists: for each question of LoCoMo dev, SciFact and cmrc2018 (``../shared/eval``), the top ``--pool``
chunks of a plain in-memory FTS5 trigram index over that dataset's chunks (topped up by shared bigrams) (cut as the indexer cuts them,
1,200 characters with 200 of overlap; one chunk per LoCoMo turn), best first: the near-duplicates, lengths and
languages the filter meets after fusion. Each list goes through ``dedup(hits, threshold, limit=k)``.

The product's filter is timed on both of its paths: ``python``, the samples found by a regular expression (what a
cold process such as the prompt hook runs: it never imports NumPy), and ``numpy``, the samples of all texts made
at once (what the warm server runs, NumPy being loaded there already). Reference, timed in the same run on the
same lists, interleaved call by call: the pairwise definition (:func:`dedup_pairwise`); both paths' output must
be the same as its, and it is checked.

    .venv/bin/python -m scripts.bench_dedup [--queries 200] [--pool 100] [--ks 10,50] [--threshold 0.8]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import apsw

from indexer.chunker import split_plain
from scripts.eval_data import limit_queries, load_locomo, load_scifact, load_squad_set
from scripts.stats import summary
from search_engine.fusion import (
    MAX_NOVEL_TRIGRAMS,
    DedupDecision,
    dedup,
    jaccard,
    novel,
    regex_samples,
    trigrams,
    vector_samples,
)

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval"


def dedup_pairwise(
    ranked: Sequence[tuple[Hashable, str]], threshold: float, limit: int | None = None,
    max_novel: int = MAX_NOVEL_TRIGRAMS, day_of: Mapping[Hashable, str] | None = None,
) -> tuple[list[Hashable], list[DedupDecision]]:
    """The filter as it was defined before (one Python set operation per pair): the reference for time and output.
    With ``day_of``, items of two different days are never compared."""
    kept: list[tuple[Hashable, frozenset[str]]] = []
    hidden: list[DedupDecision] = []
    days = day_of or {}
    for key, text in ranked:
        if limit is not None and len(kept) >= limit:
            break
        grams = trigrams(text)
        match = None
        for other, other_grams in kept:
            if days.get(key) is not None and days.get(other) is not None and days[key] != days[other]:
                continue
            small, large = sorted((len(grams), len(other_grams)))
            if large and small / large < threshold:
                continue
            if novel(grams, other_grams) > max_novel:
                continue
            sim = jaccard(grams, other_grams)
            if sim >= threshold:
                match = (other, sim)
                break
        if match is None:
            kept.append((key, grams))
        else:
            hidden.append(DedupDecision(key, match[0], round(match[1], 4)))
    return [key for key, _ in kept], hidden


def chunks_and_questions(data: Path, name: str, queries: int) -> tuple[list[str], list[str]]:
    """The chunk texts of one dataset and (up to ``queries``) of its questions, spread over the file."""
    if name == "locomo":
        ds = load_locomo(data)
        texts = [json.loads(line)["content"] for files in ds.roots.values() for body in files.values()
                 for line in body.decode().splitlines() if line.strip()]
    else:
        ds = load_scifact(data) if name == "scifact" else load_squad_set(data, name)
        texts = [piece for files in ds.roots.values() for body in files.values()
                 for piece in split_plain(body.decode(), 1200, 200)]
    return texts, [q.text for q in limit_queries(ds.queries, queries)]


def hit_lists(texts: list[str], questions: list[str], pool: int) -> list[list[tuple[int, str]]]:
    """For each question, the top ``pool`` chunks of a trigram FTS5 index (OR of the question's 3-grams), topped
    up with the chunks sharing the most character bigrams with it (a CJK question matches few trigrams, while
    the product's CJK search also matches bigrams and so returns full lists)."""
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='trigram')")
    with conn:
        for i, text in enumerate(texts):
            conn.execute("INSERT INTO t(rowid, body) VALUES (?, ?)", (i, text))
    out = []
    for q in questions:
        grams = {w[i : i + 3].lower() for w in re.findall(r"[^\s\W_]+", q) for i in range(len(w) - 2)}
        if not grams:
            continue
        expression = " OR ".join('"' + g.replace('"', '""') + '"' for g in sorted(grams))
        rows = conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (expression, pool))
        ids = [rowid for (rowid,) in rows]
        if len(ids) < pool:
            bigrams = {q[i : i + 2] for i in range(len(q) - 1)} - {"  "}
            taken = set(ids)
            shared = sorted(((sum(1 for b in bigrams if b in text), i) for i, text in enumerate(texts)
                             if i not in taken), key=lambda si: -si[0])
            ids += [i for n, i in shared[: pool - len(ids)] if n]
        if ids:
            out.append([(i, texts[i]) for i in ids])
    conn.close()
    return out


PATHS = {
    "python": lambda hits, threshold, k: dedup(hits, threshold, limit=k, sampler=regex_samples),
    "numpy": lambda hits, threshold, k: dedup(hits, threshold, limit=k, sampler=vector_samples),
    "reference": lambda hits, threshold, k: dedup_pairwise(hits, threshold, limit=k),
}


def measure(lists: list[list[tuple[int, str]]], k: int, threshold: float, repeats: int) -> dict[str, Any]:
    """Milliseconds per call, wall and the calling thread's CPU, of the product's filter on each path and of the
    reference, interleaved list by list (best of ``repeats`` each: on a shared machine a call may wait for a core),
    and whether they agree."""
    times: dict[str, list[float]] = {f"{name}{unit}": [] for name in PATHS for unit in ("_ms", "_cpu_ms")}
    hidden = differ = 0
    for hits in lists:
        best = dict.fromkeys(times, float("inf"))
        outputs = {}
        for _ in range(repeats):
            for name, fn in PATHS.items():
                c0, t0 = time.thread_time(), time.perf_counter()
                outputs[name] = fn(hits, threshold, k)
                wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
                best[f"{name}_ms"] = min(best[f"{name}_ms"], wall * 1000)
                best[f"{name}_cpu_ms"] = min(best[f"{name}_cpu_ms"], cpu * 1000)
        for name, value in best.items():
            times[name].append(value)
        hidden += len(outputs["reference"][1])
        differ += outputs["python"] != outputs["reference"] or outputs["numpy"] != outputs["reference"]
    figures: dict[str, Any] = {"lists": len(lists), "hidden": hidden, "outputs_differ": differ}
    figures.update({name: summary(values) for name, values in times.items()})
    for name in ("python", "numpy"):
        figures[f"{name}_speedup_p50"] = figures["reference_ms"]["p50"] / figures[f"{name}_ms"]["p50"]
    return figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--datasets", default="locomo,scifact,cmrc2018")
    p.add_argument("--queries", type=int, default=200, help="questions per dataset (spread over the file)")
    p.add_argument("--pool", type=int, default=100, help="hits per list (fusion of two lists of 50: up to 100)")
    p.add_argument("--ks", default="10,50")
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = p.parse_args(argv)
    ks = [int(k) for k in args.ks.split(",") if k.strip()]
    results: dict[str, Any] = {}
    print(f"{'dataset':10}{'k':>4}{'lists':>7}{'hidden':>8}{'py p50':>9}{'py p95':>9}{'py CPU':>9}{'np p50':>9}"
          f"{'np p95':>9}{'np CPU':>9}{'ref p50':>9}{'ref p95':>9}{'ref CPU':>9}  same output")
    for name in (n.strip() for n in args.datasets.split(",") if n.strip()):
        texts, questions = chunks_and_questions(args.data, name, args.queries)
        lists = hit_lists(texts, questions, args.pool)
        for k in ks:
            r = measure(lists, k, args.threshold, args.repeats)
            results[f"{name} k={k}"] = r
            cells = "".join(f"{r[f'{path}{unit}'][stat]:>9.3f}" for path in PATHS
                            for unit, stat in (("_ms", "p50"), ("_ms", "p95"), ("_cpu_ms", "p50")))
            same = "yes" if not r["outputs_differ"] else f"NO: {r['outputs_differ']} lists differ"
            print(f"{name:10}{k:>4}{r['lists']:>7}{r['hidden']:>8}{cells}  {same}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
