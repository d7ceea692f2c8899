"""The injection section of ``make eval``: what the prompt hook injects when LoCoMo dev is a user's memory.

Each LoCoMo conversation is one user's memory (a copy of the evaluation's cached index, so the prompts the hook
records never reach the cache). Every question is sent as a prompt through the real hook code path,
:func:`hooks.handlers.recall` (record the prompt, ask the warm server, else BM25 in the hook's process), from a
session that is none of the memory's sessions and from the memory's own project folder. Two paths:

- ``hybrid``: a real ``memsearch serve`` runs on the copy (the hook asks it over its socket);
- ``bm25``: no server (the hook's cold path: BM25 in its own process).

Two memories per question:

- *own*: its conversation. **Injected recall** = share of questions with a gold turn inside the injected block.
- *other*: the next conversation's memory, which does not hold the answer. **False injection** = share of these
  prompts that get anything injected.

The candidates the hook received are kept, and the gate (:mod:`search_engine.context`) is applied to them for
each point of a parameter sweep, so the curve shows exactly what each setting would have injected.

*Mixed memory* (the current project first): two conversations indexed into one memory as two projects; each
question is sent from its own project's folder. Reported: injected recall, and the share of prompts whose block
holds another project's items (``foreign``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SESSION = "eval-injection"
PATHS = ("hybrid", "bm25")


@dataclass
class Asked:
    """One question sent as a prompt: what the hook received before its gate."""

    qid: str
    memory: str  # "own" | "other" | "mixed"
    path: str  # "hybrid" | "bm25"
    query: str
    gold: frozenset[str]
    project: str
    hits: list[Any]
    max_items: int


@contextmanager
def _env(values: dict[str, str | None]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def _server(home: Path, env: dict[str, str]) -> Iterator[None]:
    """A real ``memsearch serve`` on ``home`` until the block ends (it waits until the server answers)."""
    from indexer.base.settings import resolve_settings
    from search_engine.serve.client import is_running, request

    repo = str(Path(__file__).resolve().parents[1])
    proc = subprocess.Popen([sys.executable, "-m", "search_engine.serve.server", "--home", str(home), "--idle-timeout",
                             "1800"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **env, "PYTHONPATH": repo}, cwd=repo)
    settings = resolve_settings(home)
    try:
        deadline = time.monotonic() + 120
        while not is_running(settings, timeout=1.0):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"memsearch serve did not start on {home}")
            time.sleep(0.2)
        yield
    finally:
        request(settings, {"op": "stop"}, timeout=2.0)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def ask_all(home: Path, questions: list[tuple[Any, str, str]], path: str, cache_dir: Path,
            log: Callable[[str], None]) -> list[Asked]:
    """Send each ``(query, memory label, project)`` through :func:`hooks.handlers.recall` against a copy of
    ``home``; ``path`` chooses whether a warm server runs."""
    from hooks import handlers

    with tempfile.TemporaryDirectory(prefix="memsearch-inject-") as tmp:
        copy = Path(tmp) / "memory"
        shutil.copytree(home, copy, ignore=shutil.ignore_patterns("serve.sock", "serve.lock", "logs"))
        env = {"MEMSEARCH_HOME": str(copy), "MEMSEARCH_CACHE_DIR": str(cache_dir), "MEMSEARCH_EXTRA_SOURCES": None,
               "MEMSEARCH_DB": None, "MEMSEARCH_NO_SERVER": "1" if path == "bm25" else None,
               "MEMSEARCH_MAX_ITEMS": None, "CLAUDE_PROJECT_DIR": None}
        server = _server(copy, {k: v for k, v in env.items() if v is not None}) if path == "hybrid" else None
        out: list[Asked] = []
        started = time.perf_counter()
        with _env(env):
            if server is not None:
                server.__enter__()
            try:
                for q, memory, project in questions:
                    found = handlers.recall({"prompt": q.text, "session_id": SESSION, "cwd": f"/home/eval/{project}",
                                             "hook_event_name": "UserPromptSubmit"})
                    hits = list(found.hits) if found else []
                    out.append(Asked(q.qid, memory, path, q.text, frozenset(q.gold), project, hits,
                                     found.max_items if found else 5))
            finally:
                if server is not None:
                    server.__exit__(None, None, None)
        log(f"[injection] {home.name} {path}: {len(questions)} prompts in {time.perf_counter() - started:.1f}s")
    return out


def _doc(hit: Any) -> str:
    return getattr(hit, "event_id", None) or hit.id


def injected(asked: Asked, gate: Any) -> list[Any]:
    """The hits the prompt hook injects for ``asked`` under ``gate`` (the product's own formatter)."""
    from search_engine.context import format_context
    from search_engine.query import ParsedQuery

    _, chosen = format_context(ParsedQuery.parse(asked.query), asked.hits, max_items=asked.max_items,
                               project=asked.project, gate=gate)
    return chosen


def rates(rows: list[Asked], gate: Any) -> dict[str, float]:
    """Injected recall (own), false injection (other), and for a mixed memory the foreign share."""
    own = [a for a in rows if a.memory in ("own", "mixed")]
    other = [a for a in rows if a.memory == "other"]
    out: dict[str, float] = {}
    if own:
        blocks = [(a, injected(a, gate)) for a in own]
        out["injected_recall"] = round(sum(1 for a, b in blocks if any(_doc(h) in a.gold for h in b)) / len(own), 4)
        out["injected_any"] = round(sum(1 for _, b in blocks if b) / len(own), 4)
        out["mean_items"] = round(sum(len(b) for _, b in blocks) / len(own), 3)
        if any(a.memory == "mixed" for a in own):
            out["foreign"] = round(sum(1 for a, b in blocks if any(getattr(h, "project", None) != a.project
                                                                    for h in b)) / len(own), 4)
    if other:
        out["false_injection"] = round(sum(1 for a in other if injected(a, gate)) / len(other), 4)
    return out


#: The gate's similarity bars: another model's gate sets them at its own level (:func:`sweep_values`).
LEVELS = ("min_similarity", "coverage_similarity", "relative_floor")


def sweep_values(gate: Any) -> dict[str, list[float]]:
    """The values swept around ``gate``: :data:`search_engine.context.GATE_SWEEP`, each similarity bar's values
    moved by the gate's distance from the default gate's bar, and the gate's own value always among them."""
    from search_engine.context import DEFAULT_GATE, GATE_SWEEP

    out = {}
    for name, values in GATE_SWEEP.items():
        shift = getattr(gate, name) - getattr(DEFAULT_GATE, name) if name in LEVELS else 0.0
        out[name] = sorted({round(v + shift, 4) for v in values} | {getattr(gate, name)})
    return out


def sweep(rows: list[Asked], name: str, values: list[float], gate: Any) -> list[dict]:
    """Recall and false injection for each value of one gate parameter, the others at ``gate``'s."""
    out = []
    for v in values:
        change: dict[str, Any] = {name: v}
        out.append({name: v, **rates(rows, gate._replace(**change))})
    return out


def plot(curves: dict[str, dict[str, list[dict]]], chosen: dict[str, float], out: Path) -> Path | None:
    """One panel per swept parameter: injected recall and false injection for each path; the default marked."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    names = sorted({n for per_path in curves.values() for n in per_path})
    cols = 2
    rows_n = (len(names) + cols - 1) // cols
    fig, grid = plt.subplots(rows_n, cols, figsize=(11, 4.2 * rows_n), squeeze=False)
    axes = [ax for row in grid for ax in row]
    for ax in axes[len(names):]:
        ax.axis("off")
    for ax, name in zip(axes, names):
        for path, style in (("hybrid", "-"), ("bm25", "--")):
            rows = curves.get(path, {}).get(name)
            if not rows:
                continue
            xs = [r[name] for r in rows]
            ax.plot(xs, [r["injected_recall"] for r in rows], style, color="tab:blue", marker="o", ms=3,
                    label=f"injected recall ({path})")
            bad = "false_injection" if "false_injection" in rows[0] else "foreign"
            ax.plot(xs, [r[bad] for r in rows], style, color="tab:red", marker="o", ms=3,
                    label=f"{bad.replace('_', ' ')} ({path})")
        ax.axhline(0.55, color="tab:blue", lw=0.6, ls=":")
        ax.axhline(0.10, color="tab:red", lw=0.6, ls=":")
        ax.axvline(chosen[name], color="grey", lw=0.8)
        ax.set_xlabel(name)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.set_title(f"gate: {name} (chosen {chosen[name]})", fontsize=10)
    for ax in axes[: len(names)]:
        ax.set_ylabel("share of prompts")
        ax.legend(fontsize=7, loc="upper right", framealpha=0.6)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def dump(rows: list[Asked], out: Path) -> None:
    """Per prompt: the candidate hits, whole (``Hit(**hit)`` rebuilds one), so a gate can be studied offline with
    :func:`rates` on :func:`load_dump`'s rows."""
    out.parent.mkdir(parents=True, exist_ok=True)  # the results' folder: made once the section's numbers are in
    with out.open("w", encoding="utf-8") as f:
        for a in rows:
            f.write(json.dumps({"qid": a.qid, "memory": a.memory, "path": a.path, "query": a.query,
                                "gold": sorted(a.gold), "project": a.project, "max_items": a.max_items,
                                "hits": [h._asdict() for h in a.hits]}, ensure_ascii=False) + "\n")


def load_dump(path: Path) -> list[Asked]:
    """The rows :func:`dump` wrote."""
    from indexer.base.types import Hit

    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            out.append(Asked(r["qid"], r["memory"], r["path"], r["query"], frozenset(r["gold"]), r["project"],
                             [Hit(**h) for h in r["hits"]], r["max_items"]))
    return out
