"""One warm server, started by the hooks when missing, never piling up; summaries through one queue.

Real processes throughout: ``memsearch-hook`` as Claude Code runs it, ``memsearch serve``, and a count of the
processes that run for this memory root, read from /proc."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import MEMSEARCH, REPO, indexed_text
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


def test_a_hook_that_claims_the_start_after_a_server_took_the_lock_starts_no_second_one(home, monkeypatch):
    """The interleaving behind two servers alive at once: a hook finds no server, a server starting meanwhile takes
    the lock and clears the start claim, then the hook wins a fresh claim. It must look again, not start one."""
    from indexer.base.locks import file_lock
    from indexer.base.paths import SERVE_LOCK, SERVE_PID, SERVE_STARTING
    from search_engine.serve import client

    monkeypatch.delenv("MEMSEARCH_NO_SERVER")
    settings = resolve_settings(home)
    started, real_claim = [], client.claim_start
    monkeypatch.setattr(client, "start_detached", lambda settings, idle_timeout=None: started.append(1))
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as server:
        def claim_after_a_server_started(settings, name):
            server.enter_context(file_lock(settings.state_dir / SERVE_LOCK, 1.0))
            (settings.state_dir / SERVE_PID).write_text(f"{os.getpid()}\n")
            (settings.state_dir / SERVE_STARTING).unlink(missing_ok=True)
            return real_claim(settings, name)

        monkeypatch.setattr(client, "claim_start", claim_after_a_server_started)
        assert client.ensure_server(settings) is False
        assert started == [] and not (settings.state_dir / SERVE_STARTING).exists()
    monkeypatch.setattr(client, "claim_start", real_claim)
    assert client.ensure_server(settings) is True and started == [1], "with no server, the hook starts one"


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


@pytest.mark.parametrize("then", ["deleted", "made again"])
def test_a_server_whose_memory_root_was_deleted_exits_and_makes_nothing_again(sample_home, then):
    """A root deleted mid-session left its server running: it reopened the index the next hooks made there, next
    to the new root's own server, and neither `serve --status` nor `--stop` saw it."""
    env = {**os.environ, "MEMSEARCH_MODEL": "none"}
    old = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "120"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=env)
    new = None
    try:
        assert wait_for(lambda: (sample_home / ".memsearch" / "serve.sock").exists(), 30)
        shutil.rmtree(sample_home)
        if then == "made again":  # as the next hook does, and the server it starts
            (sample_home / "events").mkdir(parents=True)
            new = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "120"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, env=env)
            assert wait_for(lambda: (sample_home / ".memsearch" / "serve.sock").exists(), 30)
        old.wait(timeout=10)
        if then == "deleted":
            time.sleep(1)
            assert not sample_home.exists()
        else:
            status = subprocess.run([MEMSEARCH, "serve", "--status"], capture_output=True, text=True, timeout=30)
            assert f"running: pid {new.pid}" in status.stdout  # its socket and pid file are still there
            assert (sample_home / ".memsearch" / "serve.sock").exists()
            assert (sample_home / ".memsearch" / "serve.pid").read_text().strip() == str(new.pid)
            assert subprocess.run([MEMSEARCH, "serve", "--stop"], capture_output=True, text=True,
                                  timeout=30).stdout.strip() == "stopped"
            assert new.wait(timeout=20) == 0
    finally:
        for server in (old, new):
            if server is not None and server.poll() is None:
                server.kill()
                server.wait()


def test_asking_for_the_status_is_not_use_the_idle_server_still_exits(sample_home):
    server = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "4"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env={**os.environ, "MEMSEARCH_MODEL": "none"})
    try:
        settings = resolve_settings(sample_home)
        from search_engine.serve.client import is_running, request

        assert wait_for(lambda: is_running(settings, 2.0), 30)
        started = time.monotonic()
        while server.poll() is None and time.monotonic() - started < 30:
            is_running(settings, 2.0)  # a ping every half second
            time.sleep(0.5)
        assert server.poll() == 0, "a server asked only for its status exits when idle"
        assert 4 <= time.monotonic() - started < 30
        assert request(settings, {"op": "ping"}, timeout=1.0) is None
    finally:
        if server.poll() is None:
            server.kill()


