"""Reliability: fuzzed hook input and queries, malformed sources, hooks racing index runs and maintenance, and
processes killed at random moments. Bounded in count, not in time: the figures under load come from
``scripts/stress_load.py`` and ``scripts/stress_crash.py``."""

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings as hsettings, strategies as st

from conftest import MEMSEARCH, SAMPLE, write
from indexer.base.errors import UsageError
from indexer.base.settings import resolve_settings
from indexer.maintain import check_index
from indexer.pipeline import index
from indexer.store import sqlite as store
from indexer.store.sqlite_read import fts5_query
from search_engine.filters import parse_date
from search_engine.query import content_terms, terms
from search_engine.search import search

HOOK = str(Path(sys.executable).with_name("memsearch-hook"))
FUZZ = hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# -- fuzzed hook input ---------------------------------------------------------------------------------------------

def _run_hook(event: str, data: bytes, capsys) -> tuple[int, str, str]:
    from hooks.entry import main

    read, write_end = os.pipe()
    os.write(write_end, data[:60000])
    os.close(write_end)
    stdin = open(read, "rb")
    real = sys.stdin
    sys.stdin = stdin
    try:
        code = main([event])
    finally:
        sys.stdin = real
        stdin.close()
    out = capsys.readouterr()
    return code, out.out, out.err


def _check_hook_output(code: int, out: str, err: str) -> None:
    assert code == 0
    assert "Traceback" not in out and "Traceback" not in err and err == ""
    if out:
        data = json.loads(out)
        assert set(data) == {"hookSpecificOutput"}
        assert isinstance(data["hookSpecificOutput"]["additionalContext"], str)


@pytest.fixture(scope="module")
def hook_template(tmp_path_factory):
    """The sample memory indexed once (BM25 only); each fuzzed example gets its own copy of it."""
    root = tmp_path_factory.mktemp("hook-template") / "memory"
    shutil.copytree(SAMPLE, root)
    index(resolve_settings(root, model="none"), embedder=None)
    return root


@pytest.fixture
def hook_env(hook_template, tmp_path, monkeypatch):
    """A factory of fresh memory roots, one per Hypothesis example: a function-scoped fixture is shared by all the
    examples of a test, so one example's events and logs would otherwise show up in the next one's report."""
    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    monkeypatch.setenv("MEMSEARCH_NO_SERVER", "1")
    spawned = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: spawned.append(a))  # session-end detaches one
    count = iter(range(10**6))

    @contextlib.contextmanager
    def fresh():
        root = tmp_path / f"example-{next(count)}"
        shutil.copytree(hook_template, root)
        os.environ["MEMSEARCH_HOME"] = str(root)  # restored by monkeypatch at the end of the test
        try:
            yield root
        finally:
            shutil.rmtree(root, ignore_errors=True)

    return fresh


def _no_hook_errors(home: Path) -> None:
    log = home / ".memsearch" / "logs" / "hooks.log"
    errors = [line for line in log.read_text().splitlines() if ": error " in line] if log.exists() else []
    assert errors == []
    for path in (home / "events").glob("*.jsonl"):  # every line a hook wrote is whole, valid JSON
        for line in path.read_bytes().splitlines():
            assert isinstance(orjson.loads(line), dict)


EVENTS = ["prompt", "tool", "stop", "session-start", "session-end", "unknown-event"]
_scalar = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=200)
_json = st.recursive(_scalar, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                     max_leaves=12)
_payload = st.fixed_dictionaries({}, optional={
    "session_id": _json, "cwd": _json, "prompt": st.text(max_size=400) | _json, "tool_name": st.text(max_size=20) | _json,
    "tool_input": _json, "tool_response": _json, "error": _json, "tool_use_id": _json, "agent_type": _json,
    "last_assistant_message": st.text(max_size=300) | _json, "hook_event_name": _json,
    "transcript_path": st.sampled_from(["/nonexistent/t.jsonl", "", "relative.jsonl"]) | st.integers(),
})


@FUZZ
@given(event=st.sampled_from(EVENTS), data=st.binary(max_size=3000))
def test_fuzzed_hook_stdin_bytes(hook_env, capsys, event, data):
    with hook_env():
        _check_hook_output(*_run_hook(event, data, capsys))


