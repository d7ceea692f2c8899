"""Process-level measurements: wall time and peak RSS of one child process, and a pluggable prompt hook.

Each process is started cold (a new interpreter); its peak RSS is its own (see :func:`run_process`).

The prompt hook does not exist yet: :func:`cli_search_hook` measures ``memsearch search QUERY --mode bm25 --json``
as its stand-in. A real hook plugs in with :func:`template_hook` (``--hook-cmd``): the command line may hold
``{query}``, and the hook's stdin gets a UserPromptSubmit JSON payload with the query as ``prompt``.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scripts.stats import summary


@dataclass
class ProcResult:
    seconds: float
    max_rss_mb: float
    returncode: int
    stdout: bytes
    stderr: bytes
    #: user + system CPU of the process (and of GNU time around it, ~1 ms): unlike wall time, it barely moves with
    #: the machine's load
    cpu_seconds: float = 0.0


TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None


def run_process(argv: list[str], *, stdin: bytes | None = None, env: dict[str, str] | None = None,
                cwd: str | None = None, timeout: float = 300.0) -> ProcResult:
    """Run ``argv`` to completion; wall time from spawn to reap, peak RSS of that process alone.

    Peak RSS comes from GNU time's ``%M`` when /usr/bin/time exists: Linux carries a parent's high-water RSS
    into a child it forks (``ru_maxrss`` of a child spawned by this multi-GB benchmark process would report the
    benchmark's own size), so the child is forked by the small ``time`` process instead. Without it, ``os.wait4``
    is used and the figure is an upper bound.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(suffix=".rss") as rss_file:
        full = [TIME, "-f", "%M", "-o", rss_file.name, *argv] if TIME else argv
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=out, stderr=err, env=env, cwd=cwd)
        if stdin is not None:
            assert proc.stdin is not None  # stdin=PIPE
            try:
                proc.stdin.write(stdin)
                proc.stdin.close()
            except BrokenPipeError:
                pass
        # a blocking wait: Popen.wait(timeout) polls with sleeps of up to 50 ms, which quantised every process
        # time to 50 ms steps; the timer kills a process that overruns instead
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            proc.wait()
        finally:
            killer.cancel()
        seconds = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        rss_kb = 0.0
        if TIME:
            text = Path(rss_file.name).read_text().strip().splitlines()
            rss_kb = float(text[-1]) if text and text[-1].strip().isdigit() else float("nan")
        out.seek(0)
        err.seek(0)
        return ProcResult(seconds, rss_kb / 1024.0, proc.returncode, out.read(), err.read(), cpu)


@dataclass
class HookCommand:
    """How to start the prompt hook (or its stand-in) for one query."""

    name: str
    argv: Callable[[str], list[str]]
    stdin: Callable[[str], bytes | None]


def cli_search_hook(exe: str, home: Path, mode: str = "bm25", k: int = 10) -> HookCommand:
    """The stand-in: the CLI search process."""
    return HookCommand(
        name=f"memsearch search --mode {mode} --json",
        argv=lambda q: [exe, "search", q, "--mode", mode, "-k", str(k), "--json", "--home", str(home)],
        stdin=lambda q: None,
    )


def template_hook(template: str, home: Path) -> HookCommand:
    """A hook command line such as ``memsearch-hook user-prompt-submit``; ``{query}`` and ``{home}`` are
    substituted; stdin receives the UserPromptSubmit payload."""

    def argv(q: str) -> list[str]:
        return [a.replace("{query}", q).replace("{home}", str(home)) for a in shlex.split(template)]

    def stdin(q: str) -> bytes:
        return json.dumps({"session_id": "bench", "transcript_path": "", "cwd": str(home),
                           "hook_event_name": "UserPromptSubmit", "prompt": q}).encode()

    return HookCommand(name=template, argv=argv, stdin=stdin)


def interpreter_floor(python: str) -> HookCommand:
    """The interpreter floor the hook targets are stated against: ``python -c "import json, socket"``."""
    return HookCommand(name='python -c "import json, socket"', argv=lambda q: [python, "-c", "import json, socket"],
                       stdin=lambda q: None)


def measure_command(hook: HookCommand, queries: list[str], runs: int, env: dict[str, str],
                    warmup: int = 2, floor: HookCommand | None = None) -> dict:
    """``runs`` cold processes over ``queries`` (cycled): latency and peak RSS distributions. With ``floor``, a
    floor process runs just before each one (pair by pair, so both see the same load) and its latencies are
    reported beside, as ``floor_ms``."""
    for q in queries[:warmup]:  # page cache, .pyc files
        run_process(hook.argv(q), stdin=hook.stdin(q), env=env)
    secs, cpus, rss, failures, first_error = [], [], [], 0, None
    floor_secs: list[float] = []
    floor_cpus: list[float] = []
    for i in range(runs):
        q = queries[i % len(queries)]
        if floor is not None:
            f = run_process(floor.argv(q), env=env)
            floor_secs.append(f.seconds * 1000)
            floor_cpus.append(f.cpu_seconds * 1000)
        r = run_process(hook.argv(q), stdin=hook.stdin(q), env=env)
        if r.returncode != 0:
            failures += 1
            first_error = first_error or r.stderr.decode(errors="replace")[-400:]
        secs.append(r.seconds * 1000)
        cpus.append(r.cpu_seconds * 1000)
        rss.append(r.max_rss_mb)
    out = {"command": hook.name, "runs": runs, "failures": failures, "first_error": first_error,
           "latency_ms": summary(secs), "cpu_ms": summary(cpus), "max_rss_mb": max(rss), "rss_mb": summary(rss)}
    if floor is not None:
        out["floor_ms"] = summary(floor_secs)
        out["floor_cpu_ms"] = summary(floor_cpus)
    return out


def wait_until_warm(memsearch: str, env: dict[str, str], timeout: float = 300.0) -> dict:
    """Wait until the running ``memsearch serve`` answers and holds its BM25 postings (it reads them while idle;
    asking is not use); what ``serve --status --json`` last said."""
    deadline = time.monotonic() + timeout
    status: dict = {}
    while time.monotonic() < deadline:
        out = subprocess.run([memsearch, "serve", "--status", "--json"], env=env, capture_output=True, text=True)
        status = json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else {}
        lexicon = status.get("lexicon")
        if "model" in status and (lexicon is None and status.get("model") is None or lexicon and
                                   not lexicon.get("warming")):
            return status
        time.sleep(3.0)
    return status
