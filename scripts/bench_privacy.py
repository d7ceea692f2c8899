#!/usr/bin/env python
"""The privacy filter's cost on the hook path: microseconds per KB of text, by kind of text and size, and the
import time of the filter's module. A benchmark, not a test: it prints figures and never fails.

The texts are generated here (prose with no secret word, Python code full of ``key``/``token`` names, a shell
log with a credential every ~2 KB, a JSON tool response), at 2 KB (a typical prompt or tool observation), 64 KB
(the event cap) and 1 MB (a large tool output, filtered whole before its head and tail are kept).

    .venv/bin/python -m scripts.bench_privacy [--repo DIR] [--json]

``--repo`` measures another checkout's filter: the figures come from a child process whose ``PYTHONPATH`` is
that checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_WORDS = ("the migration of the billing tables runs nightly and writes a summary for the team before the "
          "review meeting where we decide which index to keep and how the cache is warmed after a deploy").split()


def _prose(rng: random.Random, n: int) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 20))).capitalize() + ". "
        out.append(sentence)
        size += len(sentence)
    return "".join(out)[:n]


def _code(rng: random.Random, n: int) -> str:
    lines = [
        "def lookup(table, key):", "    return table.get(key, None)", "cache_key = f'user:{uid}'",
        "tokens = tokenizer.encode(text)", "sorted(rows, key=lambda r: r.ts)", "    max_tokens: int = 4096",
        "api_key = os.environ['API_KEY']", "for key, value in items.items():", "    if not token: raise AuthError()",
        "headers = {'Accept': 'application/json'}", "class Session:", "    secret_ref = 'vault:db'",
    ]
    return _fill(rng, lines, n)


def _log(rng: random.Random, n: int) -> str:
    lines = [
        "2026-11-20T10:00:01 INFO request served in 12 ms", "2026-11-20T10:00:02 DEBUG cache hit for user 42",
        "+ docker compose up -d db", "Step 4/9 : RUN pip install -r requirements.txt", "  Downloading wheel 1.2 MB",
    ]
    secrets = [
        "export DB_PASSWORD=k2Jd9sLq0p", "curl -u deploy:Zx8vQ2mN https://ci.example.com/api",
        "postgres://app:pa55/w0rd@db:5432/main", "Authorization: Bearer eyJhbGciOi.abcdefgh12345678",
        "AKIAQ3EGRU7XKZ4TW5NB", "GITHUB_TOKEN=ghp_" + "a1B2" * 9,
    ]
    text = _fill(rng, lines, n)
    parts = [text[i:i + 2048] for i in range(0, len(text), 2048)]
    return "\n".join(p + "\n" + rng.choice(secrets) for p in parts)[:n]


def _json(rng: random.Random, n: int) -> str:
    rows = []
    size = 0
    while size < n:
        row = json.dumps({"id": rng.randint(1, 10 ** 6), "name": rng.choice(_WORDS), "status": "ok",
                          "sha": f"{rng.getrandbits(160):040x}", "tags": [rng.choice(_WORDS) for _ in range(3)]})
        rows.append(row)
        size += len(row) + 2
    return ("[" + ",\n".join(rows) + "]")[:n]


def _fill(rng: random.Random, lines: list[str], n: int) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        line = rng.choice(lines)
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)[:n]


def measure(repeats: int = 7) -> dict:
    from indexer.privacy import redact

    rng = random.Random(7)
    result: dict = {}
    for kind, make in (("prose", _prose), ("code", _code), ("log with secrets", _log), ("json", _json)):
        for size in (2_048, 65_536, 1_048_576):
            text = make(rng, size)
            reps = repeats if size < 1_000_000 else 3
            times = []
            for _ in range(reps):
                t = time.perf_counter()
                redact(text)
                times.append(time.perf_counter() - t)
            best = statistics.median(times)
            result[f"{kind} {size // 1024} KB"] = {"ms": round(best * 1000, 3),
                                                   "us_per_kb": round(best * 1e6 / (size / 1024), 1)}
    return result


def import_ms(python: str, repo: Path, runs: int = 7) -> float:
    """Median extra start-up time of ``import indexer.privacy`` over a bare interpreter, in ms."""
    def run(code: str) -> float:
        t = time.perf_counter()
        subprocess.run([python, "-c", code], cwd=repo, check=True)
        return time.perf_counter() - t

    bare = statistics.median(run("pass") for _ in range(runs))
    loaded = statistics.median(run("import indexer.privacy") for _ in range(runs))
    return round((loaded - bare) * 1000, 1)


def privacy_section(python: str = sys.executable, repo: Path = REPO) -> dict:
    """The figures for ``scripts.bench``: measured in a child process of ``python`` importing ``repo``'s modules."""
    out = subprocess.run([python, str(Path(__file__).resolve()), "--inner"], cwd=repo, check=True,
                         env={**os.environ, "PYTHONPATH": str(repo)}, capture_output=True, text=True).stdout
    res = json.loads(out)
    res["import_ms"] = import_ms(python, repo)
    return res


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", default=str(REPO), help="checkout whose filter is measured")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--json", action="store_true")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.inner:
        print(json.dumps(measure()))
        return 0
    res = privacy_section(args.python, Path(args.repo))
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    print(f"privacy filter of {args.repo}: import {res.pop('import_ms')} ms")
    print(f"{'text':<24}{'ms':>10}{'us/KB':>10}")
    for name, r in res.items():
        print(f"{name:<24}{r['ms']:>10.3f}{r['us_per_kb']:>10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
