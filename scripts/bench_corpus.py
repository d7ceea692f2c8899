"""Benchmark corpora: a memory root of N chunks built from the public evaluation texts in ../shared/eval.

Texts come from SciFact abstracts (English, scientific), LoCoMo dialog turns (English, conversational) and the
CJK reading-comprehension paragraphs (cmrc2018 simplified Chinese, DRCD traditional Chinese, JSQuAD Japanese;
KorQuAD is left out because its licence forbids modified copies). Chunks are made distinct by sentence windows,
recombination with a sentence of another document and, on a rare collision, a number.

Every generated unit is sized to become exactly one chunk with the default chunker settings (1200 chars):
events (prompt/response/tool, one per JSONL line, ~70 %), markdown note sections (~25 %, 3-8 sections per file
under sessions/, daily/ and areas/projects/<p>/) and facts.json facts (~5 %). The real chunk count is read from
the index afterwards; it lands within a fraction of a percent of the target.

A corpus is written once under ``<work>/corpus-v<VERSION>-<N>/`` and reused (a ``.complete`` marker); its files'
mtimes never change afterwards, so cached indexes over it stay valid.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import orjson
import xxhash

CORPUS_VERSION = "1"
EVAL_DIR = Path(__file__).resolve().parents[2] / "shared" / "eval"
MAX_UNIT_CHARS = 1000  # below the 1200-char chunk size, so one unit is one chunk
_EN_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")
_CJK_SENT = re.compile(r"(?<=[。！？])")
TOOLS = ("Read", "Grep", "Bash", "WebFetch", "Edit")


@dataclass
class Sources:
    sci: list[tuple[str, list[str]]] = field(default_factory=list)  # (title, sentences)
    dialog: list[list[tuple[str, str, str]]] = field(default_factory=list)  # sessions of (speaker, text, date)
    cjk: list[list[str]] = field(default_factory=list)  # paragraphs as sentences
    queries: dict[str, list[str]] = field(default_factory=dict)  # family -> query texts


def load_sources(eval_dir: Path = EVAL_DIR) -> Sources:
    src = Sources()
    with (eval_dir / "scifact" / "corpus.jsonl").open("rb") as f:
        for line in f:
            doc = orjson.loads(line)
            sents = [s.strip() for s in _EN_SENT.split(doc["text"]) if len(s.strip()) > 20]
            if sents:
                src.sci.append((doc["title"].strip(), sents))
    test_ids = set()
    with (eval_dir / "scifact" / "qrels" / "test.tsv").open() as f:
        for row in f:
            qid = row.split("\t")[0]
            if qid.isdigit():
                test_ids.add(qid)
    sci_q = []
    with (eval_dir / "scifact" / "queries.jsonl").open("rb") as f:
        for line in f:
            q = orjson.loads(line)
            if q["_id"] in test_ids:
                sci_q.append(q["text"])
    src.queries["scifact"] = sci_q

    locomo = json.loads((eval_dir / "locomo-dev" / "locomo_dev.json").read_text())
    loc_q = []
    for conv in locomo:
        c = conv["conversation"]
        n = 1
        while f"session_{n}" in c:
            when = c.get(f"session_{n}_date_time", "")
            turns = [(t["speaker"], t["text"] + (f" [shares {t['blip_caption']}]" if t.get("blip_caption") else ""),
                      when) for t in c[f"session_{n}"] if t.get("text")]
            if turns:
                src.dialog.append(turns)
            n += 1
        loc_q += [qa["question"] for qa in conv["qa"] if qa.get("category") in (1, 2, 3, 4)]
    src.queries["locomo"] = loc_q

    cjk_q = []
    for name in ("cmrc2018-dev/cmrc2018_dev.json", "drcd-dev/drcd_dev.json", "jsquad-dev/jsquad_dev.json"):
        data = json.loads((eval_dir / name).read_text())
        for article in data["data"]:
            for para in article["paragraphs"]:
                ctx = para["context"].split("[SEP]")[-1].strip()
                sents = [s.strip() for s in _CJK_SENT.split(ctx) if s.strip()]
                if sents:
                    src.cjk.append(sents)
                cjk_q += [qa["question"] for qa in para["qas"][:1]]
    src.queries["cjk"] = cjk_q
    return src


def query_set(src: Sources, n: int, seed: int = 7) -> list[str]:
    """A fixed mix of real queries: 40 % SciFact claims, 40 % LoCoMo questions, 20 % CJK questions."""
    rng = random.Random(seed)
    parts = {"scifact": 0.4, "locomo": 0.4, "cjk": 0.2}
    out: list[str] = []
    for fam, share in parts.items():
        pool = list(src.queries[fam])
        rng.shuffle(pool)
        out += pool[: max(1, round(n * share))]
    rng.shuffle(out)
    return out[:n]


def _clip(parts: list[str], sep: str, limit: int = MAX_UNIT_CHARS) -> str:
    out: list[str] = []
    size = 0
    for p in parts:
        if out and size + len(p) + len(sep) > limit:
            break
        out.append(p[:limit])
        size += len(p) + len(sep)
    return sep.join(out)


class Generator:
    """Deterministic stream of distinct texts of three flavours."""

    def __init__(self, src: Sources, seed: int):
        self.src = src
        self.rng = random.Random(seed)
        self.seen: set[int] = set()
        self.count = 0

    def _unique(self, text: str) -> str:
        self.count += 1
        h = xxhash.xxh64_intdigest(text.encode("utf-8", "surrogatepass"))
        if h in self.seen:
            text = f"{text} [#{self.count}]"
            h = xxhash.xxh64_intdigest(text.encode("utf-8", "surrogatepass"))
        self.seen.add(h)
        return text

    def sci(self) -> tuple[str, str]:
        """(title, text): a window of 1-5 sentences of an abstract, sometimes with a sentence of another one."""
        rng = self.rng
        title, sents = rng.choice(self.src.sci)
        w = rng.randint(1, 5)
        start = rng.randrange(max(1, len(sents) - w + 1))
        parts = sents[start : start + w]
        if rng.random() < 0.3:
            parts = parts + [rng.choice(rng.choice(self.src.sci)[1])]
        return title, self._unique(_clip(parts, " "))

    def dialog(self) -> tuple[str, str, str]:
        """(speakers, text, session date): 2-6 consecutive turns of a LoCoMo session."""
        rng = self.rng
        turns = rng.choice(self.src.dialog)
        w = rng.randint(2, 6)
        start = rng.randrange(max(1, len(turns) - w + 1))
        window = turns[start : start + w]
        text = _clip([f"{s}: {t}" for s, t, _ in window], "\n")
        return window[0][0], self._unique(text), window[0][2]

    def cjk(self) -> str:
        rng = self.rng
        sents = rng.choice(self.src.cjk)
        w = rng.randint(1, 4)
        start = rng.randrange(max(1, len(sents) - w + 1))
        return self._unique(_clip(sents[start : start + w], "", 600))


def _slug(text: str, n: int = 5) -> str:
    words = re.findall(r"[A-Za-z]{3,}", text)[:n]
    return "-".join(w.lower() for w in words) or "note"


def _start(root: Path) -> tuple[dict | None, Path]:
    """(the summary of a finished corpus at ``root``, or None) and the scratch folder to build a new one in."""
    if (root / ".complete").is_file():
        return json.loads((root / "corpus.json").read_text()), root
    if root.exists():
        shutil.rmtree(root)
    tmp = root.with_name(root.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    return None, tmp


def build_corpus(root: Path, n_chunks: int, src: Sources, seed: int = 1234) -> dict:
    """Write a memory root holding about ``n_chunks`` chunks; returns a summary (also saved as corpus.json)."""
    cached, tmp = _start(root)
    if cached is not None:
        return cached
    tmp.mkdir(parents=True)
    gen = Generator(src, seed + n_chunks)
    rng = random.Random(seed)
    n_events = int(n_chunks * 0.70)
    n_facts = int(n_chunks * 0.05)
    n_notes = n_chunks - n_events - n_facts
    projects = [f"proj-{i:03d}" for i in range(max(3, n_chunks // 2000))]
    day0 = date(2024, 1, 1)
    days = max(10, n_events // 250)

    # events: ~250 a day, day files under events/
    (tmp / "events").mkdir()
    per_day = [0] * days
    for _ in range(n_events):
        per_day[rng.randrange(days)] += 1
    for d, count in enumerate(per_day):
        day = day0 + timedelta(days=d)
        lines = []
        session = f"s{d:05d}-{rng.randrange(1000):03d}"
        for i in range(count):
            if i % 40 == 0:
                session = f"s{d:05d}-{rng.randrange(1000):03d}"
            r = rng.random()
            ev = {"id": f"e{d:05d}-{i:05d}", "ts": f"{day.isoformat()}T{(i * 86399 // max(count, 1)) // 3600:02d}:"
                  f"{(i * 86399 // max(count, 1)) % 3600 // 60:02d}:{i % 60:02d}",
                  "session_id": session, "project": rng.choice(projects), "metadata": {}}
            if r < 0.30:
                speaker, text, when = gen.dialog()
                ev.update(type="prompt", content=text)
                ev["metadata"] = {"speaker": speaker, "session_date": when}
            elif r < 0.60:
                title, text = gen.sci()
                ev.update(type="response", content=f"{text}")
            elif r < 0.95:
                title, text = gen.sci()
                tool = rng.choice(TOOLS)
                ev.update(type="tool", tool_name=tool,
                          content=f"{tool} papers/{_slug(title)}.md\n{text}"[: MAX_UNIT_CHARS + 100])
            else:
                ev.update(type="response", content=gen.cjk())
            lines.append(orjson.dumps(ev))
        if lines:
            (tmp / "events" / f"{day.isoformat()}.jsonl").write_bytes(b"\n".join(lines) + b"\n")

    # notes: 3-8 sections each, one chunk per section
    notes_left = n_notes
    k = 0
    while notes_left > 0:
        sections = min(notes_left, rng.randint(3, 8))
        notes_left -= sections
        kind = rng.random()
        proj = rng.choice(projects)
        if kind < 0.4:
            path = tmp / "sessions" / f"sess-{k:06d}.md"
        elif kind < 0.7:
            day = day0 + timedelta(days=rng.randrange(days))
            path = tmp / "daily" / f"{day.isoformat()}-{k:06d}.md"
        else:
            path = tmp / "areas" / "projects" / proj / f"topic-{k:06d}.md"
        body = ["---", f"title: note {k}", f"tags: [bench, {proj}]", "---", ""]
        for s in range(sections):
            r = rng.random()
            if r < 0.6:
                title, text = gen.sci()
                head = title[:70]
            elif r < 0.93:
                speaker, text, _ = gen.dialog()
                head = f"Conversation with {speaker}"
            else:
                text = gen.cjk()
                head = text[:12]
            body += [f"## {s + 1}. {head}", "", text, ""]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(body), encoding="utf-8")
        k += 1

    # facts: 10-40 facts per facts.json, under areas/projects/<p>/<area>/
    facts_left = n_facts
    j = 0
    while facts_left > 0:
        count = min(facts_left, rng.randint(10, 40))
        facts_left -= count
        facts = []
        for i in range(count):
            _, text = gen.sci()
            facts.append({"id": f"f{j}-{i}", "fact": text[:800], "status": "active",
                          "timestamp": (day0 + timedelta(days=rng.randrange(days))).isoformat()})
        path = tmp / "areas" / "projects" / rng.choice(projects) / f"facts-{j:05d}" / "facts.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps({"facts": facts}))
        j += 1

    summary = {"target_chunks": n_chunks, "events": n_events, "note_sections": n_notes, "facts": n_facts,
               "note_files": k, "facts_files": j, "event_files": sum(1 for c in per_day if c),
               "version": CORPUS_VERSION, "seed": seed}
    (tmp / "corpus.json").write_text(json.dumps(summary))
    (tmp / ".complete").write_text("ok")
    tmp.rename(root)
    return summary


def build_noop_corpus(root: Path, n_files: int, src: Sources, seed: int = 99) -> dict:
    """``n_files`` small notes (one chunk each) in 100 folders, for the no-op reindex measurement."""
    cached, tmp = _start(root)
    if cached is not None:
        return cached
    gen = Generator(src, seed)
    for i in range(n_files):
        title, text = gen.sci()
        path = tmp / "notes" / f"d{i % 100:02d}" / f"note-{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {title[:60]} (note {i})\n\n{text[:400]}\n", encoding="utf-8")
    summary = {"files": n_files, "version": CORPUS_VERSION}
    (tmp / "corpus.json").write_text(json.dumps(summary))
    (tmp / ".complete").write_text("ok")
    tmp.rename(root)
    return summary
