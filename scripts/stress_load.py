"""Load: concurrent Claude Code hooks firing while the index and the maintenance run, then an audit.

For ``--duration`` seconds, ``--workers`` threads each run real ``memsearch-hook prompt`` and ``memsearch-hook tool``
processes back to back (every event carries a unique marker), while other threads run ``memsearch index`` in a
loop, ``memsearch maintain`` and ``memsearch index --full`` in turn, and searches (CLI BM25 processes, and hybrid
searches through the warm server unless ``--no-server``). Then the hooks stop, a last ``memsearch index`` runs,
and the audit counts: events written, events found once in the log and once in the index (before and after that
last run), failed hooks, failed searches, failed index/maintain runs, "database is locked" anywhere, the index
checks, and hook latency percentiles.

    python -m scripts.stress_load                      # 8 workers, 60 s, real model, warm server
    python -m scripts.stress_load --workers 12 --duration 90 --no-server --model none --json out.json

Bounded in time (``--duration`` plus the final runs) and local only (a temporary memory root).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scripts.stats import percentile
from scripts.stress_common import (
    HOOK,
    MEMSEARCH,
    TOPICS,
    check_db,
    env_for,
    finish,
    initial_index,
    machine_note,
    make_root,
    run,
)

MARK_RE = re.compile(r"zq\d{2}x\d{5}q")
LOCKED = "database is locked"


@dataclass
class HookCall:
    kind: str
    mark: str
    seconds: float
    ok: bool
    injected: bool
    problem: str = ""


def _hook_ok(r) -> tuple[bool, bool, str]:
    if r.returncode != 0:
        return False, False, f"exit {r.returncode}"
    if r.stderr:
        return False, False, f"stderr: {r.stderr[-200:]}"
    if not r.stdout:
        return True, False, ""
    try:
        data = json.loads(r.stdout)
        assert set(data) == {"hookSpecificOutput"}
        return True, True, ""
    except (ValueError, AssertionError):
        return False, False, f"stdout not one JSON object: {r.stdout[:200]}"


def hook_worker(w: int, deadline: float, env: dict, calls: list[HookCall], lock: threading.Lock) -> None:
    rng = random.Random(w)
    i = 0
    while time.monotonic() < deadline:
        mark = f"zq{w:02d}x{i:05d}q"
        if i % 2 == 0:
            kind = "prompt"
            payload: dict[str, Any] = {"session_id": f"load-{w}", "cwd": "/home/dev/payments-api",
                                       "hook_event_name": "UserPromptSubmit",
                       "prompt": f"How did we deal with {rng.choice(TOPICS)} last time? (ref {mark})"}
        else:
            kind = "tool"
            payload = {"session_id": f"load-{w}", "cwd": "/home/dev/payments-api", "hook_event_name": "PostToolUse",
                       "tool_name": "Bash", "tool_input": {"command": f"grep -rn {mark} src/"},
                       "tool_response": {"stdout": f"src/app.py:{i}: {mark} found\n" * 3, "exit_code": 0},
                       "tool_use_id": f"toolu_{mark}"}
        r = run([HOOK, kind], env, timeout=120, stdin=json.dumps(payload).encode())
        ok, injected, problem = _hook_ok(r)
        with lock:
            calls.append(HookCall(kind, mark, r.seconds, ok, injected, problem))
        i += 1


def loop(args: list[list[str]], pause: float, deadline: float, env: dict, out: list, lock: threading.Lock) -> None:
    n = 0
    while time.monotonic() < deadline:
        r = run([MEMSEARCH, *args[n % len(args)]], env, timeout=900)
        with lock:
            out.append(r)
        n += 1
        time.sleep(pause)


def searcher(deadline: float, env: dict, settings, use_server: bool, out: list, lock: threading.Lock) -> None:
    from search_engine.serve.client import request

    rng = random.Random(99)
    n = 0
    while time.monotonic() < deadline:
        query = rng.choice(TOPICS)
        if use_server and n % 2:
            started = time.perf_counter()
            answer = request(settings, {"op": "search", "query": query, "k": 10, "mode": "hybrid"}, timeout=10)
            ok = bool(answer and answer.get("ok"))
            problem = "" if ok else f"server: {answer and answer.get('error')}"
            seconds = time.perf_counter() - started
        else:
            r = run([MEMSEARCH, "search", query, "--mode", "bm25", "--json", "-k", "10"], env, timeout=120)
            ok, problem, seconds = r.returncode == 0 and not r.stderr, r.stderr[-200:], r.seconds
            if ok:
                try:
                    json.loads(r.stdout)["hits"]
                except (ValueError, KeyError):
                    ok, problem = False, "invalid JSON"
        with lock:
            out.append((ok, problem, seconds))
        n += 1
        time.sleep(0.2)


def markers_in_log(root: Path) -> tuple[dict[str, int], int]:
    counts: dict[str, int] = {}
    invalid = 0
    for path in sorted((root / "events").glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                invalid += 1
                continue
            for mark in set(MARK_RE.findall(json.dumps(event))):
                counts[mark] = counts.get(mark, 0) + 1
    return counts, invalid


def markers_in_index(db: Path) -> dict[str, int]:
    from indexer.store import sqlite as store

    conn = store.connect(db)
    try:
        counts: dict[str, int] = {}
        for _event_id, text in conn.execute("SELECT DISTINCT event_id, text FROM chunks WHERE kind = 'event'"):
            for mark in set(MARK_RE.findall(text)):
                counts[mark] = counts.get(mark, 0) + 1
        return counts
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--model", default="bundled", help="bundled (real MiniLM) or none (BM25 only)")
    parser.add_argument("--no-server", action="store_true", help="hooks search in-process instead of the warm server")
    parser.add_argument("--baseline", action="store_true",
                        help="hooks and searches only, no index/maintain runs: the latency to compare with")
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--json", dest="json_out", help="also write the figures to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary memory root")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="memsearch-load-"))
    root = make_root(base, args.notes, args.events, seed=1)
    env = env_for(root, args.model, **({"MEMSEARCH_NO_SERVER": "1"} if args.no_server else {}))
    from indexer.base.settings import resolve_settings
    from search_engine.serve.client import is_running, request

    settings = resolve_settings(root)
    db = root / ".memsearch" / "index.db"
    print(f"memory root {root}; {machine_note()}", flush=True)
    if not initial_index(env):
        return 1

    server = None
    if not args.no_server:
        server = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", str(args.duration + 600)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(600):
            if is_running(settings, timeout=1.0):
                break
            time.sleep(0.1)
        else:
            print("the warm server did not start", file=sys.stderr)
            return 1

    lock = threading.Lock()
    calls: list[HookCall] = []
    index_runs: list = []
    maintain_runs: list = []
    searches: list = []
    deadline = time.monotonic() + args.duration
    threads = [threading.Thread(target=hook_worker, args=(w, deadline, env, calls, lock)) for w in range(args.workers)]
    threads.append(threading.Thread(target=searcher, args=(deadline, env, settings, server is not None, searches, lock)))
    if not args.baseline:
        threads += [
            threading.Thread(target=loop, args=([["index", "--json"]], 1.0, deadline, env, index_runs, lock)),
            threading.Thread(target=loop, args=([["maintain", "--json"], ["index", "--full", "--json"]], 2.0,
                                                deadline, env, maintain_runs, lock)),
        ]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started

    in_index_live = markers_in_index(db)
    if server is not None:
        request(settings, {"op": "stop"}, timeout=5)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
    last = run([MEMSEARCH, "index", "--json"], env)
    in_log, invalid_lines = markers_in_log(root)
    in_index = markers_in_index(db)
    written = {c.mark for c in calls}
    check = check_db(db)

    logs = root / ".memsearch" / "logs"
    log_text = "".join(p.read_text(errors="replace") for p in logs.glob("*.log")) if logs.exists() else ""
    streams = [c.problem for c in calls] + [r.stderr for r in index_runs + maintain_runs + [last]]
    streams += [p for _, p, _ in searches]
    if server is not None and server.stderr:
        streams.append(server.stderr.read().decode(errors="replace"))
    locked = sum(s.count(LOCKED) for s in streams) + log_text.count(LOCKED)
    hook_errors = [line for line in log_text.splitlines() if ": error " in line]

    def lat(kind=None):
        values = [c.seconds for c in calls if kind in (None, c.kind)]
        if not values:
            return {"n": 0, "p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
        return {"n": len(values), "p50": round(percentile(values, 50), 3), "p95": round(percentile(values, 95), 3),
                "p99": round(percentile(values, 99), 3), "max": round(max(values), 3)}

    figures = {
        "workers": args.workers, "duration_s": args.duration, "wall_s": round(wall, 1), "model": args.model,
        "server": server is not None, "baseline_without_index_and_maintain": args.baseline,
        "events_written": len(written),
        "events_in_log_once": sum(1 for m in written if in_log.get(m) == 1),
        "events_missing_from_log": sorted(m for m in written if m not in in_log)[:20],
        "events_duplicated_in_log": sorted(m for m in written if in_log.get(m, 0) > 1)[:20],
        "invalid_log_lines": invalid_lines,
        "events_in_index_before_last_index": sum(1 for m in written if in_index_live.get(m)),
        "events_in_index_once": sum(1 for m in written if in_index.get(m) == 1),
        "events_missing_from_index": sorted(m for m in written if m not in in_index)[:20],
        "failed_hooks": sum(1 for c in calls if not c.ok),
        "hook_failures": [c.problem for c in calls if not c.ok][:10],
        "hook_errors_logged": hook_errors[:10],
        "prompts_with_injected_context": sum(1 for c in calls if c.injected),
        "searches": len(searches),
        "search_errors": sum(1 for ok, _, _ in searches if not ok),
        "search_problems": [p for ok, p, _ in searches if not ok][:10],
        "search_p95_s": round(percentile([s for _, _, s in searches], 95), 3) if searches else 0.0,
        "index_runs": len(index_runs), "index_failures": sum(1 for r in index_runs if r.returncode),
        "maintain_and_full_runs": len(maintain_runs),
        "maintain_failures": sum(1 for r in maintain_runs if r.returncode),
        "run_failures": [r.stderr.strip()[-300:] for r in index_runs + maintain_runs if r.returncode][:10],
        "maintain_seconds": [round(r.seconds, 1) for r in maintain_runs],
        "database_is_locked": locked,
        "last_index_ok": last.returncode == 0,
        "index_check": asdict(check) if check else None, "index_check_ok": bool(check and check.ok),
        "hook_latency_s": {"all": lat(), "prompt": lat("prompt"), "tool": lat("tool")},
        "machine": machine_note(),
    }
    ok = (figures["events_in_log_once"] == figures["events_written"] == figures["events_in_index_once"]
          and not figures["failed_hooks"] and not figures["search_errors"] and not locked
          and not figures["index_failures"] and not figures["maintain_failures"] and figures["index_check_ok"]
          and not hook_errors and not invalid_lines)
    figures["ok"] = ok
    h = figures["hook_latency_s"]
    print("\n".join([
        f"hooks: {figures['events_written']} events written by {len(calls)} hook processes"
        f" ({args.workers} workers, {wall:.0f}s, model {args.model}, {'warm server' if server else 'no server'}"
        f"{', BASELINE: no index or maintain runs' if args.baseline else ''})",
        f"log: {figures['events_in_log_once']} found exactly once, {len(figures['events_missing_from_log'])} missing,"
        f" {len(figures['events_duplicated_in_log'])} duplicated, {invalid_lines} invalid lines",
        f"index: {figures['events_in_index_before_last_index']} searchable before the last index run,"
        f" {figures['events_in_index_once']} found exactly once after it",
        f"failed hooks: {figures['failed_hooks']}; hook errors logged: {len(hook_errors)};"
        f" prompts with injected context: {figures['prompts_with_injected_context']}",
        f"searches: {figures['searches']}, errors: {figures['search_errors']} (p95 {figures['search_p95_s']}s)",
        f"index runs: {figures['index_runs']} ({figures['index_failures']} failed);"
        f" maintain / index --full runs: {figures['maintain_and_full_runs']} ({figures['maintain_failures']} failed),"
        f" seconds {figures['maintain_seconds']}",
        f"'database is locked': {locked}; index check: {'ok' if figures['index_check_ok'] else check}",
        f"hook latency s: all p50 {h['all']['p50']} p95 {h['all']['p95']} p99 {h['all']['p99']} max {h['all']['max']};"
        f" prompt p95 {h['prompt']['p95']}; tool p95 {h['tool']['p95']}",
        f"machine: {figures['machine']}",
        f"RESULT: {'PASS' if ok else 'FAIL'}",
    ]), flush=True)
    return finish(args, figures, base, ok)


if __name__ == "__main__":
    sys.exit(main())