@FUZZ
@given(event=st.sampled_from(EVENTS), payload=_payload)
# Found on main: orjson refused an integer above 64 bits in a tool response and the event was lost.
@example(event="tool", payload={"tool_name": "Bash", "tool_input": {"command": "x"},
                                "tool_response": {"n": 2**64, "extra": [2**80]}})
def test_fuzzed_hook_payloads(hook_env, capsys, event, payload):
    with hook_env() as root:
        _check_hook_output(*_run_hook(event, json.dumps(payload).encode(), capsys))
        _no_hook_errors(root)


# -- fuzzed queries ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def query_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz") / "memory"
    shutil.copytree(SAMPLE, root)
    settings = resolve_settings(root, model="none")
    index(settings, embedder=None)
    return settings


@hsettings(max_examples=300, deadline=None)
@given(text=st.text(max_size=120))
def test_any_text_makes_a_valid_fts5_expression(query_index, text):
    conn = store.connect(query_index.db_path)
    try:
        for words in (terms(text), content_terms(terms(text))):
            for op in ("AND", "OR"):
                expression = fts5_query(words, op)
                if expression:
                    conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,)).fetchone()
    finally:
        conn.close()


@hsettings(max_examples=200, deadline=None)
@given(text=st.text(max_size=60) | st.sampled_from(['"', "a:", "NEAR(", "*", "^", "a OR", "(a", "x AND AND y", "+"]))
def test_raw_queries_fail_only_as_usage_errors(query_index, text):
    try:
        result = search(query_index, text, mode="bm25", raw=True)
        assert isinstance(result.hits, tuple)
    except UsageError as exc:
        assert "\n" not in str(exc)


@hsettings(max_examples=200, deadline=None)
@given(text=st.text(max_size=30))
def test_any_date_text_parses_or_is_a_usage_error(text):
    try:
        parse_date(text)
    except UsageError:
        pass


# -- malformed sources -------------------------------------------------------------------------------------------

def _line(eid: str, content: str) -> bytes:
    return orjson.dumps({"id": eid, "ts": "2026-11-20T10:00:00", "type": "prompt", "content": content}) + b"\n"


