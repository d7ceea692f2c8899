"""Shared fixtures. Every test runs with MEMSEARCH_HOME and HOME in a temp dir: the real home is never touched.

The model folder is assembled once per session into a shared cache dir (from the installed PyPI packages, no
network), and the real model is loaded once per session for the tests that need it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from fake_embedder import FakeEmbedder
from indexer.base.embedder import load_embedder
from indexer.base.settings import resolve_settings
from indexer.store import sqlite as sqlite_store

REPO = Path(__file__).resolve().parent.parent
_SEED_HELP = "rerun with --hypothesis-seed={seed} to replay this run's property tests"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Property tests explore new examples on every run; the run's seed is drawn here (unless given) so that a
    failure found on one run can be replayed exactly with ``--hypothesis-seed``."""
    if config.getoption("hypothesis_seed", None) is None:
        config.option.hypothesis_seed = str(int.from_bytes(os.urandom(4), "big"))


def pytest_report_header(config):
    return f"hypothesis seed: {config.option.hypothesis_seed} ({_SEED_HELP.format(seed=config.option.hypothesis_seed)})"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if terminalreporter.stats.get("failed"):
        terminalreporter.write_line(_SEED_HELP.format(seed=config.option.hypothesis_seed))
SAMPLE = REPO / "examples" / "sample-memory"
MEMSEARCH = str(Path(sys.executable).with_name("memsearch"))


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch, model_cache):
    home = tmp_path / "memory"
    home.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)  # the user's state (indexer.base.paths.user_state_dir): HOME's
    monkeypatch.setenv("MEMSEARCH_HOME", str(home))
    monkeypatch.setenv("MEMSEARCH_CACHE_DIR", str(model_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in list(os.environ):
        if name.startswith("MEMSEARCH_") and name not in ("MEMSEARCH_HOME", "MEMSEARCH_CACHE_DIR"):
            monkeypatch.delenv(name)
    # hooks start a detached server when none runs: a test that wants one says so (and stops it)
    monkeypatch.setenv("MEMSEARCH_NO_SERVER", "1")
    return home


@pytest.fixture
def home(isolated_env) -> Path:
    return isolated_env


@pytest.fixture
def settings(home):
    return resolve_settings(home)


@pytest.fixture
def sample_home(home) -> Path:
    shutil.copytree(SAMPLE, home, dirs_exist_ok=True)
    return home


@pytest.fixture
def memory(sample_home, monkeypatch):
    """The sample memory, indexed for BM25 only (the hooks' in-process path), no server."""
    monkeypatch.setenv("MEMSEARCH_NO_SERVER", "1")
    subprocess.run([MEMSEARCH, "index"], env={**os.environ, "MEMSEARCH_MODEL": "none"}, check=True,
                   capture_output=True, timeout=120)
    return sample_home


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder(dim=32)


@pytest.fixture(scope="session")
def real_embedder(model_cache):
    """The bundled MiniLM model, loaded once for the session."""
    settings = resolve_settings("/nonexistent-memory-root", cache_dir=str(model_cache))
    embedder = load_embedder(settings)
    embedder.embed_query("warm up")
    return embedder



@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL 18 with pgvector for the session, in a temp folder on a free loopback port (see
    scripts/pg_local.py: as root it runs as an unprivileged system user); stopped and removed at the end. Skips only
    when no server can be had here, saying why."""
    from scripts.pg_local import LocalPostgresUnavailable, start

    try:
        server = start()
    except LocalPostgresUnavailable as exc:
        pytest.skip(f"no local PostgreSQL: {exc}")
    yield server
    server.stop()


#: Members of the :func:`team` database and their passwords.
TEAM_PASSWORDS = {"alice": "alice-pw-Zq9", "bob": "bob-pw-Xk2"}


@pytest.fixture
def team(pg_server):
    """A fresh database with the team schema, the HNSW indexes of ``team_vector_models`` (the test model and the
    bundled one), and members alice and bob; ``team.store(role)`` opens a member's :class:`PgStore`."""
    import uuid

    import psycopg

    from indexer.base.embedder import BUNDLED_DIM, BUNDLED_ID
    from indexer.store.postgres import PgStore, apply_team_init

    name = f"team_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    admin_url = pg_server.url(database=name)
    apply_team_init(admin_url, ["alice", "bob"], [("test-model@1", 16), (BUNDLED_ID, BUNDLED_DIM)])
    with psycopg.connect(admin_url, autocommit=True) as admin:
        for role, password in TEAM_PASSWORDS.items():
            admin.execute(psycopg.sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                psycopg.sql.Identifier(role), psycopg.sql.Literal(password)))
    urls = {role: pg_server.url(role, password, name) for role, password in TEAM_PASSWORDS.items()}
    stores: list[PgStore] = []

    def open_store(role: str) -> PgStore:
        stores.append(store := PgStore(urls[role]))
        return store

    yield type("Team", (), {"admin_url": admin_url, "urls": urls, "store": staticmethod(open_store), "db": name})
    for store in stores:
        store.close()
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')

@pytest.fixture
def silent_host():
    """A TCP port that accepts connections and never says a word, as a host that drops packets looks to libpq
    (which then waits out its connect timeout, 2 s at least); yields (port, connections accepted so far)."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1], accepted
    listener.close()
    for conn in accepted:
        conn.close()


SECRET = "the launch code is swordfish"


@pytest.fixture
def outside(tmp_path):
    """A folder outside the memory root holding SECRET, for the tests that no path leads there."""
    root = tmp_path / "outside"
    write(root / "secret.md", f"# Secret\n\n{SECRET}\n")
    write(root / "docs" / "more.md", f"# More\n\nalso {SECRET}\n")
    write(root / "id_rsa.json", json.dumps({"title": "key", "body": SECRET}))
    return root


@pytest.fixture
def linked_home(home, outside):
    """A memory root whose notes, decisions, events and a folder are symlinks to ``outside`` (one alias inside)."""
    write(home / "notes" / "real.md", "# Real\n\nthe marmalade recipe lives here\n")
    (home / "notes" / "leak.md").symlink_to(outside / "secret.md")
    (home / "decisions").mkdir()
    (home / "decisions" / "leak.json").symlink_to(outside / "id_rsa.json")
    (home / "events").mkdir()
    (home / "events" / "2026-11-20.jsonl").symlink_to(outside / "secret.md")
    (home / "linked-docs").symlink_to(outside / "docs")
    (home / "notes" / "alias.md").symlink_to(home / "notes" / "real.md")  # inside the root: allowed
    return home


# ids a user, a model or a page could send that try to name a path outside the memory root
HOSTILE_IDS = ["../../etc/passwd", "/etc/passwd", "..%2f..%2fetc%2fpasswd", "abcd/../../../etc/passwd",
               "~root/.ssh/id_rsa", "abcd\x00/etc/passwd", "file:///etc/passwd", "....", "*", "%", "abcd' OR 1=1 --",
               "ABCD" * 20, "", " "]


def event_line(eid: str, content: str) -> bytes:
    """One prompt event as an event log holds it (with its newline)."""
    return orjson.dumps({"id": eid, "ts": "2026-11-20T10:00:00", "type": "prompt", "content": content}) + b"\n"


def indexed_text(home: Path) -> str:
    """Every chunk's path, title and text and every file path in the local index: what a leak would show up in."""
    conn = sqlite_store.connect(home / ".memsearch" / "index.db")
    try:
        rows = conn.execute("SELECT path, title, text FROM chunks").fetchall()
        files = [r[0] for r in conn.execute("SELECT path FROM files")]
    finally:
        conn.close()
    return "\n".join(" ".join(map(str, r)) for r in rows) + "\n" + "\n".join(files)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@contextlib.contextmanager
def mcp_session(command: list[str] | None = None, env: dict | None = None):
    """An MCP server on stdio as Claude Code starts it (``memsearch mcp`` unless ``command``), past the
    ``initialize`` handshake: yields ``(process, the initialize reply)``; killed at the end."""
    proc = subprocess.Popen(command or [MEMSEARCH, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        init = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        mcp_rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield proc, init
    finally:
        proc.kill()
        proc.wait()


def mcp_rpc(proc, message):
    """Send one JSON-RPC message to an MCP server on stdio; return the reply with the same id (None for a
    notification)."""
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    if "id" not in message:
        return None
    while True:
        line = proc.stdout.readline()
        assert line, proc.stderr.read().decode()[-2000:]
        reply = json.loads(line)
        if reply.get("id") == message["id"]:
            return reply
