"""Prompt-hook latency, end to end as Claude Code runs it: a fresh ``memsearch-hook prompt`` process per prompt,
fed a UserPromptSubmit payload on stdin, timed from spawn to exit, with its peak RSS (``os.wait4``).

Two paths, measured one after the other on the same memory root:
- BM25 cold: no server running, the hook records the prompt, indexes it and searches BM25 in its own process;
- hybrid warm: ``memsearch serve`` running with the model loaded; the hook asks it.

    python -m scripts.bench_hook --home DIR [--runs 60] [--json out.json]

The memory root must already be indexed (with embeddings for the warm path). Prompts are drawn from the texts
of the root's own chunks, reworded into questions, so they find something.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from scripts.bench_proc import wait_until_warm
from scripts.stats import percentile

BIN = Path(sys.executable).parent


def prompts_from(home: Path, n: int, seed: int = 7) -> list[str]:
    import apsw

    conn = apsw.Connection(str(home / ".memsearch" / "index.db"), flags=apsw.SQLITE_OPEN_READONLY)
    rows = [r[0] for r in conn.execute("SELECT text FROM chunks ORDER BY random() LIMIT ?", (n * 3,))]
    rnd = random.Random(seed)
    out = []
    for text in rows:
        words = [w for w in text.split() if w.isalpha() and len(w) > 3]
        if len(words) >= 4:
            out.append("what do we know about " + " ".join(rnd.sample(words, 4)) + "?")
        if len(out) == n:
            break
    return out


def run_hook(env: dict[str, str], prompt: str, session: str) -> tuple[float, bool]:
    payload = json.dumps({"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp/bench",
                          "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    started = time.perf_counter()
    proc = subprocess.Popen([str(BIN / "memsearch-hook"), "prompt"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out, _ = proc.communicate(payload.encode())
    return (time.perf_counter() - started) * 1000, bool(out.strip())


def floor_ms() -> float:
    """One run of the interpreter floor the targets are stated against: ``python -c "import json, socket"``."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import json, socket"], check=True)
    return (time.perf_counter() - started) * 1000


def measure(env: dict[str, str], prompts: list[str], label: str) -> dict:
    """Each hook run just after one floor run (pair by pair: both see the same load)."""
    times, floors, injected = [], [], 0
    for i, prompt in enumerate(prompts):
        floors.append(floor_ms())
        elapsed, hit = run_hook(env, prompt, f"bench-{label}-{i}")
        times.append(elapsed)
        injected += hit
    return {"path": label, "runs": len(times), "p50_ms": round(percentile(times, 50), 1),
            "p95_ms": round(percentile(times, 95), 1), "max_ms": round(max(times), 1), "injected": injected,
            "floor_p50_ms": round(percentile(floors, 50), 1), "floor_p95_ms": round(percentile(floors, 95), 1)}


def peak_rss(env: dict[str, str], prompt: str) -> float:
    """Peak RSS (MB) of one hook process, read from the kernel's accounting of that child."""
    payload = json.dumps({"session_id": "rss", "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    pid = os.fork()
    if pid == 0:  # child: exec the hook with the payload on stdin
        r, w = os.pipe()
        os.write(w, payload.encode())
        os.close(w)
        os.dup2(r, 0)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execve(str(BIN / "memsearch-hook"), [str(BIN / "memsearch-hook"), "prompt"], env)
    _, _, usage = os.wait4(pid, 0)
    return round(usage.ru_maxrss / 1024, 1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", required=True, type=Path)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    home = args.home.resolve()
    env = {**os.environ, "MEMSEARCH_HOME": str(home)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's Python caches bytecode; measure that, not recompiles
    env.pop("MEMSEARCH_NO_SERVER", None)
    prompts = prompts_from(home, args.runs)
    subprocess.run([str(BIN / "memsearch"), "serve", "--stop"], env=env, capture_output=True)
    chunks = json.loads(subprocess.run([str(BIN / "memsearch"), "status", "--json"], env=env,
                                       capture_output=True, text=True).stdout)["chunks"]
    results = [measure({**env, "MEMSEARCH_NO_SERVER": "1"}, prompts, "bm25-cold")]
    rss_bm25 = peak_rss({**env, "MEMSEARCH_NO_SERVER": "1"}, prompts[0])
    server = subprocess.Popen([str(BIN / "memsearch"), "serve", "--idle-timeout", "600"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if subprocess.run([str(BIN / "memsearch"), "serve", "--status"], env=env,
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        wait_until_warm(str(BIN / "memsearch"), env)  # the model loaded and the BM25 postings read
        results.append(measure(env, prompts, "hybrid-warm"))
        rss_warm = peak_rss(env, prompts[0])
    finally:
        subprocess.run([str(BIN / "memsearch"), "serve", "--stop"], env=env, capture_output=True)
        server.wait(timeout=30)
    load = os.getloadavg()[0]
    print(f"memory root {home}: {chunks} chunks; load average {load:.1f} on {os.cpu_count()} cores")
    print(f"{'path':<12} {'runs':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'injected':>9} {'floor p95':>10}"
          f" {'x floor':>8}  (targets: 4x BM25 cold, 2.5x through the server)")
    for r in results:
        print(f"{r['path']:<12} {r['runs']:>5} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['max_ms']:>8} {r['injected']:>9}"
              f" {r['floor_p95_ms']:>10} {r['p95_ms'] / r['floor_p95_ms']:>8.2f}")
    print(f"hook peak RSS: {rss_bm25} MB on the BM25 path, {rss_warm} MB on the warm path (target <= 100 MB)")
    if args.json:
        args.json.write_text(json.dumps({"chunks": chunks, "load": load, "results": results,
                                         "rss_mb": {"bm25": rss_bm25, "warm": rss_warm}}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
