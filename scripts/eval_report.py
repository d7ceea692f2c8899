"""The evaluation's report: the printed tables and the targets checked against the figures."""

from __future__ import annotations

from typing import Any

from scripts.eval_data import CJK_SETS, LOCOMO_CATEGORIES
from scripts.eval_metrics import KS


def _f(x: Any, digits: int = 3) -> str:
    return "-" if x is None else (f"{x:.{digits}f}" if isinstance(x, float) else str(x))


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [headers, *[[_f(c) if not isinstance(c, str) else c for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cost(res: dict, mode: str) -> list[Any]:
    lat = res["modes"][mode]["latency_ms"]
    return [res["index"]["build_seconds"], round(lat["p50"], 1), round(lat["p95"], 1)]


def render(results: dict) -> str:
    out: list[str] = []
    ds = results["datasets"]
    if "locomo" in ds:
        r = ds["locomo"]
        out.append(f"LoCoMo dev: {r['queries']} questions (cat 1-4), {r['documents']} event files, "
                   f"{r['index']['chunks']} chunks, k={r['fetch_k']}")
        rows = []
        for mode, v in r["modes"].items():
            o = v["overall"]
            rows.append([mode, *[o[f"recall@{k}"] for k in KS], *[o[f"session_recall@{k}"] for k in KS],
                         o["mrr@10"], o["ndcg@10"], *_cost(r, mode)])
        out.append(table(["mode", "turn R@1", "R@5", "R@10", "sess R@1", "R@5", "R@10", "MRR@10", "nDCG@10",
                          "index s", "p50 ms", "p95 ms"], rows))
        groups = sorted({g for v in r["modes"].values() for g in v["groups"]})
        rows = []
        for g in groups:
            for mode, v in r["modes"].items():
                gv = v["groups"].get(g)
                if gv:
                    rows.append([g if mode == next(iter(r["modes"])) else "", mode, gv["n"], gv["recall@1"],
                                 gv["recall@5"], gv["recall@10"], gv["session_recall@5"], gv["mrr@10"],
                                 gv["ndcg@10"]])
        kept = r["modes"].get("hybrid", {}).get("fusion_top10")
        if kept:
            out.append(f"\nFusion, top 10: {kept['buried']} questions have a gold turn in the BM25 or vector top 10 but "
                       f"not in hybrid's (buried), {kept['gained']} one in hybrid's but in neither list's (gained); "
                       f"any gold: {kept['questions_buried']} buried, {kept['questions_gained']} gained")
        out.append("\nLoCoMo by category")
        out.append(table(["category", "mode", "n", "turn R@1", "R@5", "R@10", "sess R@5", "MRR@10", "nDCG@10"],
                         rows))
        out.append("")
    if "timeline" in ds:
        r = ds["timeline"]
        out.append(f"Timeline: {r['queries']} temporal questions on one user's memory, {r['index']['chunks']} events, "
                   f"k={r['fetch_k']}")
        modes = list(r["modes"])
        groups = sorted({g for v in r["modes"].values() for g in v["groups"]})
        rows = [["all", r["queries"], *[r["modes"][m]["overall"][f"recall@{k}"] for m in modes for k in (1, 5)]]]
        for g in groups:
            gv = {m: r["modes"][m]["groups"].get(g, {}) for m in modes}
            rows.append([g, gv[modes[0]].get("n", 0), *[gv[m].get(f"recall@{k}") for m in modes for k in (1, 5)]])
        out.append(table(["time expression", "n", *[f"{m} R@{k}" for m in modes for k in (1, 5)]], rows))
        out.append("")
    if "scifact" in ds:
        r = ds["scifact"]
        out.append(f"SciFact: {r['queries']} test queries, {r['documents']} abstracts, "
                   f"{r['index']['chunks']} chunks, k={r['fetch_k']} hits -> docs")
        rows = [[mode, v["overall"]["ndcg@10"], *[v["overall"][f"recall@{k}"] for k in KS], v["overall"]["mrr@10"],
                 *_cost(r, mode)] for mode, v in r["modes"].items()]
        out.append(table(["mode", "nDCG@10", "R@1", "R@5", "R@10", "MRR@10", "index s", "p50 ms", "p95 ms"], rows))
        out.append("")
    cjk = [n for n in CJK_SETS if n in ds]
    if cjk:
        out.append("CJK (one note per paragraph; R@k = gold paragraph in top k)")
        rows = []
        for n in cjk:
            r = ds[n]
            for mode, v in r["modes"].items():
                o, g = v["overall"], v["groups"]
                two, bio = g.get("2char-word", {}), g.get("bigram-only", {})
                rows.append([f"{n} ({r['notes']['language']})" if mode == next(iter(r["modes"])) else "", mode,
                             r["queries"], o["recall@1"], o["recall@5"], o["mrr@10"],
                             two.get("n", 0), two.get("recall@1"), two.get("recall@5"),
                             bio.get("n", 0), bio.get("recall@1"), bio.get("recall@5"), v.get("gold_hidden_by_dedup"),
                             *_cost(r, mode)])
        out.append(table(["set", "mode", "n", "R@1", "R@5", "MRR@10", "2char n", "R@1", "R@5",
                          "bigram-only n", "R@1", "R@5", "gold hidden", "index s", "p50 ms", "p95 ms"], rows))
        out.append("")
    lost = [f"{name} {mode} {v['gold_hidden_by_dedup']}" for name, r in ds.items()
            for mode, v in r["modes"].items() if "gold_hidden_by_dedup" in v and name not in CJK_SETS]
    if lost:
        out.append("Gold documents hidden by dedup (and not shown by another hit): " + ", ".join(lost))
        out.append("")
    for name in ("locomo", "scifact"):
        curve = ds.get(name, {}).get("dedup_curve")
        if curve:
            out.append(f"Dedup threshold curve, {name} hybrid (k={ds[name]['fetch_k']}; current default "
                       f"{results['settings']['dedup_threshold']})")
            cols = [c for c in ("recall@5", "session_recall@5", "ndcg@10", "mrr@10") if c in curve[0]]
            rows = [[str(c["threshold"]), *[c[x] for x in cols], c["mean_hidden"], c["queries_with_hidden"]]
                    for c in curve]
            out.append(table(["threshold", *cols, "mean hidden", "share q hidden"], rows))
            out.append("")
    inj = results.get("injection")
    if inj:
        out.append(f"Injection (LoCoMo dev as a user's memory, {inj['questions']} questions through the prompt hook; "
                   f"gate {inj['gate']})")
        rows = []
        for path, v in inj["paths"].items():
            for label in ("chosen", "no_gate"):
                r = v[label]
                rows.append([path, label.replace("_", " "), r.get("injected_recall"), r.get("false_injection"),
                             r.get("mean_items"), None])
            m = v["mixed_memory"]
            rows.append([path, "mixed memory", m.get("injected_recall"), None, m.get("mean_items"), m.get("foreign")])
        out.append(table(["path", "gate", "injected recall", "false injection", "items", "foreign project"], rows))
        for path, v in inj["paths"].items():
            for name, curve in v["sweep"].items():
                out.append(f"\n{path}: sweep of {name}")
                bad = "false_injection" if "false_injection" in curve[0] else "foreign"
                out.append(table([name, "injected recall", bad.replace("_", " "), "items"],
                                 [[str(r[name]), r["injected_recall"], r[bad], r["mean_items"]] for r in curve]))
        out.append(f"plot: {inj['plot']}\n")
    checks = results.get("targets", [])
    if checks:
        out.append("Targets")
        out.append(table(["target", "value", "ok"], [[c["target"], c["value"], "yes" if c["ok"] else "NO"]
                                                     for c in checks]))
    return "\n".join(out)


#: the LoCoMo group the multi-hop goal reads
MULTI_HOP = f"cat1 {LOCOMO_CATEGORIES[1]}"


def targets(ds: dict) -> list[dict]:
    """The goals ``make eval`` checks, each with its value and whether it is met: LoCoMo dev hybrid turn recall@5
    ≥ 0.70, session recall@5 ≥ 0.92 and multi-hop ≥ 0.45, fusion burying no more gold than it gains, SciFact, and
    on each CJK set recall@5 ≥ 0.97 and never below the FTS5 trigram reference; dedup hides no gold."""
    checks: list[dict] = []

    def get(name: str, mode: str, metric: str) -> float | None:
        return ds.get(name, {}).get("modes", {}).get(mode, {}).get("overall", {}).get(metric)

    def add(label: str, value: float | None, ok: bool) -> None:
        checks.append({"target": label, "value": None if value is None else round(value, 4), "ok": bool(ok)})

    headline = {"locomo": ["recall@5", "session_recall@5"], "scifact": ["ndcg@10"],
                **{n: ["recall@5"] for n in CJK_SETS}}
    if "locomo" in ds:
        for label, metric, goal in (("turn R@5", "recall@5", 0.70), ("session R@5", "session_recall@5", 0.92)):
            v = get("locomo", "hybrid", metric)
            add(f"locomo hybrid {label} >= {goal:.2f}", v, v is not None and v >= goal)
        multi = ds["locomo"].get("modes", {}).get("hybrid", {}).get("groups", {}).get(MULTI_HOP, {}).get("recall@5")
        add("locomo hybrid multi-hop turn R@5 >= 0.45", multi, multi is not None and multi >= 0.45)
        for metric in ("recall@5", "session_recall@5"):
            h, b, ve = (get("locomo", m, metric) for m in ("hybrid", "bm25", "vector"))
            if h is not None and b is not None and ve is not None:
                add(f"locomo hybrid {metric} > bm25 and vector", h - max(b, ve), h > max(b, ve))
        kept = ds["locomo"].get("modes", {}).get("hybrid", {}).get("fusion_top10")
        if kept:
            add("locomo fusion buried <= gained (delta)", kept["gained"] - kept["buried"],
                kept["buried"] <= kept["gained"])
    if "scifact" in ds:
        v = get("scifact", "hybrid", "ndcg@10")
        add("scifact hybrid nDCG@10 >= 0.72", v, v is not None and v >= 0.72)
    for n in CJK_SETS:
        if n in ds:
            ref = get(n, "fts5-trigram", "recall@5")
            for mode in ("hybrid", "bm25"):
                v = get(n, mode, "recall@5")
                if v is not None:
                    add(f"{n} {mode} R@5 >= 0.97", v, v >= 0.97)
                    if ref is not None:
                        add(f"{n} {mode} R@5 >= fts5 trigram reference (delta)", v - ref, v >= ref)
                        r1, ref1 = get(n, mode, "recall@1"), get(n, "fts5-trigram", "recall@1")
                        if r1 is not None and ref1 is not None:
                            add(f"{n} {mode} R@1 >= fts5 trigram reference (delta)", r1 - ref1, r1 >= ref1)
    for name, r in ds.items():
        for mode in ("hybrid", "bm25", "vector"):
            lost = r.get("modes", {}).get(mode, {}).get("gold_hidden_by_dedup")
            if lost is not None:
                add(f"{name} {mode} gold hidden by dedup = 0", lost, lost == 0)
    for name, metrics in headline.items():
        for metric in metrics:
            h, b, ve = (get(name, m, metric) for m in ("hybrid", "bm25", "vector"))
            singles = [x for x in (b, ve) if x is not None]
            if h is not None and singles:
                gap = h - max(singles)
                add(f"{name} hybrid {metric} >= best single - 0.01 (delta)", gap, gap >= -0.01)
    return checks


def injection_targets(inj: dict | None) -> list[dict]:
    checks = []
    for path, v in (inj or {}).get("paths", {}).items():
        r = v["chosen"].get("injected_recall")
        f = v["chosen"].get("false_injection")
        checks.append({"target": f"injection {path}: injected recall >= 0.55", "value": r, "ok": r >= 0.55})
        checks.append({"target": f"injection {path}: false injection <= 0.10", "value": f, "ok": f <= 0.10})
    return checks
