"""Shared by the stress scripts (``stress_load.py``, ``stress_crash.py``): a synthetic memory root, running the real
``memsearch`` and ``memsearch-hook`` processes, and the index checks (percentiles: :mod:`scripts.stats`).

Everything is local: a memory root in a temporary folder, the installed commands, no network.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import orjson

from indexer.base.reports import IndexCheck
from indexer.maintain import check_index
from indexer.store import sqlite as store

REPO = Path(__file__).resolve().parents[1]

BIN = Path(sys.executable).parent
MEMSEARCH = str(BIN / "memsearch")
HOOK = str(BIN / "memsearch-hook")
SAMPLE = REPO / "examples" / "sample-memory"
WORDS = (
    "database lock timeout retry export nightly migration schema index query cache latency budget queue worker "
    "deploy rollback release branch review test fixture mock flaky build pipeline artifact container image "
    "payment refund invoice customer idempotency key webhook signature token session cookie auth login password "
    "vector embedding model search ranking fusion chunk token budget context prompt hook server socket process "
    "memory note fact decision constraint runbook incident alert metric dashboard trace span log rotate archive"
).split()
TOPICS = ("the database is locked error", "the nightly export", "retry budgets", "idempotency keys on refunds",
          "the flaky webhook test", "the slow search ranking", "rotating the session tokens", "the deploy rollback")


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def paragraph(rng: random.Random, sentences: int = 5) -> str:
    return " ".join(sentence(rng, rng.randint(8, 16)) for _ in range(sentences))


def event_line(eid: str, content: str, etype: str = "prompt", session: str = "stress", ts: str | None = None) -> bytes:
    ts = ts or datetime.now().astimezone().isoformat(timespec="seconds")
    return orjson.dumps({"id": eid, "ts": ts, "session_id": session, "project": "stress", "type": etype,
                         "content": content}) + b"\n"


def today_log(root: Path) -> Path:
    return root / "events" / f"{time.strftime('%Y-%m-%d')}.jsonl"


def make_root(base: Path, notes: int, events: int, seed: int) -> Path:
    """The bundled sample memory plus ``notes`` generated notes (3 sections each) and ``events`` events."""
    rng = random.Random(seed)
    root = base / "memory"
    shutil.copytree(SAMPLE, root)
    for i in range(notes):
        sections = "\n\n".join(f"## Section {j}\n\n{paragraph(rng)}" for j in range(3))
        path = root / "areas" / "projects" / f"p{i % 10}" / f"note-{i:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\n{sections}\n", encoding="utf-8")
    log = today_log(root)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as f:
        for i in range(events):
            f.write(event_line(f"seed-{i}", paragraph(rng, 2), rng.choice(("prompt", "response", "tool"))))
    return root


def mutate(root: Path, rng: random.Random, round_: int) -> None:
    """A week of life in a few seconds: notes edited, added and deleted, events appended."""
    notes = sorted((root / "areas" / "projects").glob("*/note-*.md"))
    for path in rng.sample(notes, min(3, len(notes))):
        path.write_text(path.read_text(encoding="utf-8") + f"\n## Edit {round_}\n\n{paragraph(rng, 2)}\n",
                        encoding="utf-8")
    if notes and rng.random() < 0.5:
        rng.choice(notes).unlink()
    for j in range(2):
        path = root / "areas" / "projects" / "new" / f"added-{round_}-{j}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Added {round_}.{j}\n\n{paragraph(rng)}\n", encoding="utf-8")
    with open(today_log(root), "ab") as f:
        for j in range(20):
            f.write(event_line(f"r{round_}-{j}", paragraph(rng, 1)))


def env_for(root: Path, model: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSEARCH_")}
    env.update(MEMSEARCH_HOME=str(root), MEMSEARCH_MODEL=model, **extra)
    if "MEMSEARCH_CACHE_DIR" in os.environ:
        env["MEMSEARCH_CACHE_DIR"] = os.environ["MEMSEARCH_CACHE_DIR"]
    return env


@dataclass
class Ran:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run(args: list[str], env: dict[str, str], timeout: float = 600, stdin: bytes | None = None) -> Ran:
    started = time.perf_counter()
    proc = subprocess.run(args, input=stdin, capture_output=True, env=env, timeout=timeout)
    return Ran(args, proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"),
               time.perf_counter() - started)


def check_db(db: Path) -> IndexCheck | None:
    """The index checks on ``db`` (None when there is no index file yet)."""
    if not db.exists():
        return None
    conn = store.connect(db)
    try:
        return check_index(conn)
    finally:
        conn.close()


def machine_note() -> str:
    load = os.getloadavg()
    return (f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at "
            f"{time.strftime('%Y-%m-%dT%H:%M:%S')}; other processes share the machine, timings are noisy")


def finish(args, figures: dict, base: Path, ok: bool) -> int:
    """Write the figures as JSON when asked, remove the scratch folder unless kept; the exit code."""
    import json

    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=2) + "\n")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print(f"kept {base}")
    return 0 if ok else 1


def initial_index(env: dict[str, str]) -> bool:
    """The first `memsearch index` of a stress run, reported; False (its error printed) when it failed."""
    import json

    first = run([MEMSEARCH, "index", "--json"], env)
    if first.returncode:
        print(first.stderr, file=sys.stderr)
        return False
    print(f"initial index: {json.loads(first.stdout)['chunks_added']} chunks in {first.seconds:.1f}s", flush=True)
    return True
