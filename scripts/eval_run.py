"""Running the evaluation: indexes built (and cached) per memory root with the real indexer, every question
asked through ``search()`` in each mode, the plain FTS5 trigram reference of the CJK sets, the dedup threshold
curve, and the injection section through the prompt hook's code."""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from indexer.base.errors import ModelUnavailable
from indexer.base.settings import Settings, resolve_settings
from indexer.pipeline import index
from indexer.store import sqlite as store
from indexer.store.local import SqliteStore
from scripts.eval_data import CJK_SETS, Dataset, Query, half_queries, limit_queries, load_locomo
from scripts.eval_metrics import mean_metrics, query_metrics, unique
from scripts.stats import percentile
from search_engine.search import search

#: Bump when the way datasets are written into memory roots changes, so cached indexes are rebuilt.
LAYOUT_VERSION = "1"
DEDUP_THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.83, 0.9, 0.95, 1.01)
FETCH = {"events": 10, "notes": 30}


def trigram_reference(ds: Dataset, fetch: int) -> dict:
    """The CJK sets' reference: a plain FTS5 ``trigram`` index over the same paragraph files, queried with the
    OR of every 3-character window of the question's space-separated words (words under 3 characters cannot
    match a trigram index and are left out), ranked by FTS5's bm25. No bigrams, no stopwords, no model."""
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(stem UNINDEXED, body, tokenize='trigram')")
    with conn:
        for path, data in ds.roots["corpus"].items():
            conn.execute("INSERT INTO t(stem, body) VALUES (?, ?)", (Path(path).stem, data.decode()))
    rows, lat = [], []
    for q in ds.queries:
        started = time.perf_counter()
        grams = unique(w[i : i + 3].lower() for w in re.findall(r"[^\s\W_]+", q.text) for i in range(len(w) - 2))
        ranked: list[str] = []
        if grams:
            expression = " OR ".join('"' + g.replace('"', '""') + '"' for g in grams)
            ranked = [r[0] for r in conn.execute(
                "SELECT stem FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (expression, fetch))]
        lat.append((time.perf_counter() - started) * 1000)
        rows.append((q, query_metrics(ranked, q.gold, None)))
    conn.close()
    groups: dict[str, list[dict]] = defaultdict(list)
    for q, m in rows:
        for g in q.groups:
            groups[g].append(m)
    return {
        "overall": mean_metrics([m for _, m in rows]),
        "groups": {g: {"n": len(ms), **mean_metrics(ms)} for g, ms in sorted(groups.items())},
        "latency_ms": {"p50": round(percentile(lat, 50), 2), "p95": round(percentile(lat, 95), 2),
                       "mean": round(sum(lat) / len(lat), 2)},
        "mean_hidden_duplicates": 0.0,
        "gold_hidden_by_dedup": 0,
        "mode_used": {"fts5-trigram": len(rows)},
    }


class MemoEmbedder:
    """The real embedder with query vectors remembered (the dedup curve asks each question many times)."""

    def __init__(self, inner):
        self.inner, self.model_id, self.dim, self._memo = inner, inner.model_id, inner.dim, {}

    def embed_passages(self, texts):
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> bytes:
        if text not in self._memo:
            self._memo[text] = self.inner.embed_query(text)
        return self._memo[text]


@dataclass
class Runner:
    work: Path
    cache_dir: Path
    overrides: dict[str, Any]
    embedder: Any  # a loaded embedder, or None for BM25 only
    model_note: str | None = None
    #: ``--backend postgres``: the server (scripts.pg_team.Server) whose team stores the questions are asked of
    pg: Any = None
    #: the roots ``--fresh`` rebuilt in this run: a later section asking the same memory (injection after locomo)
    #: reuses them instead of indexing them once more
    rebuilt: set[Path] = field(default_factory=set)

    def settings(self, root: Path, **extra: Any) -> Settings:
        flags = {**self.overrides, **extra}
        return resolve_settings(
            root, db_path=root / ".memsearch" / "index.db", cache_dir=self.cache_dir, extra_sources=[], **flags
        )

    def cache_key(self) -> str:
        s = self.settings(self.work)
        model = re.sub(r"[^A-Za-z0-9._-]+", "_", str(s.model))
        if s.model_dir:
            model += "-" + re.sub(r"[^A-Za-z0-9._-]+", "_", str(s.model_dir))[-40:]
        if self.embedder is None:
            model += "-nomodel"
        return f"c{s.chunk_chars}-o{s.chunk_overlap}-{model}-L{LAYOUT_VERSION}"

    @staticmethod
    def _changed(root: Path, files: dict[str, bytes]) -> bool:
        """Whether a cached root holds a file the dataset no longer has, or one with other bytes (a generated set
        that changed): it is then built again from nothing. Updated in place, its index would keep what the old
        files said elsewhere (an event's turn context is read from the index)."""
        for folder in {rel.split("/", 1)[0] for rel in files if "/" in rel}:
            for path in (root / folder).rglob("*") if (root / folder).is_dir() else ():
                rel = path.relative_to(root).as_posix()
                if path.is_file() and (rel not in files or path.read_bytes() != files[rel]):
                    return True
        return False

    def build(self, ds: Dataset, root_name: str, files: dict[str, bytes], fresh: bool) -> tuple[Path, dict]:
        base = self.work / ds.name / self.cache_key()
        root = base / root_name
        info_path = base / f"{root_name}.build.json"
        if (fresh or self._changed(root, files)) and root not in self.rebuilt:
            if root.exists():
                shutil.rmtree(root)
            info_path.unlink(missing_ok=True)
            self.rebuilt.add(root)
        for rel, data in files.items():
            path = root / rel
            if path.is_file() and path.read_bytes() == data:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        settings = self.settings(root)
        started = time.perf_counter()
        report = index(settings, embedder=self.embedder)
        seconds = time.perf_counter() - started
        info = json.loads(info_path.read_text()) if info_path.is_file() else {}
        if report.chunks_added or report.chunks_embedded or not info:
            info = {
                "build_seconds": round(seconds, 3),
                "chunks_added": report.chunks_added,
                "chunks_embedded": report.chunks_embedded,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            }
            info_path.parent.mkdir(parents=True, exist_ok=True)
            info_path.write_text(json.dumps(info))
        conn = store.connect(settings.db_path)
        try:
            chunks = conn.execute("SELECT count(*) FROM chunks").get
        finally:
            conn.close()
        info = {**info, "this_run_seconds": round(seconds, 3), "chunks": chunks,
                "pending": report.chunks_pending, "skipped": len(report.skipped), "note": report.model_note}
        return root, info


def team_database(dataset: str, root_name: str) -> str:
    return "eval_" + re.sub(r"[^a-z0-9_]+", "_", f"{dataset}_{root_name}".lower())


def team_store(runner: Runner, dataset: str, root_name: str, settings: Settings) -> tuple[Any, Settings, dict]:
    """The memory root's index on the team store: a fresh database on ``runner.pg``, filled by ``memsearch sync``
    from the local index just built (its stored vectors, never computed again); the store, the settings that read
    it, and what the sync did."""
    from indexer.store.postgres import PgStore
    from indexer.sync import sync

    model = runner.embedder.model_id if runner.embedder is not None else None
    dim = runner.embedder.dim if runner.embedder is not None else None
    _, url = runner.pg.fresh_database(team_database(dataset, root_name), model, dim)
    settings = settings.replace(db_url=url)
    team = PgStore(url, max_size=2, timeout=30)
    started = time.perf_counter()
    report = sync(settings, team=team, machine="eval")
    info = {"sync_seconds": round(time.perf_counter() - started, 2), "chunks": report.chunks_added,
            "vectors": report.vectors_sent, "vectors_pending": report.vectors_pending}
    log(f"[{dataset}] {root_name}: synced to the team store: {report.chunks_added} chunks, {report.vectors_sent} "
        f"vectors in {info['sync_seconds']}s")
    return team, settings, info


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def evaluate(ds: Dataset, runner: Runner, modes: list[str], fresh: bool, curve: bool, fetch: int | None,
             dump: list | None) -> dict:
    fetch = fetch or FETCH[ds.kind]
    by_root: dict[str, list[Query]] = defaultdict(list)
    for q in ds.queries:
        by_root[q.root].append(q)
    builds = {}
    per_mode: dict[str, list[tuple[Query, dict, float, int, str]]] = defaultdict(list)
    curve_rows: dict[float, list[tuple[dict, int]]] = defaultdict(list)
    skipped_modes: dict[str, str] = {}
    hidden_lost: Counter = Counter()
    top10: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for root_name, files in ds.roots.items():
        log(f"[{ds.name}] {root_name}: {len(files)} files, indexing…")
        root, info = runner.build(ds, root_name, files, fresh)
        builds[root_name] = info
        log(f"[{ds.name}] {root_name}: {info['chunks']} chunks (build {info['build_seconds']}s, "
            f"this run {info['this_run_seconds']}s)")
        queries = by_root.get(root_name, [])
        if not queries:
            continue
        settings = runner.settings(root)
        conn = store.connect(settings.db_path)
        index_store: Any = SqliteStore(conn, settings.db_path)
        if runner.pg is not None:
            index_store, settings, builds[root_name]["team"] = team_store(runner, ds.name, root_name, settings)
        try:
            for mode in modes:
                if mode in skipped_modes:
                    continue
                t_mode = time.perf_counter()
                for q in queries:
                    started = time.perf_counter()
                    try:
                        res = search(settings, q.text, mode=mode, k=fetch, embedder=runner.embedder, store=index_store,
                                     now=ds.asked_at.get(root_name))
                    except ModelUnavailable as exc:
                        skipped_modes[mode] = str(exc)
                        break
                    ms = (time.perf_counter() - started) * 1000
                    ranked = unique(ds.doc_of(h) for h in res.hits)
                    m = query_metrics(ranked, q.gold, ds.session_of)
                    per_mode[mode].append((q, m, ms, res.hidden_duplicates, res.mode_used))
                    top10[mode][q.qid] = ranked[:10]
                    if res.hidden_duplicates:
                        lost = hidden_gold(ds, conn, search(settings, q.text, mode=mode, k=fetch,
                                                            embedder=runner.embedder, store=index_store, explain=True,
                                                            now=ds.asked_at.get(root_name)), q)
                        hidden_lost[mode] += lost
                    if dump is not None:
                        dump.append({"dataset": ds.name, "mode": mode, "qid": q.qid, "query": q.text,
                                     "gold": sorted(q.gold), "ranked": ranked, **m})
                log(f"[{ds.name}] {root_name}: {mode} {len(queries)} queries in {time.perf_counter() - t_mode:.1f}s")
            if curve and runner.embedder is not None:
                memo = MemoEmbedder(runner.embedder)
                for t in DEDUP_THRESHOLDS:
                    s_t = runner.settings(root, dedup_threshold=t)
                    for q in queries:
                        res = search(s_t, q.text, mode="hybrid", k=fetch, embedder=memo, store=index_store,
                                     now=ds.asked_at.get(root_name))
                        ranked = unique(ds.doc_of(h) for h in res.hits)
                        curve_rows[t].append((query_metrics(ranked, q.gold, ds.session_of), res.hidden_duplicates))
        finally:
            if runner.pg is not None:
                index_store.close()
                runner.pg.drop_database(team_database(ds.name, root_name))
            conn.close()

    out: dict[str, Any] = {
        "kind": ds.kind,
        "queries": len(ds.queries),
        "fetch_k": fetch,
        "documents": sum(len(f) for f in ds.roots.values()),
        "index": {
            "build_seconds": round(sum(b["build_seconds"] for b in builds.values()), 3),
            "this_run_seconds": round(sum(b["this_run_seconds"] for b in builds.values()), 3),
            "chunks": sum(b["chunks"] for b in builds.values()),
            "pending_embeddings": sum(b["pending"] or 0 for b in builds.values()),
            "per_root": builds,
        },
        "modes": {},
        **({"notes": ds.notes} if ds.notes else {}),
    }
    if skipped_modes:
        out["skipped_modes"] = skipped_modes
    for mode, rows in per_mode.items():
        lat = [ms for _, _, ms, _, _ in rows]
        groups: dict[str, list[dict]] = defaultdict(list)
        for q, m, *_ in rows:
            for g in q.groups:
                groups[g].append(m)
        out["modes"][mode] = {
            "overall": mean_metrics([m for _, m, *_ in rows]),
            "groups": {g: {"n": len(ms), **mean_metrics(ms)} for g, ms in sorted(groups.items())},
            "latency_ms": {"p50": round(percentile(lat, 50), 2), "p95": round(percentile(lat, 95), 2),
                           "mean": round(sum(lat) / len(lat), 2)},
            "mean_hidden_duplicates": round(sum(h for *_, h, _ in rows) / len(rows), 3),
            "gold_hidden_by_dedup": hidden_lost[mode],
            "mode_used": dict(Counter(u for *_, u in rows)),
        }
    if all(m in top10 for m in ("bm25", "vector", "hybrid")):
        out["modes"]["hybrid"]["fusion_top10"] = buried_gained(ds.queries, top10)
    if ds.name in CJK_SETS:
        out["modes"]["fts5-trigram"] = trigram_reference(ds, fetch)
    if curve_rows:
        out["dedup_curve"] = [
            {"threshold": t, **{k: v for k, v in mean_metrics([m for m, _ in rows]).items()
                                if k in ("recall@5", "session_recall@5", "ndcg@10", "mrr@10")},
             "mean_hidden": round(sum(h for _, h in rows) / len(rows), 3),
             "queries_with_hidden": round(sum(1 for _, h in rows if h) / len(rows), 3)}
            for t, rows in sorted(curve_rows.items())
        ]
    return out


def evaluate_injection(data: Path, runner: Runner, fresh: bool, limit: int | None, out_dir: Path,
                       dump: list | None, half: str | None = None) -> dict:
    """The injection section (see scripts/eval_injection.py): both hook paths, own and other memory, a mixed
    memory of two conversations as two projects, and the gate sweep with its plot."""
    from scripts import eval_injection as inj
    from search_engine.context import gate_for

    gate = gate_for(runner.embedder.model_id if runner.embedder is not None else None)

    ds = load_locomo(data)
    ds.queries = limit_queries(half_queries(ds.queries, half), limit)
    names = list(ds.roots)
    homes = {n: runner.build(ds, n, ds.roots[n], fresh)[0] for n in names}
    by_root: dict[str, list[Query]] = defaultdict(list)
    for q in ds.queries:
        by_root[q.root].append(q)
    # the mixed memory: the first two conversations in one root, each under its own project
    a, b = names[0], names[1]
    mixed_files: dict[str, bytes] = dict(ds.roots[a])
    for rel, body in ds.roots[b].items():
        mixed_files[rel] = mixed_files.get(rel, b"") + body
    mixed = Dataset("locomo-mixed", "events", {f"{a}+{b}": mixed_files}, [], ds.doc_of)
    mixed_home = runner.build(mixed, f"{a}+{b}", mixed_files, fresh)[0]
    paths = list(inj.PATHS) if runner.embedder is not None else ["bm25"]
    rows: dict[str, list] = {p: [] for p in paths}
    for path in paths:
        for i, n in enumerate(names):
            asked = [(q, "own", n) for q in by_root[n]]
            # questions of the previous conversation, asked inside this memory's project: nothing holds them
            asked += [(q, "other", n) for q in by_root[names[i - 1]]]
            rows[path] += inj.ask_all(homes[n], asked, path, runner.cache_dir, log)
        rows[path] += inj.ask_all(mixed_home, [(q, "mixed", q.root) for q in by_root[a] + by_root[b]], path,
                                  runner.cache_dir, log)
    out: dict[str, Any] = {"questions": len(ds.queries), "gate": gate._asdict(), "paths": {}}
    curves: dict[str, dict[str, list[dict]]] = {}
    for path, answers in rows.items():
        single = [r for r in answers if r.memory != "mixed"]
        both = [r for r in answers if r.memory == "mixed"]
        curves[path] = {name: inj.sweep(both if name == "foreign_margin" else single, name, values, gate)
                        for name, values in inj.sweep_values(gate).items()}
        out["paths"][path] = {
            "chosen": inj.rates(single, gate),
            "no_gate": inj.rates(single, False),
            "mixed_memory": inj.rates(both, gate),
            "sweep": curves[path],
        }
    png = inj.plot(curves, gate._asdict(), out_dir / "injection-gate.png")
    out["plot"] = str(png) if png else "matplotlib not installed (pip install -e '.[bench]')"
    if dump is not None:
        inj.dump([r for asked in rows.values() for r in asked], out_dir / "injection-candidates.jsonl")
    return out


def buried_gained(queries: list[Query], top10: dict[str, dict[str, list[str]]]) -> dict:
    """What fusion kept of its two lists, per question: ``buried`` = a gold document is in the BM25 or the vector
    top 10 but not in hybrid's; ``gained`` = a gold document is in hybrid's top 10 but in neither list's. The
    ``questions_`` pair asks the same of any gold at all (found by a list, not by hybrid; and the other way)."""
    buried = gained = q_buried = q_gained = 0
    for q in queries:
        if q.qid not in top10["hybrid"]:
            continue
        gold = set(q.gold)
        lists = set(top10["bm25"].get(q.qid, ())) | set(top10["vector"].get(q.qid, ()))
        hybrid = set(top10["hybrid"][q.qid])
        buried += bool((lists & gold) - hybrid)
        gained += bool((hybrid & gold) - lists)
        q_buried += bool(lists & gold) and not hybrid & gold
        q_gained += bool(hybrid & gold) and not lists & gold
    return {"buried": buried, "gained": gained, "questions_buried": q_buried, "questions_gained": q_gained}


def hidden_gold(ds: Dataset, conn, res, q: Query) -> int:
    """How many of ``q``'s gold documents were hidden as a near-duplicate and are not shown by another hit."""
    shown = {ds.doc_of(h) for h in res.hits}
    hidden = [e.id for e in res.explain or () if e.duplicate_of is not None]
    lost = set()
    for uid in hidden:
        row = conn.execute("SELECT path, event_id, uid FROM chunks WHERE uid = ?", (uid,)).fetchone()
        if row is None:
            continue
        doc = ds.doc_of(_Row(row[0], row[1], row[2]))
        if doc in q.gold and doc not in shown:
            lost.add(doc)
    return len(lost)


@dataclass
class _Row:
    path: str
    event_id: str | None
    id: str