def test_cli_search_asks_the_running_server_with_the_callers_settings(sample_home, tmp_path):
    import json

    from search_engine.filters import Filters
    from search_engine.serve.client import is_running, remote_search

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
        # idle, the server reads the BM25 postings into memory; its lists are then ranked from them: the same
        def lexicon() -> dict:
            return (is_running(settings, 2.0) or {}).get("lexicon") or {"warming": True}

        assert wait_for(lambda: not lexicon()["warming"], 90, step=0.5)
        status = subprocess.run([MEMSEARCH, "serve", "--status"], capture_output=True, text=True, timeout=60).stdout
        assert "BM25 postings in memory" in status and "(ready)" in status, status
        assert {(q, str(cwd)): cli(q, cwd) for q in queries for cwd in (tmp_path, project)} == alone
        assert lexicon()["phrases"] > 0
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


def test_server_ingests_only_files_inside_the_memory_root(linked_home, outside, monkeypatch):
    from search_engine.serve.server import Server

    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    server = Server(resolve_settings(linked_home))
    server.load()
    for paths in ([str(outside / "secret.md")], [str(linked_home / "notes" / "leak.md")],
                  [str(linked_home / ".." / "outside" / "secret.md")], ["/etc/hostname"], "not a list"):
        assert server.handle({"op": "ingest", "paths": paths}) == {"ok": True, "ingested": False}
    assert not (linked_home / ".memsearch" / "index.db").exists() or "swordfish" not in indexed_text(linked_home)


def _wait_for_socket(path: Path, proc: subprocess.Popen) -> None:
    for _ in range(300):
        if path.exists():
            return
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    raise AssertionError("the server did not start")


def _socket_inodes(pid: int) -> set[str]:
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]", target)
        if m:
            out.add(m.group(1))
    return out


def _inet_inodes() -> set[str]:
    out = set()
    for table in ("tcp", "tcp6", "udp", "udp6"):
        try:
            lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        out |= {line.split()[9] for line in lines if len(line.split()) > 9}
    return out


@pytest.fixture
def served_root():
    """A memory root under a world-traversable folder, so that another user can try the socket; a running server."""
    base = Path(tempfile.mkdtemp(prefix="memsearch-sec-", dir="/tmp"))
    base.chmod(0o755)
    home = base / "memory"
    shutil.copytree(REPO / "examples" / "sample-memory", home)
    env = {**os.environ, "MEMSEARCH_HOME": str(home), "MEMSEARCH_MODEL": "none"}
    subprocess.run([MEMSEARCH, "index"], env=env, check=True, capture_output=True, timeout=120)
    proc = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "60"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    sock = home / ".memsearch" / "serve.sock"
    try:
        _wait_for_socket(sock, proc)
        yield home, sock, proc
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(base, ignore_errors=True)


def test_server_socket_is_private_and_no_tcp_listener(served_root):
    home, sock, proc = served_root
    st = os.stat(sock)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    mine = _socket_inodes(proc.pid)
    assert mine and not (mine & _inet_inodes())  # every socket of the server is a Unix socket
    unix = Path("/proc/net/unix").read_text()
    assert str(sock) in unix
    # The index itself, and its WAL files, are the owner's only too.
    files = [p for p in (home / ".memsearch").glob("index.db*") if not p.name.endswith(".lock")]
    assert home / ".memsearch" / "index.db" in files
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in files} == {p.name: 0o600 for p in files}


