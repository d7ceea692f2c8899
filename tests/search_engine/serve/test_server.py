"""One warm server, started by the hooks when missing, never piling up; summaries through one queue.

Real processes throughout: ``memsearch-hook`` as Claude Code runs it, ``memsearch serve``, and a count of the
processes that run for this memory root, read from /proc."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import MEMSEARCH
from hookrun import context_of, hook, prompt_payload
from indexer.base.settings import resolve_settings

SESSIONS = [f"sess-{i:02d}" for i in range(10)]


def background_processes(home: Path) -> list[int]:
    """Pids of servers and summary workers of this memory root (their command line or environment names it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if "search_engine.serve.server" not in cmd and "hooks.entry summarize" not in cmd:
                continue
            if str(home) in cmd or str(home).encode() in (entry / "environ").read_bytes():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_for(check, seconds: float, step: float = 0.1):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(step)
    return check()


@pytest.fixture
def captured(sample_home):
    """Ten sessions with a prompt each, recorded by the real hook (no server yet)."""
    for s in SESSIONS:
        hook("prompt", prompt_payload(f"Make the nightly export resumable, part {s}", session=s),
             env={"MEMSEARCH_MODEL": "none"})
    return sample_home


def _summary_state(home: Path) -> str:
    """What the summary queue looks like, for a failure message: missing notes, queue, claim, worker, logs."""
    state = home / ".memsearch"
    missing = [s for s in SESSIONS if not (home / "sessions" / f"{s}.md").exists()]
    files = sorted(p.name for p in state.iterdir()) if state.exists() else []
    queue = (state / "summary-queue").read_text() if (state / "summary-queue").exists() else None
    logs = sorted(state.glob("logs/*.log"))
    tail = "".join(p.read_text()[-2000:] for p in logs)
    logged = {s: sum(f'"{s}"' in p.read_text() for p in (home / "events").glob("*.jsonl")) for s in missing}
    indexed = {}
    if (state / "index.db").exists():
        conn = sqlite3.connect(f"file:{state / 'index.db'}?mode=ro", uri=True)
        indexed = {s: conn.execute("SELECT count(*) FROM chunks WHERE session_id = ?", (s,)).fetchone()[0]
                   for s in missing}
        conn.close()
    return (f"missing {missing}; in event logs {logged}; chunks indexed {indexed}; state files {files}; "
            f"queue {queue!r}; workers {background_processes(home)}; logs: {tail}")


def _stop(home: Path) -> None:
    subprocess.run([MEMSEARCH, "serve", "--stop"], capture_output=True, text=True, timeout=30)
    assert wait_for(lambda: not background_processes(home), 20)


def _session_end(s: str, env: dict) -> str:
    return hook("session-end", {"session_id": s, "transcript_path": "/tmp/x.jsonl", "cwd": "/repo",
                                "hook_event_name": "SessionEnd", "reason": "other"}, env=env)


@pytest.mark.parametrize("with_server", [True, False], ids=["server", "no-server"])
def test_ten_session_ends_run_one_background_process(captured, monkeypatch, with_server):
    home = captured
    if with_server:
        monkeypatch.delenv("MEMSEARCH_NO_SERVER")
    env = {"MEMSEARCH_MODEL": "none"}
    seen: set[int] = set()
    most = 0
    watching = threading.Event()

    def watch() -> None:  # from the first hook on: a worker that drains fast lives a few hundred ms
        nonlocal most
        while not watching.is_set():
            running = background_processes(home)
            seen.update(running)
            most = max(most, len(running))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=10) as pool:
            list(pool.map(lambda s: _session_end(s, env), SESSIONS))
        assert time.monotonic() - started < 10
        notes = lambda: all((home / "sessions" / f"{s}.md").exists() for s in SESSIONS)  # noqa: E731
        assert wait_for(notes, 90), _summary_state(home)
        assert "Make the nightly export resumable, part sess-03" in (home / "sessions" / "sess-03.md").read_text()
        assert not (home / ".memsearch" / "summary-queue").exists() or not (
            home / ".memsearch" / "summary-queue").read_text().strip()
        if not with_server:  # the worker leaves once the queue is empty
            assert wait_for(lambda: not background_processes(home), 20)
    finally:
        watching.set()
        watcher.join()
        if with_server:
            _stop(home)
    # never two at once; a worker that found the queue empty and left may be followed by another one later
    assert most == 1 and seen, (most, seen)
    if with_server:
        assert len(seen) == 1


def test_prompt_hook_starts_a_missing_server_without_waiting(captured, monkeypatch):
    home = captured
    monkeypatch.delenv("MEMSEARCH_NO_SERVER")
    try:
        started = time.monotonic()
        hook("prompt", prompt_payload("Why do we get database is locked errors during the nightly export?"),
             env={"MEMSEARCH_MODEL": "none"})
        assert time.monotonic() - started < 5
        assert wait_for(lambda: background_processes(home), 30)
        status = wait_for(lambda: subprocess.run([MEMSEARCH, "serve", "--status"], capture_output=True,
                                                 text=True).returncode == 0, 30)
        assert status
    finally:
        _stop(home)
    assert not (home / ".memsearch" / "serve.pid").exists()


