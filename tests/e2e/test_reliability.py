"""Reliability under concurrency and crashes: hooks racing index runs, full rebuilds and maintenance, and index
processes killed at random moments. Bounded in count, not in time: the figures under load come from
``scripts/stress_load.py`` and ``scripts/stress_crash.py``.

Cross-cutting on purpose (tests/e2e): these race real hook processes against the indexer and maintenance, and
check the index and the event log together afterwards. Fuzzing that targets one module lives with it (hook stdin:
tests/hooks/test_entry.py; queries: tests/search_engine/test_query.py; sources: tests/indexer/test_sources.py)."""

import json
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson

from conftest import MEMSEARCH, event_line, indexed_text, write
from indexer.base.settings import resolve_settings
from indexer.maintain import check_index
from indexer.pipeline import index
from indexer.store import sqlite as store
from indexer.store.sqlite_read import fts5_query
from search_engine.query import content_terms, terms
from search_engine.search import search

HOOK = str(Path(sys.executable).with_name("memsearch-hook"))


# -- fuzzed hook input ---------------------------------------------------------------------------------------------


# -- fuzzed queries ---------------------------------------------------------------------------------------------


# -- malformed sources -------------------------------------------------------------------------------------------

# -- hooks racing index runs and maintenance -------------------------------------------------------------------

def _hook(event: str, payload: dict) -> subprocess.CompletedProcess:
    return subprocess.run([HOOK, event], input=orjson.dumps(payload), capture_output=True, timeout=120)


def test_hooks_racing_index_full_rebuild_and_maintain_lose_nothing(sample_home, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    monkeypatch.setenv("MEMSEARCH_NO_SERVER", "1")
    subprocess.run([MEMSEARCH, "index"], check=True, capture_output=True, timeout=120)
    workers, per_worker = 6, 8

    def fire(w):
        results = []
        for i in range(per_worker):
            mark = f"racemark{w}x{i}"
            if i % 2:
                payload = {"session_id": f"s{w}", "cwd": "/p", "tool_name": "Bash",
                           "tool_input": {"command": f"echo {mark}"}, "tool_response": {"stdout": "ok"}}
                results.append((mark, _hook("tool", payload)))
            else:
                payload = {"session_id": f"s{w}", "cwd": "/p", "prompt": f"why does {mark} fail with locked exports"}
                results.append((mark, _hook("prompt", payload)))
        return results

    def writers():
        runs = []
        for args in (["index"], ["maintain"], ["index", "--full"], ["index"], ["maintain"]):
            runs.append(subprocess.run([MEMSEARCH, *args], capture_output=True, text=True, timeout=300))
        return runs

    with ThreadPoolExecutor(max_workers=workers + 1) as pool:
        maintenance = pool.submit(writers)
        fired = [r for f in [pool.submit(fire, w) for w in range(workers)] for r in f.result()]
        runs = maintenance.result()

    assert all(r.returncode == 0 and r.stderr == "" for r in runs), [r.stderr for r in runs]
    assert all(p.returncode == 0 and p.stderr == b"" for _, p in fired)
    logged = [json.loads(line)["content"] for path in sorted((sample_home / "events").glob("*.jsonl"))
              for line in path.read_text().splitlines()]
    marks = [m for m, _ in fired]
    for mark in marks:
        assert sum(mark in content for content in logged) == 1, mark
    subprocess.run([MEMSEARCH, "index"], check=True, capture_output=True, timeout=120)
    texts = indexed_text(sample_home)
    assert all(mark in texts for mark in marks)
    log = sample_home / ".memsearch" / "logs" / "hooks.log"
    assert not log.exists() or "error" not in log.read_text()
    assert check_index(store.connect(sample_home / ".memsearch" / "index.db")).ok


# -- processes killed at random moments ---------------------------------------------------------------------------

def _corpus(home: Path, files: int, seed: int) -> None:
    rng = random.Random(seed)
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar".split()
    for i in range(files):
        body = "\n\n".join(" ".join(rng.choice(words) for _ in range(60)) for _ in range(6))
        write(home / "notes" / f"n{i:04d}.md", f"# Note {i}\n\n{body}\n")
    write(home / "events" / "2026-11-20.jsonl", b"".join(
        event_line(f"e{i}", " ".join(rng.choice(words) for _ in range(30))) for i in range(files * 2)))


def test_kill_9_at_random_moments_leaves_a_consistent_index(home, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    _corpus(home, 150, seed=7)
    rng = random.Random(11)
    kinds = [["index"], ["index", "--full"], ["maintain"]]
    for round_ in range(6):
        if round_:
            write(home / "notes" / f"n{round_:04d}.md", f"# Rewritten {round_}\n\nrewritten note {round_}\n")
            (home / "notes" / f"n{round_ + 100:04d}.md").unlink()
        args = kinds[round_ % 3]
        proc = subprocess.Popen([MEMSEARCH, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.4, 1.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        db = home / ".memsearch" / "index.db"
        if db.exists():
            check = check_index(store.connect(db))
            assert check.ok, (args, check)
        after = subprocess.run([MEMSEARCH, "index", "--json"], capture_output=True, text=True, timeout=300)
        assert after.returncode == 0, after.stderr
        assert check_index(store.connect(db)).ok
    settings = resolve_settings(home)
    fresh = resolve_settings(home, db_path=str(tmp_path / "fresh.db"))
    index(fresh, embedder=None)
    for query in ("alpha bravo", "rewritten note", "juliet kilo lima", "november"):
        assert _answers(settings, query) == _answers(fresh, query)
        got, want = (search(s, query, mode="bm25", k=30).hits for s in (settings, fresh))
        assert [h.bm25_score for h in got] == [h.bm25_score for h in want]  # the same ranking, ties aside


def _answers(settings, query: str) -> set[tuple[str, float]]:
    """Every chunk a BM25 query matches, with its score: what the index answers, whatever the order of ties."""
    conn = store.connect(settings.db_path)
    try:
        expression = fts5_query(content_terms(terms(query)), "AND")
        return set(conn.execute(
            "SELECT c.uid, round(-bm25(chunks_fts), 9) FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid"
            " WHERE chunks_fts MATCH ?", (expression,)))
    finally:
        conn.close()
