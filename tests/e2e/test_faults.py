"""Faults a user meets on a real machine, each reproduced here against the real store: a torn event log, a
symlinked events folder, bad settings, open file modes, a corrupt index, a full or read-only disk, a deleted WAL,
hostile hook input. Each test names the fault it pins."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from conftest import MEMSEARCH, REPO, write
from indexer.base.settings import resolve_settings
from indexer.eventlog import Event, append, event_path
from indexer.pipeline import index, ingest
from indexer.store import sqlite as store
from search_engine.search import search

HOOK = str(Path(sys.executable).with_name("memsearch-hook"))


def _events(settings, query: str) -> list[str]:
    return [h.event_id for h in search(settings, query, mode="bm25", k=20, embedder=None).hits]


# -- a torn last line in the event log --------------------------------------------------------------------------

def test_an_append_after_a_torn_line_starts_on_a_fresh_line(home):
    settings = resolve_settings(home, model="none")
    path = append(home, Event("prompt", "the first whole event about kestrels", id="e1"))
    with open(path, "ab") as f:  # a crash (or a full disk) in the middle of the next write
        f.write(b'{"id":"torn","ts":"2026-11-20T10:00:00","type":"prompt","content":"half of an ev')
    append(home, Event("prompt", "the event after the tear about ospreys", id="e2"))
    lines = path.read_bytes().splitlines()
    assert json.loads(lines[-1])["id"] == "e2"
    index(settings, embedder=None)
    assert _events(settings, "ospreys") == ["e2"] and _events(settings, "kestrels") == ["e1"]


def test_the_indexer_recovers_an_event_glued_to_a_torn_line(home):
    """A log torn before appends started on a fresh line: the good event after the tear is still indexed."""
    settings = resolve_settings(home, model="none")
    good = json.dumps({"id": "e2", "ts": "2026-11-20T10:01:00", "type": "prompt",
                       "content": 'a reply quoting {"id":"x"} about ospreys'}, separators=(",", ":"))
    write(event_path(home, "2026-11-20"), b'{"id":"e1","ts":"2026-11-20T10:00:00","type":"prompt","content":"half'
          + good.encode() + b"\n")
    report = index(settings, embedder=None)
    assert _events(settings, "ospreys") == ["e2"]
    assert [s.reason for s in report.skipped if "invalid JSON" in s.reason]  # the torn part is reported


def test_a_torn_line_being_written_is_left_for_the_next_run(home):
    settings = resolve_settings(home, model="none")
    path = append(home, Event("prompt", "the first whole event about kestrels", id="e1"))
    with open(path, "ab") as f:
        f.write(b'{"id":"e2","ts":"2026-11-20T10:00:00","type":"prompt","content":"ospreys')
    index(settings, embedder=None)
    assert _events(settings, "kestrels") == ["e1"] and _events(settings, "ospreys") == []
    with open(path, "ab") as f:  # the writer finishes its line
        f.write(b'"}\n')
    index(settings, embedder=None)
    assert _events(settings, "ospreys") == ["e2"]


# -- strip_injected on a reply that mentions a tag ----------------------------------------------------------------

@pytest.mark.parametrize("tag", ["system-reminder", "memory-context"])
def test_a_reply_that_mentions_an_injected_tag_is_kept_whole(tag):
    from indexer.transcripts import strip_injected

    reply = f"Hooks wrap output in a <{tag}> block.\nThe rest of the reply explains the retry policy."
    assert strip_injected(reply) == reply
    inline = f"Use `<{tag}>` … `</{tag}>` around it; then the retry policy applies."
    assert strip_injected(inline) == inline
    injected = f"<{tag}>\nretrieved memory\n</{tag}>\nNow fix reader.py"
    assert strip_injected(injected) == "Now fix reader.py"


# -- the hook's own ingest and a symlinked events folder or log ------------------------------------------------------

def _hook(event: str, payload: dict | bytes, capsys=None, env: dict | None = None) -> subprocess.CompletedProcess:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run([HOOK, event], input=data, capture_output=True, timeout=60,
                          env={**os.environ, "MEMSEARCH_NO_SERVER": "1", "MEMSEARCH_MODEL": "none", **(env or {})})


def _indexed_text(settings) -> str:
    if not settings.db_path.exists():
        return ""
    conn = store.connect(settings.db_path)
    try:
        return "\n".join(r[0] for r in conn.execute("SELECT text FROM chunks"))
    finally:
        conn.close()


@pytest.mark.parametrize("linked", ["folder", "file"])
def test_the_hooks_ingest_does_not_follow_an_events_symlink_out_of_the_root(home, tmp_path, linked):
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside / "planted.jsonl", json.dumps({"id": "p1", "ts": "2026-11-20T10:00:00", "type": "prompt",
                                                 "content": "planted swordfish secret"}) + "\n")
    today = event_path(home).name
    if linked == "folder":
        (home / "events").symlink_to(outside, target_is_directory=True)
        os.link(outside / "planted.jsonl", outside / today)  # today's log is the planted one
    else:
        (home / "events").mkdir()
        (home / "events" / today).symlink_to(outside / "planted.jsonl")
    settings = resolve_settings(home, model="none")
    assert ingest(settings, [event_path(home)]) is True
    result = _hook("prompt", {"prompt": "where did the swordfish config go", "session_id": "s1", "cwd": str(home)})
    assert result.returncode == 0 and result.stderr == b""
    assert "swordfish" not in _indexed_text(settings)
    index(settings, embedder=None)  # and `memsearch index` agrees
    assert "swordfish" not in _indexed_text(settings)


# -- settings: every value checked, its source named; a bad project value never stops capture -------------------------

def _cli(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([MEMSEARCH, *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "MEMSEARCH_MODEL": "none", "MEMSEARCH_NO_SERVER": "1", **(env or {})})


BAD_VALUES = [("fusion", '"bogus"'), ("rrf_k", "1e400"), ("rrf_k", "-1"), ("dedup_threshold", "-1"),
              ("bm25_share", "1.5"), ("candidates", "0"), ("bm25_weight", "nan"), ("vector_weight", '"heavy"')]


@pytest.mark.parametrize("key,value", BAD_VALUES)
def test_a_bad_project_value_is_ignored_listed_and_capture_goes_on(home, tmp_path, key, value):
    project = tmp_path / "cloned-repo"
    write(project / ".memsearch.toml", f"{key} = {value}\ncandidates = 70\n" if key != "candidates"
          else f"{key} = {value}\n")
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    hooked = _hook("tool", {"session_id": "s", "cwd": str(project), "tool_name": "Bash",
                            "tool_input": {"command": "echo quokka"}, "tool_response": {"stdout": "quokka"}}, env=env)
    assert hooked.returncode == 0 and hooked.stdout == b"" and hooked.stderr == b""
    assert "quokka" in event_path(home).read_text()
    status = _cli("status", "--json", env=env, cwd=project)
    assert status.returncode == 0, status.stderr
    described = json.loads(status.stdout)["settings"]
    assert f"invalid, ignored: {key} = " in described["project_config"]["from"]
    assert described[key]["from"] == "default"
    if key != "candidates":
        assert described["candidates"] == {"value": 70, "from": "project"}  # the good values still apply
    found = _cli("search", "quokka", "--json", env=env, cwd=project)
    assert found.returncode == 0 and found.stderr == ""
    assert json.loads(found.stdout)["hits"]


@pytest.mark.parametrize("key,value", BAD_VALUES)
def test_a_bad_value_in_the_environment_or_the_users_config_is_one_line_naming_it(home, key, value):
    env_value = value.strip('"')
    result = _cli("search", "anything", env={f"MEMSEARCH_{key.upper()}": env_value})
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"Error: {key} = ") and f"from MEMSEARCH_{key.upper()}" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    write(home / "memsearch.toml", f"{key} = {value}\n")
    result = _cli("status")
    assert result.returncode == 1 and result.stdout == ""
    assert f"from {home / 'memsearch.toml'}" in result.stderr and result.stderr.count("\n") == 1


def test_a_bad_flag_is_a_usage_error_and_settings_are_checked_when_built(home):
    from indexer.base.errors import ConfigError, UsageError

    with pytest.raises(UsageError, match=r"rrf_k = '-1' from flag is not valid: expected a whole number from 1"):
        resolve_settings(home, rrf_k="-1")
    good = resolve_settings(home)
    for name, bad in (("rrf_k", 0), ("bm25_share", 1.5), ("fusion", "bogus"), ("dedup_threshold", -1.0),
                      ("chunk_overlap", 5000)):
        with pytest.raises(ConfigError, match=name):
            good.replace(**{name: bad})


def test_hooks_log_a_bad_setting_and_still_capture(home):
    write(home / "memsearch.toml", "fusion = 'bogus'\nunknown_knob = 1\n")
    hooked = _hook("prompt", {"prompt": "how do we rotate the quokka credentials", "session_id": "s1",
                              "cwd": str(home)}, env={"MEMSEARCH_RRF_K": "1e400", "MEMSEARCH_MAX_ITEMS": "many"})
    assert hooked.returncode == 0 and hooked.stderr == b""
    assert "quokka" in event_path(home).read_text()
    log = (home / ".memsearch" / "logs" / "hooks.log").read_text()
    for needle in ("fusion = 'bogus' from", "rrf_k = '1e400' from MEMSEARCH_RRF_K", "max_items = 'many'",
                   "unknown key(s)"):
        assert needle in log
    assert "quokka" not in log  # never the content


def test_hook_knobs_resolve_with_the_other_settings_and_show_in_status(home):
    result = _cli("status", "--json", env={"MEMSEARCH_MAX_ITEMS": "3", "MEMSEARCH_TOKEN_BUDGET": "800",
                                           "MEMSEARCH_THREADS": "2"})
    described = json.loads(result.stdout)["settings"]
    assert described["max_items"] == {"value": 3, "from": "env"}
    assert described["token_budget"] == {"value": 800, "from": "env"}
    assert described["threads"] == {"value": 2, "from": "env"}
    result = _cli("status", env={"MEMSEARCH_MAX_ITEMS": "50"})
    assert result.returncode == 1 and "max_items = '50' from MEMSEARCH_MAX_ITEMS" in result.stderr


_toml_value = (st.integers(min_value=-(10**30), max_value=10**30).map(str) | st.floats().map(
    lambda f: "nan" if f != f else ("inf" if f == float("inf") else "-inf" if f == float("-inf") else repr(f)))
    | st.text(max_size=12).map(lambda t: json.dumps(t, ensure_ascii=False)) | st.booleans().map(lambda b: str(b).lower())
    | st.lists(st.integers(-5, 5), max_size=3).map(str))


@hsettings(max_examples=150, deadline=None)
@given(key=st.sampled_from(sorted(__import__("indexer.base.settings").base.settings._SPEC)), value=_toml_value,
       where=st.sampled_from(["project", "config", "env"]))
def test_any_value_from_any_source_is_a_setting_or_a_named_problem(key, value, where):
    """Fresh memory root and project per example: a value is accepted, or named with its source; hooks always
    get settings."""
    import tempfile

    from indexer.base.errors import MemsearchError

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root, project = Path(tmp) / "memory", Path(tmp) / "project"
        root.mkdir()
        project.mkdir()
        mp.setenv("CLAUDE_PROJECT_DIR", str(project))
        mp.delenv("MEMSEARCH_NO_SERVER", raising=False)  # the suite's guard against detached servers, not a value here
        default = getattr(resolve_settings(root), key)
        if where == "env":
            mp.setenv(f"MEMSEARCH_{key.upper()}", value.strip('"'))
        else:
            write((project / ".memsearch.toml") if where == "project" else (root / "memsearch.toml"),
                  f"{key} = {value}\n")
        lenient = resolve_settings(root, strict=False)
        try:
            strict = resolve_settings(root)
        except MemsearchError as exc:
            assert where != "project" and (str(exc).startswith(key) or "chunk_overlap" in str(exc)
                                           or str(exc).startswith(f"cannot read {root}"))
            assert "\n" not in str(exc)
            assert lenient.problems and getattr(lenient, key) == default
        else:
            assert strict == lenient and not lenient.problems


# -- every file memsearch writes under the memory root is private ----------------------------------------------------

def test_every_file_memsearch_writes_under_the_root_is_0600_and_every_folder_0700(home, tmp_path):
    from indexer.maintain import maintain
    from indexer.summaries import write_session_summary
    from search_engine.serve.server import _log

    old_umask = os.umask(0o022)
    try:
        own = write(home / "notes" / "mine.md", "# My note\n\nThe user's own file about quokkas.\n")
        write(home / "events" / "2020-01-01.jsonl", json.dumps(  # expired: maintain archives it
            {"id": "old", "ts": "2020-01-01T10:00:00", "type": "prompt", "content": "an old quokka prompt"}) + "\n")
        users = {own, own.parent, home / "events" / "2020-01-01.jsonl", home / "events"}
        session = {"session_id": "s1", "cwd": str(home)}
        assert _hook("prompt", {**session, "prompt": "how are quokka exports retried"}).returncode == 0
        assert _hook("tool", {**session, "tool_name": "Bash", "tool_input": {"command": "ls"},
                              "tool_response": {"stdout": "x"}}).returncode == 0
        assert _hook("stop", {**session, "last_assistant_message": "Retried twice."}).returncode == 0
        _hook("prompt", {**session, "prompt": "log this"}, env={"MEMSEARCH_RRF_K": "bad"})  # writes hooks.log
        settings = resolve_settings(home, model="none")
        write_session_summary(settings, "s1")
        transcript = write(tmp_path / "projects" / "p" / "t.jsonl", json.dumps(
            {"type": "user", "uuid": "u1", "sessionId": "T", "timestamp": "2026-06-15T10:00:01Z",
             "message": {"role": "user", "content": "an imported quokka prompt"}}) + "\n")
        assert _cli("import", "transcripts", str(transcript)).returncode == 0
        assert _cli("index", "--full").returncode == 0
        maintain(settings, embedder=None)
        _log(settings, "a server line")
        script = REPO / "scripts" / "weekly-reindex.sh"
        subprocess.run(["sh", str(script)], env={**os.environ, "MEMSEARCH_MODEL": "none",
                                                 "MEMSEARCH_BIN": MEMSEARCH}, capture_output=True, timeout=300)
    finally:
        os.umask(old_umask)
    written = [p for p in home.rglob("*") if p not in users]
    assert {p.name for p in written} >= {"hooks.log", "serve.log", "weekly-reindex.log", "imports.json", "s1.md",
                                         "2020-01-01.jsonl.gz", "index.db", event_path(home).name}
    wide = {str(p.relative_to(home)): oct(p.stat().st_mode & 0o777) for p in written
            if p.stat().st_mode & 0o777 != (0o700 if p.is_dir() else 0o600)}
    assert wide == {}


# -- a full disk, a read-only root, an oversized payload: lost events are said -------------------------------------

def _hook_in_process(event: str, payload: dict | bytes, capsys) -> tuple[dict | None, str]:
    """Run a hook in this process (so a test can make the disk fail); returns its JSON output and stderr."""
    from hooks.entry import main

    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    read_end, write_end = os.pipe()
    writer = subprocess.Popen([sys.executable, "-c", "import os, sys; os.write(1, sys.stdin.buffer.read())"],
                              stdin=subprocess.PIPE, stdout=write_end)  # a pipe larger than its buffer needs a writer
    os.close(write_end)
    writer.stdin.write(data)
    writer.stdin.close()
    real, sys.stdin = sys.stdin, open(read_end, "rb")
    try:
        assert main([event]) == 0
    finally:
        sys.stdin.close()
        sys.stdin = real
        writer.wait()
    out = capsys.readouterr()
    return (json.loads(out.out) if out.out else None), out.err


def _failing_writes(monkeypatch, folder: Path, code: int, partial: bool = False) -> None:
    """Make writes to files in ``folder`` fail as a full disk (or a read-only file system) does; with ``partial``,
    the first write of each event gets half of its bytes out first."""
    real_write = os.write

    def write(fd, data):
        if os.path.dirname(os.readlink(f"/proc/self/fd/{fd}")) == str(folder):
            if partial and len(data) > 1:
                real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)


def _tool(command: str) -> dict:
    return {"session_id": "s1", "cwd": "/w/app", "tool_name": "Bash", "tool_input": {"command": command},
            "tool_response": {"stdout": "ok"}}


@pytest.mark.parametrize("partial", [False, True])
def test_events_lost_to_a_full_disk_are_said_by_the_hook_the_next_hook_status_and_doctor(
        home, monkeypatch, capsys, partial):
    import errno

    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    monkeypatch.setenv("MEMSEARCH_NO_SERVER", "1")
    assert _hook_in_process("tool", _tool("echo before"), capsys) == (None, "")
    with monkeypatch.context() as disk_full:
        _failing_writes(disk_full, home / "events", errno.ENOSPC, partial)
        for i in range(3):
            out, err = _hook_in_process("tool", _tool(f"echo lost {i}"), capsys)
            assert err == "" and "could not be recorded (No space left on device" in out["systemMessage"]
    log = event_path(home).read_bytes()
    assert log.endswith(b"\n") and b"lost 0" not in log  # a half-written line is taken back
    out, _ = _hook_in_process("tool", _tool("echo after"), capsys)  # room again: the next hook says what was lost
    assert re.match(r"memsearch: 3 events could not be recorded (at|between) 20", out["systemMessage"])
    assert _hook_in_process("tool", _tool("echo later"), capsys) == (None, "")  # said once
    assert [json.loads(line)["metadata"]["command"] for line in event_path(home).read_bytes().splitlines()] == [
        "echo before", "echo after", "echo later"]
    status = _cli("status", "--json")
    lost = json.loads(status.stdout)["lost_events"]
    assert lost["count"] == 3 and lost["reason"] == "No space left on device" and lost["first"] <= lost["last"]
    assert "lost events: 3 events could not be recorded" in _cli("status").stdout
    doctor = _cli("doctor").stdout
    assert re.search(r"FAIL capture: 3 events could not be recorded (at|between) 20.*No space left", doctor)


def test_a_prompt_on_a_full_disk_still_gets_its_memories_and_the_warning(home, monkeypatch, capsys):

    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    monkeypatch.setenv("MEMSEARCH_NO_SERVER", "1")
    write(home / "notes" / "exports.md", "# Exports\n\nThe nightly ledger export retries three times with backoff.\n")
    index(resolve_settings(home), embedder=None)
    _failing_writes(monkeypatch, home / "events", 28)  # ENOSPC
    out, err = _hook_in_process("prompt", {"session_id": "s1", "prompt": "how does the nightly ledger export retry"},
                                capsys)
    assert err == "" and "could not be recorded" in out["systemMessage"]
    assert "backoff" in out["hookSpecificOutput"]["additionalContext"]


@pytest.fixture
def read_only_root(tmp_path):
    """A memory root with an index, then made read-only for this process: a read-only tmpfs mount where we may
    mount (root in a container), else file modes (not root); skipped where neither holds."""
    root = tmp_path / "ro"
    root.mkdir()
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(root)], capture_output=True).returncode == 0
    if os.geteuid() == 0 and not mounted:
        pytest.skip("root without the right to mount: a read-only root cannot be made here")
    write(root / "notes" / "exports.md", "# Exports\n\nThe nightly ledger export retries three times.\n")
    index(resolve_settings(root, model="none"), embedder=None)
    if mounted:
        subprocess.run(["mount", "-o", "remount,ro", str(root)], check=True)
    else:
        for p in [root, *root.rglob("*")]:
            p.chmod(0o555 if p.is_dir() else 0o444)
    yield root
    if mounted:
        subprocess.run(["umount", str(root)], check=True)
    else:
        for p in [root, *root.rglob("*")]:
            p.chmod(0o700 if p.is_dir() else 0o600)


@pytest.mark.parametrize("command", [["index"], ["index", "--full"], ["maintain"],
                                     ["import", "transcripts", "/nonexistent"]])
def test_writing_commands_on_a_read_only_root_say_so_in_one_line(read_only_root, command):
    result = _cli(*command, env={"MEMSEARCH_HOME": str(read_only_root)})
    assert result.returncode == 1 and result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")
    assert "not writable" in result.stderr or "Read-only file system" in result.stderr or \
        "Permission denied" in result.stderr


def test_a_read_only_root_can_still_be_searched(read_only_root):
    env = {"MEMSEARCH_HOME": str(read_only_root)}
    found = _cli("search", "ledger export", "--json", env=env)
    assert found.returncode == 0 and found.stderr == ""
    hit = json.loads(found.stdout)["hits"][0]
    assert hit["path"] == "notes/exports.md"
    shown = _cli("show", hit["id"], env=env)
    assert shown.returncode == 0 and "retries three times" in shown.stdout
    assert _cli("status", env=env).returncode == 0


def test_hooks_on_a_read_only_root_say_the_event_is_lost(read_only_root):
    env = {"MEMSEARCH_HOME": str(read_only_root)}
    for event, payload in (("tool", _tool("ls")), ("prompt", {"session_id": "s", "prompt": "how does export retry"}),
                           ("stop", {"session_id": "s", "last_assistant_message": "Done."})):
        result = _hook(event, payload, env=env)
        assert result.returncode == 0 and result.stderr == b""
        assert "could not be recorded" in json.loads(result.stdout)["systemMessage"]
    doctor = _cli("doctor", env=env)
    assert doctor.returncode == 1 and "FAIL capture: " in doctor.stdout and "not writable" in doctor.stdout


def test_an_oversized_payload_is_logged_counted_and_said(home):
    big = json.dumps({**_tool("cat big.log"), "tool_response": {"stdout": "x" * (9 * 2**20)}}).encode()
    result = _hook("tool", big)
    assert result.returncode == 0 and result.stderr == b""
    assert "over 8 MiB" in json.loads(result.stdout)["systemMessage"]
    assert "tool: event not recorded: payload over 8 MiB" in (home / ".memsearch" / "logs" / "hooks.log").read_text()
    assert json.loads(_cli("status", "--json").stdout)["lost_events"]["count"] == 1


def test_the_prompt_hook_answers_in_utf8_whatever_the_stdout_encoding(home):
    write(home / "notes" / "cafe.md", "# Café rota\n\nThe café export runs at 06:00 — 東京 time, not UTC.\n")
    index(resolve_settings(home, model="none"), embedder=None)
    result = _hook("prompt", {"session_id": "s", "prompt": "when does the café export run"},
                   env={"PYTHONIOENCODING": "ascii", "LC_ALL": "C"})
    assert result.returncode == 0 and result.stderr == b""
    context = json.loads(result.stdout.decode("utf-8"))["hookSpecificOutput"]["additionalContext"]
    assert "Café" in context and "東京" in context


# -- a -wal deleted while the warm server runs ---------------------------------------------------------------------

def test_commands_work_after_the_wal_is_deleted_under_the_warm_server(home):
    env = {**os.environ, "MEMSEARCH_MODEL": "none"}
    env.pop("MEMSEARCH_NO_SERVER", None)
    write(home / "notes" / "exports.md", "# Exports\n\nThe nightly ledger export retries three times.\n")
    subprocess.run([MEMSEARCH, "index"], check=True, capture_output=True, env=env)
    server = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "120"], env=env, stderr=subprocess.PIPE)
    try:
        sock = home / ".memsearch" / "serve.sock"
        for _ in range(100):
            if subprocess.run([MEMSEARCH, "serve", "--status"], capture_output=True, env=env).returncode == 0:
                break
            assert server.poll() is None, server.stderr.read()
        for i in range(3):  # the server indexes these: its WAL now holds frames the -shm points at
            hooked = subprocess.run([HOOK, "tool"], input=json.dumps(_tool(f"echo hippo{i}")).encode(), env=env,
                                    capture_output=True)
            assert hooked.returncode == 0
        wal = home / ".memsearch" / "index.db-wal"
        assert sock.exists() and wal.stat().st_size > 0
        wal.unlink()
        for command in (["search", "hippo1", "--json"], ["status"], ["index"], ["search", "hippo2", "--json"]):
            result = subprocess.run([MEMSEARCH, *command], capture_output=True, text=True, env=env, timeout=60)
            assert result.returncode == 0 and result.stderr == "", (command, result.stderr)
            if command[0] == "search":
                assert json.loads(result.stdout)["hits"], command  # nothing the server had indexed was lost
    finally:
        subprocess.run([MEMSEARCH, "serve", "--stop"], capture_output=True, env=env)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


# -- a damaged index -----------------------------------------------------------------------------------------------

def _damage(db: Path, how: str) -> None:
    with open(db, "r+b") as f:
        if how == "page":  # a page of garbage past the schema: opening works, reading it does not
            f.seek(0, os.SEEK_END)
            pages = f.tell() // 4096
            for page in range(3, pages):
                f.seek(page * 4096)
                f.write(os.urandom(4096))
        elif how == "truncated":
            f.truncate(os.path.getsize(db) // 2)
        else:
            f.write(b"this is not an SQLite header at all")


@pytest.mark.parametrize("how", ["page", "truncated", "header"])
def test_a_damaged_index_is_said_in_one_line_and_index_rebuilds_it(home, how):
    write(home / "notes" / "exports.md", "# Exports\n\nThe nightly ledger export retries three times.\n")
    for i in range(40):
        write(home / "notes" / f"n{i}.md", f"# Note {i}\n\n" + f"filler words about topic {i} " * 60 + "\n")
    assert _cli("index").returncode == 0
    _damage(home / ".memsearch" / "index.db", how)
    for command in (["search", "ledger export"], ["status"]):
        result = _cli(*command)
        assert result.returncode == 1 and result.stdout == "" and result.stderr.count("\n") == 1
        assert "is damaged" in result.stderr and "`memsearch index` rebuilds it" in result.stderr
    doctor = _cli("doctor")
    assert doctor.returncode == 1 and "FAIL index: " in doctor.stdout and "damaged" in doctor.stdout
    assert "capture:" in doctor.stdout and "cron:" in doctor.stdout  # the checks after it still ran
    rebuilt = _cli("index", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "rebuilt from the sources" in json.loads(rebuilt.stdout)["model_note"]
    found = _cli("search", "ledger export", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)["hits"][0]["path"] == "notes/exports.md"
    assert _cli("index").returncode == 0 and "damaged" not in _cli("index").stdout  # once


@pytest.mark.parametrize("how", ["page", "header"])
def test_index_full_replaces_a_damaged_index(home, how):
    write(home / "notes" / "exports.md", "# Exports\n\nThe nightly ledger export retries three times.\n")
    for i in range(40):
        write(home / "notes" / f"n{i}.md", f"# Note {i}\n\n" + f"filler words about topic {i} " * 60 + "\n")
    assert _cli("index").returncode == 0
    _damage(home / ".memsearch" / "index.db", how)
    result = _cli("index", "--full")
    assert result.returncode == 0, result.stderr
    found = _cli("search", "ledger export", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)["hits"][0]["path"] == "notes/exports.md"
    assert _cli("doctor").stdout.count("FAIL index") == 0


@hsettings(max_examples=40, deadline=None)
@given(steps=st.lists(st.tuples(st.booleans(), st.floats(0.05, 0.95), st.booleans()), min_size=1, max_size=8))
def test_any_mix_of_torn_lines_and_appends_loses_no_whole_event(steps):
    """Each step appends an event whole, or tears one (a crash part way through its line); indexing runs between
    some steps. Every event appended whole is indexed, whatever tore before or after it. Fresh root per example."""
    import tempfile

    from indexer.eventlog import encode

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp) / "memory"
        root.mkdir()
        mp.setenv("MEMSEARCH_HOME", str(root))
        settings = resolve_settings(root, model="none")
        whole = []
        for i, (torn, cut, index_now) in enumerate(steps):
            event = Event("prompt", f"event number {i} about quokkas", id=f"e{i}", ts="2026-11-20T10:00:00")
            if torn:
                line = encode(event)
                path = event_path(root, event.ts)
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "ab") as f:
                    f.write(line[: max(1, int(len(line) * cut))])
            else:
                append(root, event)
                whole.append(event.id)
            if index_now:
                index(settings, embedder=None)
        index(settings, embedder=None)
        conn = store.connect(settings.db_path)
        try:
            found = {r[0] for r in conn.execute("SELECT event_id FROM chunks")}
        finally:
            conn.close()
        assert set(whole) <= found


def test_the_hook_switches_are_settings_too(home):
    status = json.loads(_cli("status", "--json", env={"MEMSEARCH_NO_SERVER": "yes"}).stdout)["settings"]
    assert status["no_server"] == {"value": True, "from": "env"} and status["disable"]["value"] is False
    write(home / "memsearch.toml", "disable = true\n")
    hooked = _hook("prompt", {"session_id": "s", "prompt": "how does the quokka export retry"},
                   env={"MEMSEARCH_NO_SERVER": ""})
    assert hooked.returncode == 0 and hooked.stdout == b"" and not event_path(home).exists()
    assert _hook("prompt", {"session_id": "s", "prompt": "how does the quokka export retry"},
                 env={"MEMSEARCH_DISABLE": "0"}).returncode == 0
    assert "quokka" in event_path(home).read_text()  # the environment beats the config file
