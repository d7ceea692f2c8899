"""The evaluation's datasets, written into memory roots the way the product stores them: LoCoMo conversations as
event logs (one event per dialog turn), SciFact abstracts and the CJK SQuAD-format paragraphs as markdown notes;
with their questions, gold documents and the subsets each question belongs to."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from indexer.base.cjk import cjk_run_re
from search_engine.timeexpr import time_window

CJK_SETS = {
    "cmrc2018": ("cmrc2018-dev/cmrc2018_dev.json", "zh-Hans"),
    "drcd": ("drcd-dev/drcd_dev.json", "zh-Hant"),
    "korquad": ("korquad-dev/korquad_dev.json", "ko"),
    "jsquad": ("jsquad-dev/jsquad_dev.json", "ja"),
}
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


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
    dropped: Counter[str] = Counter()
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
    return any(len(m.group(0)) == 2 for m in cjk_run_re().finditer(question))


def _bigram_only(question: str, context: str) -> bool:
    runs = [m.group(0) for m in cjk_run_re().finditer(question)]
    if any(r[i : i + 3] in context for r in runs for i in range(len(r) - 2)):
        return False
    return any(r[i : i + 2] in context for r in runs for i in range(len(r) - 1))


def load_timeline() -> Dataset:
    """The temporal questions written for memsearch (:mod:`scripts.eval_timeline`), on their own memory."""
    from scripts import eval_timeline

    built = eval_timeline.build()
    queries = [Query(qid, text, gold, eval_timeline.PROJECT, groups) for qid, text, gold, groups in built.questions]
    return Dataset("timeline", "events", {eval_timeline.PROJECT: eval_timeline.memory_files(built.events)}, queries,
                   doc_of=lambda hit: hit.event_id or hit.id, asked_at={eval_timeline.PROJECT: eval_timeline.NOW})


def load_dataset(data: Path, name: str) -> Dataset:
    if name == "locomo":
        return load_locomo(data)
    if name == "timeline":
        return load_timeline()
    if name == "scifact":
        return load_scifact(data)
    return load_squad_set(data, name)


def limit_queries(queries: list[Query], limit: int | None) -> list[Query]:
    """At most ``limit`` queries, spread evenly over the file (so every LoCoMo conversation is sampled)."""
    if not limit or limit >= len(queries):
        return queries
    step = len(queries) / limit
    return [queries[int(i * step)] for i in range(limit)]


def half_queries(queries: list[Query], half: str | None) -> list[Query]:
    """One half of the questions, for choosing a setting on one and confirming it on the other: ``A`` = those whose
    id's md5 is even, ``B`` = odd (a split fixed by the ids alone, the same on every machine); None = all."""
    if half is None:
        return queries
    want = "AB".index(half.upper())
    return [q for q in queries if int(hashlib.md5(q.qid.encode()).hexdigest(), 16) % 2 == want]