def _sparse(path: Path, size: int, head: bytes = b"", tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
        f.seek(0, os.SEEK_END)
        f.write(tail)
    return path


def _index_json(env=None) -> dict:
    proc = subprocess.run([MEMSEARCH, "index", "--json"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MEMSEARCH_MODEL": "none", **(env or {})})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return json.loads(proc.stdout)


def _texts(home: Path) -> str:
    conn = store.connect(home / ".memsearch" / "index.db")
    try:
        return "\n".join(row[0] for row in conn.execute("SELECT text FROM chunks"))
    finally:
        conn.close()


def test_malformed_sources_are_reported_skipped_and_lose_nothing(home, tmp_path):
    # First the good versions, indexed.
    write(home / "decisions" / "record.json", json.dumps({"title": "Queue", "decision": "use a durable kumquat queue"}))
    write(home / "areas" / "projects" / "p" / "facts.json", json.dumps({"facts": [{"id": 1, "fact": "the quince rule"}]}))
    write(home / "notes" / "latin.md", "# Latin\n\nthe loquat paragraph\n")
    write(home / "notes" / "plain.md", "# Plain\n\nthe persimmon note stays readable\n")
    first = _index_json()
    assert first["skipped"] == []
    assert all(word in _texts(home) for word in ("kumquat", "quince", "loquat", "persimmon"))

    # Then every kind of bad input at once.
    write(home / "decisions" / "record.json", '{"title": "Queue", "decision": ')  # invalid JSON
    write(home / "areas" / "projects" / "p" / "facts.json", b"\xff\xfe not utf-8")  # invalid UTF-8
    write(home / "notes" / "latin.md", "caf\xe9 ol\xe9".encode("latin-1"))  # invalid UTF-8
    write(home / "notes" / "binary.md", b"\x7fELF\x02\x01\x00\x00" + os.urandom(4000))  # binary
    write(home / "decisions" / "deep.json", "[" * 100_000 + "]" * 100_000)  # nested past the parser's limit
    write(home / "decisions" / "nested.json", json.dumps({"title": "deep", "x": json.loads("[" * 80 + "]" * 80)}))
    _sparse(home / "notes" / "huge.md", 100 * 1024 * 1024)  # a 100 MB file
    ten_mb = orjson.dumps({"id": "big", "type": "prompt", "content": "z" * (10 * 1024 * 1024)}) + b"\n"
    write(home / "events" / "2026-11-20.jsonl",
          _line("a", "apricot before the bad lines") + b"{not json\n" + b'{"id": "u", "content": "\xff"}\n'
          + ten_mb + _line("two", "y" * (2 * 1024 * 1024))
          + _line("deep", "x")[:-1].replace(b'"x"', b"[" * 100 + b"]" * 100) + b"\n"
          + b"[1, 2]\n" + _line("b", "blueberry after the bad lines"))
    _sparse(home / "events" / "2026-11-21.jsonl", 100 * 1024 * 1024,  # 100 MB of one unterminated NUL line
            head=_line("c", "cherry at the start"), tail=b"\n" + _line("d", "damson at the end"))
    (home / "notes" / "loop-a.md").symlink_to(home / "notes" / "loop-b.md")
    (home / "notes" / "loop-b.md").symlink_to(home / "notes" / "loop-a.md")
    (home / "notes" / "dangling.md").symlink_to(home / "notes" / "missing.md")
    (home / "notes" / "cycle").symlink_to(home)  # a directory loop

    report = _index_json()
    reasons = {}
    for s in report["skipped"]:
        reasons.setdefault(s["path"], []).append(s["reason"])
    expected = {
        "decisions/record.json": "invalid JSON",
        "areas/projects/p/facts.json": "not valid UTF-8",
        "notes/latin.md": "not valid UTF-8",
        "notes/binary.md": "binary",
        "decisions/deep.json": "invalid JSON: depth limit exceeded",
        "decisions/nested.json": "nested deeper than 64 levels",
        "notes/huge.md": "too large",
        "notes/loop-a.md": "cannot read",
        "notes/loop-b.md": "cannot read",
        "notes/dangling.md": "cannot read",
    }
    for path, reason in expected.items():
        assert any(reason in r for r in reasons.get(path, [])), (path, reasons.get(path))
    event_reasons = " | ".join(reasons["events/2026-11-20.jsonl"])
    for reason in ("invalid JSON", "not valid UTF-8", "longer than 8 MiB", "longer than 1024 KiB", "nested deeper",
                   "not a JSON object"):
        assert reason in event_reasons
    assert "longer than 8 MiB" in " ".join(reasons["events/2026-11-21.jsonl"])
    assert not any("cycle" in p for p in reasons)

    texts = _texts(home)
    for word in ("kumquat", "quince", "loquat", "persimmon",  # indexed before the files went bad: still there
                 "apricot", "blueberry", "cherry at the start", "damson at the end"):
        assert word in texts, word
    assert "zzzzzzzzzz" not in texts and "yyyyyyyyyy" not in texts
    # Text output too: one line per skipped source, no traceback.
    proc = subprocess.run([MEMSEARCH, "index", "--full"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MEMSEARCH_MODEL": "none"})
    assert proc.returncode == 0 and proc.stderr == "" and "Traceback" not in proc.stdout
    assert "skipped: notes/huge.md: too large" in proc.stdout
    assert all(word in _texts(home) for word in ("apricot", "blueberry", "damson at the end"))


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
    texts = _texts(sample_home)
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
        _line(f"e{i}", " ".join(rng.choice(words) for _ in range(30))) for i in range(files * 2)))


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


def test_tool_response_with_huge_integers_is_recorded(home, monkeypatch, capsys):
    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    monkeypatch.setenv("MEMSEARCH_NO_SERVER", "1")
    payload = {"session_id": "s1", "tool_name": "Bash", "tool_input": {"command": "count"},
               "tool_response": {"n": 2**64 + 5, "deep": {"x": [-(2**90)]}}}
    _check_hook_output(*_run_hook("tool", json.dumps(payload).encode(), capsys))
    _no_hook_errors(home)
    lines = [orjson.loads(x) for p in (home / "events").glob("*.jsonl") for x in p.read_bytes().splitlines()]
    assert [e["type"] for e in lines] == ["tool"]
    assert str(2**64 + 5) in lines[0]["content"] and str(-(2**90)) in lines[0]["content"]