def test_server_refuses_other_users(served_root):
    home, sock, proc = served_root
    probe = ("import socket, sys\n"
             "s = socket.socket(socket.AF_UNIX)\n"
             "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    print('EACCES'); sys.exit(0)\n"
             "try:\n    s.sendall(b'{\"op\": \"ping\"}\\n')\nexcept BrokenPipeError:\n    pass\n"
             "print(s.recv(4096).decode())\n")
    nobody = {"user": 65534, "group": 65534, "env": {"PATH": "/usr/bin:/bin"}, "cwd": "/"}
    python = _python_for_nobody(nobody)
    if python is None:  # only root can become another user; the peer check itself is tested below
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        return
    denied = subprocess.run([python, "-c", probe, str(sock)], capture_output=True, text=True, timeout=30,
                            **nobody)
    assert denied.stdout.strip() == "EACCES", denied.stderr  # the 0600 socket file stops them
    os.chmod(sock.parent, 0o711)  # the state folder is 0700 too: open the way to the socket …
    os.chmod(sock, 0o666)  # … and the socket itself: even so, the server checks the peer's uid
    refused = subprocess.run([python, "-c", probe, str(sock)], capture_output=True, text=True, timeout=30,
                             **nobody)
    assert json.loads(refused.stdout) == {"ok": False, "error": "refused: not the owner"}, refused.stderr


def _python_for_nobody(nobody: dict) -> str | None:
    """A Python interpreter user 65534 can run (the virtualenv's may sit in a private home), or None if we are
    not root."""
    if os.geteuid() != 0:
        return None
    for candidate in (sys.executable, "/usr/bin/python3", "/bin/python3", "/usr/local/bin/python3"):
        try:
            if subprocess.run([candidate, "-c", "pass"], capture_output=True, timeout=30, **nobody).returncode == 0:
                return candidate
        except OSError:
            continue
    raise AssertionError("no Python interpreter that user 65534 can run")


def test_server_checks_the_peer_uid(settings, monkeypatch):
    from search_engine.serve import server as server_module

    srv = server_module.Server(settings)
    monkeypatch.setattr(server_module, "_peer_uid", lambda conn: os.getuid() + 1)
    a, b = socket.socketpair()
    with a, b:
        b.sendall(b'{"op": "stop"}\n')
        srv._answer(a)
        assert json.loads(b.recv(4096)) == {"ok": False, "error": "refused: not the owner"}
    assert srv.running  # the stop request of another user did nothing


def test_idle_embedding_goes_a_few_chunks_at_a_time_for_a_slow_model(home, monkeypatch):
    """While idle the server embeds pending chunks in batches sized to ~0.25 s of the model's measured time, so a
    prompt that comes meanwhile is answered within the hook's wait even with a slow model; and it comes back at
    once while chunks are left."""
    from fake_embedder import FakeEmbedder
    from indexer.pipeline import index
    from search_engine.serve import server as server_module

    for i in range(40):
        (home / "notes").mkdir(exist_ok=True)
        (home / "notes" / f"n{i}.md").write_text(f"# Note {i}\nthe deploy runbook, step {i} of the release\n")
    index(resolve_settings(home, model="none"))

    class Clock:  # the server's clock, moved only by the model's work: the rates are exact, whatever the load
        now = 1000.0

        @classmethod
        def monotonic(cls) -> float:
            return cls.now

    class Timed(FakeEmbedder):
        def __init__(self, seconds_per_text: float, model_id: str):
            super().__init__(model_id=model_id)
            self.seconds = seconds_per_text

        def embed_passages(self, texts):
            Clock.now += self.seconds * len(texts)
            return super().embed_passages(texts)

    monkeypatch.setattr(server_module, "time", Clock)

    def batches(embedder) -> list[int]:
        srv = server_module.Server(resolve_settings(home))
        srv.embedder = embedder
        sizes, due = [], []
        for _ in range(60):
            before = embedder.embedded
            srv.idle_work()
            if embedder.embedded == before:
                break
            sizes.append(embedder.embedded - before)
            due.append(srv.embedding_due)
        assert all(due[:-1])  # chunks were left after each batch but the last: the loop came back at once
        assert not srv.embedding_due  # nothing left: the loop goes back to waiting
        return sizes

    slow = batches(Timed(0.05, "slow"))
    assert sum(slow) == 40 and slow[0] == 1 and set(slow[1:-1]) == {5}  # 0.25 s at 0.05 s a chunk
    fast = batches(Timed(0.01, "fast"))
    assert sum(fast) == 40 and fast[:3] == [1, 25, 14]  # then all that is left (at most 32)
