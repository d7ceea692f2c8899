#!/usr/bin/env python3
"""Retrieval quality of memsearch on public datasets (``make eval``). An evaluation, not a test: it prints
numbers, it does not assert them.

Each dataset is written into a memory root *the way the product stores it* (events as ``events/*.jsonl``, documents
as markdown notes), indexed by the real indexer with the bundled model, and queried through ``search()`` in each
mode (bm25, vector, hybrid):

- ``locomo``: LoCoMo dev, 5 conversations, each its own memory root; one event per dialog turn; questions of
  categories 1-4; gold = the evidence turns. Turn recall@1/5/10, session recall@1/5/10, MRR@10, nDCG@10,
  overall and per category.
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

    python scripts/eval.py                                   # everything, all modes
    python scripts/eval.py --datasets locomo --limit 100     # quick look
    python scripts/eval.py --datasets locomo,scifact --dedup-curve
    MEMSEARCH_BM25_WEIGHT=1.5 python scripts/eval.py --datasets scifact --modes hybrid
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
if str(REPO / "scripts") not in sys.path:
    sys.path.insert(0, str(REPO / "scripts"))

import apsw  # noqa: E402

from indexer.base.cjk import CJK_RUN_RE  # noqa: E402
from indexer.base.embedder import load_embedder, resolve_model  # noqa: E402
from indexer.base.errors import MemsearchError, ModelUnavailable  # noqa: E402
from indexer.base.settings import Settings, resolve_settings  # noqa: E402
from indexer.pipeline import index  # noqa: E402
from indexer.store import sqlite as store  # noqa: E402
from indexer.store.local import SqliteStore  # noqa: E402
from search_engine.search import search  # noqa: E402
from search_engine.timeexpr import time_window  # noqa: E402

DEFAULT_DATA = Path(os.environ.get("MEMSEARCH_EVAL_DATA") or REPO.parent / "shared" / "eval")
DEFAULT_OUT = REPO / "eval-results" / "eval.json"
#: Bump when the way datasets are written into memory roots changes, so cached indexes are rebuilt.
LAYOUT_VERSION = "1"
MODES = ("bm25", "vector", "hybrid")
KS = (1, 5, 10)
CJK_SETS = {
    "cmrc2018": ("cmrc2018-dev/cmrc2018_dev.json", "zh-Hans"),
    "drcd": ("drcd-dev/drcd_dev.json", "zh-Hant"),
    "korquad": ("korquad-dev/korquad_dev.json", "ko"),
    "jsquad": ("jsquad-dev/jsquad_dev.json", "ja"),
}
ALL_DATASETS = ("locomo", "scifact", *CJK_SETS, "injection")
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DEDUP_THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.83, 0.9, 0.95, 1.01)
FETCH = {"events": 10, "notes": 30}
#: Index-changing settings: part of the cache key.
INDEX_SETTINGS = ("chunk_chars", "chunk_overlap", "model", "model_dir")
SEARCH_SETTINGS = ("bm25_weight", "vector_weight", "rrf_k", "candidates", "dedup_threshold")


# ---------------------------------------------------------------------------------------------------------------
# datasets


@dataclass
class Query:
    qid: str
    text: str
    gold: dict[str, float]  # doc id -> graded relevance
    root: str  # which memory root holds its documents
    groups: tuple[str, ...] = ()  # subsets it belongs to, e.g. "cat2 temporal", "2char-word"


@dataclass
class Dataset:
    name: str
    kind: str  # "events" | "notes"
    roots: dict[str, dict[str, bytes]]  # memory root name -> {relative path: file bytes}
    queries: list[Query]
    doc_of: Callable[[Any], str]  # hit -> doc id
    session_of: Callable[[str], str] | None = None  # doc id -> session (LoCoMo)
    notes: dict[str, Any] = field(default_factory=dict)
    #: memory root -> when its questions are asked (relative time words count from there); default: now
    asked_at: dict[str, datetime] = field(default_factory=dict)


_EVIDENCE_RE = re.compile(r"D:?(\d+):(\d+)")


def locomo_datetime(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> datetime."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y")


def load_locomo(data: Path) -> Dataset:
    convs = json.loads((data / "locomo-dev" / "locomo_dev.json").read_text(encoding="utf-8"))
    roots: dict[str, dict[str, bytes]] = {}
    queries: list[Query] = []
    asked_at: dict[str, datetime] = {}
    dropped = Counter()
    for conv in convs:
        sid, c = conv["sample_id"], conv["conversation"]
        speakers = {c.get("speaker_a"): "prompt", c.get("speaker_b"): "response"}
        sessions = sorted(int(m.group(1)) for k in c if (m := re.fullmatch(r"session_(\d+)", k)))
        by_day: dict[str, list[str]] = defaultdict(list)
        turns: set[str] = set()
        for n in sessions:
            when = locomo_datetime(c[f"session_{n}_date_time"])
            for turn in c[f"session_{n}"]:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text = f"{text} [image: {turn['blip_caption']}]"
                tid = _turn_id(turn["dia_id"])
                turns.add(tid)
                event = {
                    "id": tid,
                    "ts": when.isoformat(),
                    "session_id": f"session_{n}",
                    "project": sid,
                    "type": speakers.get(turn["speaker"], "response"),
                    "content": text,
                    "metadata": {"speaker": turn["speaker"]},
                }
                by_day[when.date().isoformat()].append(json.dumps(event, ensure_ascii=False))
        roots[sid] = {f"events/{day}.jsonl": ("\n".join(lines) + "\n").encode() for day, lines in by_day.items()}
        asked_at[sid] = max(locomo_datetime(c[f"session_{n}_date_time"]) for n in sessions) + timedelta(days=1)
        for i, qa in enumerate(conv["qa"]):
            cat = qa.get("category")
            if cat not in LOCOMO_CATEGORIES:
                dropped["category 5"] += 1
                continue
            ids = [f"D{int(a)}:{int(b)}" for a, b in _EVIDENCE_RE.findall(" ".join(qa.get("evidence", [])))]
            gold = {t: 1.0 for t in ids if t in turns}
            if not gold:
                dropped["no valid evidence"] += 1
                continue
            groups = (f"cat{cat} {LOCOMO_CATEGORIES[cat]}",) + (("names-a-time",) if time_window(qa["question"]) else ())
            queries.append(Query(f"{sid}#{i}", qa["question"], gold, sid, groups))
    return Dataset(
        "locomo", "events", roots, queries,
        doc_of=lambda hit: hit.event_id or hit.id,
        session_of=lambda tid: tid.split(":")[0],
        notes={"dropped_questions": dict(dropped)},
        asked_at=asked_at,
    )


def _turn_id(dia_id: str) -> str:
    m = _EVIDENCE_RE.search(dia_id)
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else dia_id


def _note_stem(hit: Any) -> str:
    return Path(hit.path).stem


def load_scifact(data: Path) -> Dataset:
    base = data / "scifact"
    files: dict[str, bytes] = {}
    for line in (base / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            doc = json.loads(line)
            title = " ".join(doc.get("title", "").split())
            files[f"notes/{doc['_id']}.md"] = f"# {title}\n\n{doc.get('text', '').strip()}\n".encode()
    texts = {}
    for line in (base / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            texts[q["_id"]] = q["text"]
    qrels: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (base / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) >= 3 and float(parts[2]) > 0:
            qrels[parts[0]][parts[1]] = float(parts[2])
    queries = [Query(qid, texts[qid], gold, "corpus") for qid, gold in qrels.items() if qid in texts]
    return Dataset("scifact", "notes", {"corpus": files}, queries, doc_of=_note_stem)


def load_squad_set(data: Path, name: str) -> Dataset:
    rel, lang = CJK_SETS[name]
    d = json.loads((data / rel).read_text(encoding="utf-8"))
    files: dict[str, bytes] = {}
    by_text: dict[str, set[str]] = {}
    file_of: dict[str, str] = {}
    for art in d["data"]:
        for pi, p in enumerate(art["paragraphs"]):
            did = p.get("id") or f"{art['title']}#{pi}"
            stem = f"p{len(file_of):05d}"
            file_of[did] = stem
            files[f"notes/{stem}.md"] = (p["context"].strip() + "\n").encode()
            by_text.setdefault(p["context"], set()).add(stem)
    queries: list[Query] = []
    for art in d["data"]:
        for p in art["paragraphs"]:
            for q in p["qas"]:
                if q["question"].strip():
                    gold = {stem: 1.0 for stem in by_text[p["context"]]}
                    groups = tuple(g for g, ok in (("2char-word", _has_two_char_run(q["question"])),
                                                   ("bigram-only", _bigram_only(q["question"], p["context"]))) if ok)
                    queries.append(Query(str(q["id"]), q["question"], gold, "corpus", groups))
    return Dataset(name, "notes", {"corpus": files}, queries, doc_of=_note_stem, notes={"language": lang})


def _has_two_char_run(question: str) -> bool:
    return any(len(m.group(0)) == 2 for m in CJK_RUN_RE.finditer(question))


def _bigram_only(question: str, context: str) -> bool:
    runs = [m.group(0) for m in CJK_RUN_RE.finditer(question)]
    if any(r[i : i + 3] in context for r in runs for i in range(len(r) - 2)):
        return False
    return any(r[i : i + 2] in context for r in runs for i in range(len(r) - 1))


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
        "latency_ms": {"p50": round(percentile(lat, 0.5), 2), "p95": round(percentile(lat, 0.95), 2),
                       "mean": round(sum(lat) / len(lat), 2)},
        "mean_hidden_duplicates": 0.0,
        "gold_hidden_by_dedup": 0,
        "mode_used": {"fts5-trigram": len(rows)},
    }


def load_dataset(data: Path, name: str) -> Dataset:
    if name == "locomo":
        return load_locomo(data)
    if name == "scifact":
        return load_scifact(data)
    return load_squad_set(data, name)


def limit_queries(queries: list[Query], limit: int | None) -> list[Query]:
    """At most ``limit`` queries, spread evenly over the file (so every LoCoMo conversation is sampled)."""
    if not limit or limit >= len(queries):
        return queries
    step = len(queries) / limit
    return [queries[int(i * step)] for i in range(limit)]


# ---------------------------------------------------------------------------------------------------------------
# metrics


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


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


# ---------------------------------------------------------------------------------------------------------------
# running


class MemoEmbedder:
    """The real embedder with query vectors remembered (the dedup curve asks each question many times)."""

    def __init__(self, inner):
        self.inner, self.model_id, self._memo = inner, inner.model_id, {}

    @property
    def dim(self) -> int:
        return self.inner.dim

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

    def build(self, ds: Dataset, root_name: str, files: dict[str, bytes], fresh: bool) -> tuple[Path, dict]:
        base = self.work / ds.name / self.cache_key()
        root = base / root_name
        info_path = base / f"{root_name}.build.json"
        if fresh and root.exists():
            shutil.rmtree(root)
            info_path.unlink(missing_ok=True)
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
            chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        finally:
            conn.close()
        info = {**info, "this_run_seconds": round(seconds, 3), "chunks": chunks,
                "pending": report.chunks_pending, "skipped": len(report.skipped), "note": report.model_note}
        return root, info


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
        index = SqliteStore(conn, settings.db_path)
        try:
            for mode in modes:
                if mode in skipped_modes:
                    continue
                t_mode = time.perf_counter()
                for q in queries:
                    started = time.perf_counter()
                    try:
                        res = search(settings, q.text, mode=mode, k=fetch, embedder=runner.embedder, store=index,
                                     now=ds.asked_at.get(root_name))
                    except ModelUnavailable as exc:
                        skipped_modes[mode] = str(exc)
                        break
                    ms = (time.perf_counter() - started) * 1000
                    ranked = unique(ds.doc_of(h) for h in res.hits)
                    m = query_metrics(ranked, q.gold, ds.session_of)
                    per_mode[mode].append((q, m, ms, res.hidden_duplicates, res.mode_used))
                    if res.hidden_duplicates:
                        lost = hidden_gold(ds, conn, search(settings, q.text, mode=mode, k=fetch,
                                                            embedder=runner.embedder, store=index, explain=True,
                                                            now=ds.asked_at.get(root_name)), q)
                        hidden_lost[mode] += lost
                    if dump is not None:
                        dump.append({"dataset": ds.name, "mode": mode, "qid": q.qid, "query": q.text,
                                     "gold": sorted(q.gold), "ranked": ranked[:10], **m})
                log(f"[{ds.name}] {root_name}: {mode} {len(queries)} queries in {time.perf_counter() - t_mode:.1f}s")
            if curve and runner.embedder is not None:
                memo = MemoEmbedder(runner.embedder)
                for t in DEDUP_THRESHOLDS:
                    s_t = runner.settings(root, dedup_threshold=t)
                    for q in queries:
                        res = search(s_t, q.text, mode="hybrid", k=fetch, embedder=memo, store=index,
                                     now=ds.asked_at.get(root_name))
                        ranked = unique(ds.doc_of(h) for h in res.hits)
                        curve_rows[t].append((query_metrics(ranked, q.gold, ds.session_of), res.hidden_duplicates))
        finally:
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
            "latency_ms": {"p50": round(percentile(lat, 0.5), 2), "p95": round(percentile(lat, 0.95), 2),
                           "mean": round(sum(lat) / len(lat), 2)},
            "mean_hidden_duplicates": round(sum(h for *_, h, _ in rows) / len(rows), 3),
            "gold_hidden_by_dedup": hidden_lost[mode],
            "mode_used": dict(Counter(u for *_, u in rows)),
        }
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
                       dump: list | None) -> dict:
    """The injection section (see scripts/eval_injection.py): both hook paths, own and other memory, a mixed
    memory of two conversations as two projects, and the gate sweep with its plot."""
    import eval_injection as inj

    from search_engine.context import DEFAULT_GATE, GATE_SWEEP

    ds = load_locomo(data)
    ds.queries = limit_queries(ds.queries, limit)
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
    out: dict[str, Any] = {"questions": len(ds.queries), "gate": dataclasses.asdict(DEFAULT_GATE), "paths": {}}
    curves: dict[str, dict[str, list[dict]]] = {}
    for path, asked in rows.items():
        single = [r for r in asked if r.memory != "mixed"]
        both = [r for r in asked if r.memory == "mixed"]
        curves[path] = {name: inj.sweep(both if name == "foreign_margin" else single, name, values)
                        for name, values in GATE_SWEEP.items()}
        out["paths"][path] = {
            "chosen": inj.rates(single, DEFAULT_GATE),
            "no_gate": inj.rates(single, False),
            "mixed_memory": inj.rates(both, DEFAULT_GATE),
            "sweep": curves[path],
        }
    png = inj.plot(curves, dataclasses.asdict(DEFAULT_GATE), out_dir / "injection-gate.png")
    out["plot"] = str(png) if png else "matplotlib not installed (pip install -e '.[bench]')"
    if dump is not None:
        inj.dump([r for asked in rows.values() for r in asked], out_dir / "injection-candidates.jsonl")
    return out


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


# ---------------------------------------------------------------------------------------------------------------
# reporting


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
        out.append("\nLoCoMo by category")
        out.append(table(["category", "mode", "n", "turn R@1", "R@5", "R@10", "sess R@5", "MRR@10", "nDCG@10"],
                         rows))
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


def targets(ds: dict) -> list[dict]:
    checks: list[dict] = []

    def get(name: str, mode: str, metric: str) -> float | None:
        return ds.get(name, {}).get("modes", {}).get(mode, {}).get("overall", {}).get(metric)

    def add(label: str, value: float | None, ok: bool) -> None:
        checks.append({"target": label, "value": None if value is None else round(value, 4), "ok": bool(ok)})

    headline = {"locomo": ["recall@5", "session_recall@5"], "scifact": ["ndcg@10"],
                **{n: ["recall@5"] for n in CJK_SETS}}
    if "locomo" in ds:
        v = get("locomo", "hybrid", "recall@5")
        add("locomo hybrid turn R@5 >= 0.60", v, v is not None and v >= 0.60)
        v = get("locomo", "hybrid", "session_recall@5")
        add("locomo hybrid session R@5 >= 0.90", v, v is not None and v >= 0.90)
        for metric in ("recall@5", "session_recall@5"):
            h, b, ve = (get("locomo", m, metric) for m in ("hybrid", "bm25", "vector"))
            if None not in (h, b, ve):
                add(f"locomo hybrid {metric} > bm25 and vector", h - max(b, ve), h > max(b, ve))
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
    p.add_argument("--datasets", default="locomo,scifact,cjk,injection",
                   help="comma list of locomo, scifact, cjk (= cmrc2018,drcd,korquad,jsquad), single CJK sets, or\n"
                        "injection (LoCoMo as a user's memory, through the prompt hook; see scripts/eval_injection.py)")
    p.add_argument("--modes", default=",".join(MODES), help="comma list of bm25, vector, hybrid")
    p.add_argument("--limit", type=int, default=None, help="at most N queries per dataset (spread evenly)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file (default eval-results/eval.json)")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the evaluation data folder")
    p.add_argument("--work", type=Path, default=None, help="where indexes are cached (default <out dir>/work)")
    p.add_argument("--dedup-curve", action="store_true", help="recall@5 and hidden duplicates per dedup threshold"
                   " (LoCoMo and SciFact, hybrid)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                   help="a settings override, e.g. --set bm25_weight=1.5 (same names as memsearch.toml)")
    p.add_argument("--k", type=int, default=None, help="hits fetched per query (default 10 for events, 30 notes)")
    p.add_argument("--fresh", action="store_true", help="rebuild the cached indexes from nothing")
    p.add_argument("--dump-queries", type=Path, default=None, help="write per-query rankings as JSON lines")
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

    dump: list | None = [] if args.dump_queries else None
    results: dict[str, Any] = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "settings": {n: getattr(probe, n) if not isinstance(getattr(probe, n), Path) else str(getattr(probe, n))
                     for n in (*INDEX_SETTINGS, *SEARCH_SETTINGS)},
        "model": {"id": choice.model_id, "available": embedder is not None, "note": note},
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
                                                          dump)
                log(f"[{name}] done in {time.perf_counter() - t0:.1f}s")
                continue
            ds = load_dataset(args.data, name)
            ds.queries = limit_queries(ds.queries, args.limit)
            curve = args.dedup_curve and name in ("locomo", "scifact")
            results["datasets"][name] = evaluate(ds, runner, modes, args.fresh, curve, args.k, dump)
            log(f"[{name}] done in {time.perf_counter() - t0:.1f}s")
    except MemsearchError as exc:
        print(f"eval failed: {exc}", file=sys.stderr)
        return 1
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