def test_status_and_stop_trust_the_lock_not_a_ping(sample_home):
    server = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "120"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env={**os.environ, "MEMSEARCH_MODEL": "none"})
    try:
        assert wait_for(lambda: (sample_home / ".memsearch" / "serve.sock").exists(), 30)
        os.kill(server.pid, signal.SIGSTOP)  # alive but unable to answer any ping
        status = subprocess.run([MEMSEARCH, "serve", "--status"], capture_output=True, text=True, timeout=30)
        assert status.returncode == 0 and f"running: pid {server.pid}" in status.stdout
        os.kill(server.pid, signal.SIGCONT)
        stop = subprocess.run([MEMSEARCH, "serve", "--stop"], capture_output=True, text=True, timeout=30)
        assert stop.stdout.strip() == "stopped"
        assert server.wait(timeout=20) == 0
        status = subprocess.run([MEMSEARCH, "serve", "--status"], capture_output=True, text=True, timeout=30)
        assert status.returncode == 3 and status.stdout.strip() == "not running"
    finally:
        if server.poll() is None:
            os.kill(server.pid, signal.SIGCONT)
            server.kill()


def test_cli_search_asks_the_running_server_with_the_callers_settings(sample_home, tmp_path):
    import json

    from search_engine.filters import Filters
    from search_engine.serve.client import remote_search

    subprocess.run([MEMSEARCH, "index"], check=True, capture_output=True, timeout=300)
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".memsearch.toml").write_text("bm25_share = 0.2\ndedup_threshold = 0.95\n")
    queries = ["what prevents a shopper paying double", "database locked nightly export", "deploy steps"]

    def cli(q: str, cwd: Path) -> dict:
        out = subprocess.run([MEMSEARCH, "search", q, "--json", "--explain", "-k", "5"], capture_output=True,
                             text=True, cwd=cwd, timeout=120, check=True).stdout
        data = json.loads(out)
        return {"mode": data["mode_used"], "hits": [(h["id"], round(h["score"], 6)) for h in data["hits"]],
                "explain": data["explain"]}

    alone = {(q, str(cwd)): cli(q, cwd) for q in queries for cwd in (tmp_path, project)}
    assert any(alone[(q, str(tmp_path))]["hits"] != alone[(q, str(project))]["hits"] for q in queries), \
        "the project's tuning changes some ranking (else this test could not tell the settings apart)"
    server = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "120"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        settings = resolve_settings(sample_home)
        assert wait_for(lambda: remote_search(settings, "deploy", mode="hybrid", k=3, filters=Filters()), 120)
        served = {(q, str(cwd)): cli(q, cwd) for q in queries for cwd in (tmp_path, project)}
        assert served == alone
        other = resolve_settings(sample_home, model="none")
        assert remote_search(other, "deploy", mode="bm25", k=3, filters=Filters()) is None, "another model: local"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_warm_server_answers_hybrid_over_a_private_socket(sample_home):
    subprocess.run([MEMSEARCH, "index"], check=True, capture_output=True, timeout=300)
    server = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "60"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    try:
        sock = sample_home / ".memsearch" / "serve.sock"
        for _ in range(300):
            status = subprocess.run([MEMSEARCH, "serve", "--status", "--json"], capture_output=True, text=True)
            if status.returncode == 0 and "model" in json.loads(status.stdout):  # running and answering
                break
            time.sleep(0.1)
        assert json.loads(status.stdout)["running"] is True
        assert oct(sock.stat().st_mode & 0o777) == "0o600"
        second = subprocess.run([MEMSEARCH, "serve"], capture_output=True, text=True, timeout=30)
        assert second.returncode == 1 and "already runs" in second.stderr
        from indexer.base.settings import resolve_settings
        from search_engine.serve.client import request

        answer = request(resolve_settings(sample_home), {"op": "search", "query": "what prevents a shopper paying "
                         "double", "k": 3}, timeout=10)
        assert answer["ok"] and answer["result"]["mode_used"] == "hybrid"
        assert any(h["vector_rank"] for h in answer["result"]["hits"])
        ctx = context_of(hook("prompt", prompt_payload("how do we avoid charging a customer twice on retries")))
        assert "idempotency" in ctx
        assert subprocess.run([MEMSEARCH, "serve", "--stop"], capture_output=True, text=True).stdout.strip() == "stopped"
        server.wait(timeout=20)
        assert not sock.exists()
    finally:
        if server.poll() is None:
            server.kill()


def test_the_server_skips_requests_whose_client_gave_up(settings):
    """Under load, requests queue in the server's backlog while their hooks time out and fall back; a request
    whose client has hung up is dropped instead of delaying everyone behind it."""
    import socket

    from search_engine.serve.server import Server

    srv = Server(settings)
    gone, server_end = socket.socketpair()
    with server_end:
        gone.sendall(b'{"op": "stop"}\n')
        gone.close()
        srv._answer(server_end)
    assert srv.running
    waiting, server_end = socket.socketpair()
    with waiting, server_end:
        waiting.sendall(b'{"op": "stop"}\n')
        srv._answer(server_end)
        assert json.loads(waiting.recv(4096)) == {"ok": True}
    assert not srv.running
