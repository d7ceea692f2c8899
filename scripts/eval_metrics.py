"""Ranking metrics of one query (recall@k, MRR@10, nDCG@10, session recall) and their means."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

KS = (1, 5, 10)


def unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def query_metrics(ranked: list[str], gold: dict[str, float], session_of: Callable[[str], str] | None) -> dict:
    """Metrics of one query from its document ranking (best first, unique) and graded gold."""
    m: dict[str, float] = {}
    for k in KS:
        m[f"recall@{k}"] = sum(1 for d in ranked[:k] if d in gold) / len(gold)
    first = next((i for i, d in enumerate(ranked[:10], start=1) if d in gold), None)
    m["mrr@10"] = 1.0 / first if first else 0.0
    dcg = sum(gold.get(d, 0.0) / math.log2(i + 1) for i, d in enumerate(ranked[:10], start=1))
    ideal = sum(r / math.log2(i + 1) for i, r in enumerate(sorted(gold.values(), reverse=True)[:10], start=1))
    m["ndcg@10"] = dcg / ideal if ideal else 0.0
    if session_of is not None:
        gold_sessions = {session_of(d) for d in gold}
        for k in KS:
            got = {session_of(d) for d in ranked[:k]}
            m[f"session_recall@{k}"] = len(gold_sessions & got) / len(gold_sessions)
    return m


def mean_metrics(rows: list[dict]) -> dict:
    if not rows:
        return {}
    return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]}
