"""Faults a user meets on a real machine, each reproduced here against the real store: a symlinked events folder,
open file modes, a corrupt index, a full or read-only disk, a deleted WAL, hostile hook input. Each test names the
fault it pins.

Cross-cutting on purpose (tests/e2e): each fault is injected under the whole product (hooks, CLI, the warm server
and the index together) and the test checks what the user sees from every entry point; no one module owns that.
Faults that one module handles alone live with it (a torn event-log line: tests/indexer/test_eventlog.py; bad
settings: tests/indexer/base/test_settings.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MEMSEARCH, REPO, write
from indexer.base.settings import resolve_settings
from indexer.eventlog import event_path
from indexer.pipeline import index, ingest
from indexer.store import sqlite as store

HOOK = str(Path(sys.executable).with_name("memsearch-hook"))


# -- a torn last line in the event log --------------------------------------------------------------------------


# -- strip_injected on a reply that mentions a tag ----------------------------------------------------------------


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
def test_events_lost_to_a_full_disk_are_said_by_the_next_prompt_hook_status_and_doctor(
        home, monkeypatch, capsys, partial):
    """The tool hook runs in the background: what it prints reaches Claude on the next turn, not the user. So it
    prints nothing, and the next prompt's hook (which the user sees) says what was lost, once."""
    import errno

    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    monkeypatch.setenv("MEMSEARCH_NO_SERVER", "1")
    assert _hook_in_process("tool", _tool("echo before"), capsys) == (None, "")
    with monkeypatch.context() as disk_full:
        _failing_writes(disk_full, home / "events", errno.ENOSPC, partial)
        for i in range(3):
            assert _hook_in_process("tool", _tool(f"echo lost {i}"), capsys) == (None, "")
    log = event_path(home).read_bytes()
    assert log.endswith(b"\n") and b"lost 0" not in log  # a half-written line is taken back
    assert _hook_in_process("tool", _tool("echo after"), capsys) == (None, "")  # room again, still in the background
    prompt = {"session_id": "s1", "cwd": "/w/app", "prompt": "what did the last command print"}
    out, err = _hook_in_process("prompt", prompt, capsys)  # the user's next prompt: told here
    assert err == "" and re.match(r"memsearch: 3 events could not be recorded (at|between) 20", out["systemMessage"])
    out, _ = _hook_in_process("prompt", {**prompt, "prompt": "and the one before that?"}, capsys)
    assert out is None or "systemMessage" not in out  # said once
    assert [json.loads(line)["metadata"].get("command") for line in event_path(home).read_bytes().splitlines()
            if json.loads(line)["type"] == "tool"] == ["echo before", "echo after"]
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
    # an event an older privacy filter let through (the hooks filter what they write today)
    write(root / "events" / "2026-11-20.jsonl", json.dumps({
        "id": "e1", "ts": "2026-11-20T10:00:00", "session_id": "s0", "type": "tool",
        "content": "Bash: export STRIPE_KEY=sk_live_51HxQabcdefghijklmnopqrstuv"}) + "\n")
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
                                     ["import", "transcripts", "{transcripts}"]])
def test_writing_commands_on_a_read_only_root_say_so_in_one_line(read_only_root, tmp_path, command):
    (tmp_path / "transcripts").mkdir()
    command = [arg.format(transcripts=tmp_path / "transcripts") for arg in command]
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


def test_a_scrub_dry_run_reports_on_a_read_only_root(read_only_root):
    """A dry run writes nothing, not even its lock: it says what a scrub would change; the scrub itself cannot."""
    env = {"MEMSEARCH_HOME": str(read_only_root)}
    dry = _cli("scrub", "--dry-run", "--json", env=env)
    assert dry.returncode == 0 and dry.stderr == "", dry.stderr
    report = json.loads(dry.stdout)
    assert report["dry_run"] and report["files_changed"] == {"event logs": 1} and report["events_changed"] == 1
    assert report["problems"] == [] and report["database"] == "not touched (dry run)"
    text = _cli("scrub", "--dry-run", env=env)
    assert text.returncode == 0 and "dry run, nothing written" in text.stdout
    real = _cli("scrub", env=env)
    assert real.returncode == 1 and real.stderr.count("\n") == 1 and real.stderr.startswith("Error: cannot write")


def test_hooks_on_a_read_only_root_say_the_event_is_lost(read_only_root):
    env = {"MEMSEARCH_HOME": str(read_only_root)}
    for event, payload in (("tool", _tool("ls")), ("stop", {"session_id": "s", "last_assistant_message": "Done."})):
        result = _hook(event, payload, env=env)  # background hooks: nothing printed, for it would reach Claude
        assert result.returncode == 0 and result.stderr == b"" and result.stdout == b""
    result = _hook("prompt", {"session_id": "s", "prompt": "how does export retry"}, env=env)
    assert result.returncode == 0 and result.stderr == b""
    assert "could not be recorded" in json.loads(result.stdout)["systemMessage"]
    doctor = _cli("doctor", env=env)
    assert doctor.returncode == 1 and "FAIL capture: " in doctor.stdout and "not writable" in doctor.stdout


def test_doctor_on_a_read_only_root_says_the_index_reads_but_cannot_be_written(read_only_root):
    """Not "cannot open the index": searches read it."""
    doctor = _cli("doctor", env={"MEMSEARCH_HOME": str(read_only_root)})
    [line] = [x for x in doctor.stdout.splitlines() if x[5:].startswith("index: ")]
    assert "cannot open" not in line and "2 chunks, quick_check ok, readable (searches work); not writable" in line
    assert "FAIL capture: " in doctor.stdout  # the hooks cannot record: that failure is right


def test_an_oversized_payload_is_logged_counted_and_said(home):
    big = json.dumps({**_tool("cat big.log"), "tool_response": {"stdout": "x" * (9 * 2**20)}}).encode()
    result = _hook("tool", big)
    assert result.returncode == 0 and result.stderr == b"" and result.stdout == b""  # a background hook
    assert "tool: event not recorded: payload over 8 MiB" in (home / ".memsearch" / "logs" / "hooks.log").read_text()
    assert json.loads(_cli("status", "--json").stdout)["lost_events"]["count"] == 1
    told = _hook("prompt", {"session_id": "s", "prompt": "what did big.log hold?"})
    assert re.match(r"memsearch: 1 event could not be recorded at 20.*payload over 8 MiB",
                    json.loads(told.stdout)["systemMessage"])
    result = _hook("prompt", json.dumps({"session_id": "s", "prompt": "x" * (9 * 2**20)}).encode())
    assert "over 8 MiB" in json.loads(result.stdout)["systemMessage"]  # the prompt's own hook tells at once


def test_a_loss_the_prompt_hook_told_at_once_is_not_told_again_by_the_next_prompt(home, monkeypatch, capsys):
    """An oversized prompt, and a prompt on a full disk, are said on their own turn; the next prompt once said
    them a second time as "1 event could not be recorded"."""
    import errno

    result = _hook("prompt", json.dumps({"session_id": "s", "prompt": "x" * (9 * 2**20)}).encode())
    assert "over 8 MiB" in json.loads(result.stdout)["systemMessage"]
    follow_up = _hook("prompt", {"session_id": "s", "prompt": "a normal follow-up about the heron queue"})
    assert follow_up.returncode == 0 and b"systemMessage" not in follow_up.stdout
    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    monkeypatch.setenv("MEMSEARCH_NO_SERVER", "1")
    with monkeypatch.context() as disk_full:
        _failing_writes(disk_full, home / "events", errno.ENOSPC)
        out, _ = _hook_in_process("prompt", {"session_id": "s", "prompt": "the heron queue on a full disk"}, capsys)
    assert "could not be recorded" in out["systemMessage"]
    out, _ = _hook_in_process("prompt", {"session_id": "s", "prompt": "the heron queue with room again"}, capsys)
    assert out is None or "systemMessage" not in out
    assert json.loads(_cli("status", "--json").stdout)["lost_events"]["count"] == 2  # still counted


def test_the_prompt_hook_answers_in_utf8_whatever_the_stdout_encoding(home):
    write(home / "notes" / "cafe.md", "# Café rota\n\nThe café export runs at 06:00 — 東京 time, not UTC.\n")
    index(resolve_settings(home, model="none"), embedder=None)
    result = _hook("prompt", {"session_id": "s", "prompt": "when does the café export run"},
                   env={"PYTHONIOENCODING": "ascii", "LC_ALL": "C"})
    assert result.returncode == 0 and result.stderr == b""
    context = json.loads(result.stdout.decode("utf-8"))["hookSpecificOutput"]["additionalContext"]
    assert "Café" in context and "東京" in context


# -- a real full disk: every command says so in one line -----------------------------------------------------------

def _fill(folder: Path) -> None:
    """Write a file in ``folder`` until its file system has no block left."""
    with open(folder / "filler", "wb", buffering=0) as f:
        for size in (1 << 16, 4096, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass


@pytest.fixture
def full_disk(tmp_path, monkeypatch, request):
    """A memory root on a small tmpfs (root in a container may mount one; skipped elsewhere), indexed, then given a
    new note and a new event to index, then filled to the last block. The index stays open in this process
    meanwhile, so its ``-shm`` stays: commands open it and fail where the walkthrough saw them fail, writing (at
    ``COMMIT``). With the parameter ``"closed"``, it is not: opening it fails (SQLite cannot make its ``-shm``)."""
    disk = tmp_path / "small"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)],
                                           capture_output=True).returncode != 0:
        pytest.skip("a full disk needs a tmpfs of its own (root with the right to mount)")
    root = disk / "mem"
    monkeypatch.setenv("MEMSEARCH_HOME", str(root))
    for day in (1, 2, 3):
        write(root / "daily" / f"2026-11-0{day}.md", f"# Day {day}\n\nThe flaky payment worker retry, note {day}.\n")
    assert _hook("prompt", {"session_id": "full1", "cwd": "/w/shop", "prompt": "why is the payment worker flaky"},
                 env={"MEMSEARCH_HOME": str(root)}).returncode == 0
    words = " ".join(f"flaky{i} retry{i} worker{i}" for i in range(6000))
    write(root / "daily" / "2026-11-04.md", f"# Day 4\n\n{words}\n")
    assert _cli("index", env={"MEMSEARCH_HOME": str(root)}).returncode == 0
    held = None if getattr(request, "param", None) == "closed" else store.connect(root / ".memsearch" / "index.db")
    if held is not None:  # an empty WAL: whatever is written next (a VACUUM's copy too) needs new blocks
        held.pragma("wal_checkpoint(TRUNCATE)")
    write(root / "daily" / "2026-11-05.md", "# Day 5\n\n" + words.replace("flaky", "heron") + "\n")
    with open(event_path(root), "a") as log:
        log.write(json.dumps({"id": "big1", "ts": "2026-11-04T10:00:00", "session_id": "full1", "type": "prompt",
                              "content": f"flaky payment worker {words}"}) + "\n")
    _fill(disk)
    yield root
    if held is not None:
        held.close()
    subprocess.run(["umount", str(disk)], check=True)


@pytest.mark.parametrize("command", [["index"], ["forget", "--match", "flaky", "--dry-run"],
                                     ["forget", "--match", "flaky", "--yes"], ["index", "--full"], ["maintain"]])
def test_a_full_disk_is_one_line_from_every_writing_command(full_disk, command):
    result = _cli(*command, env={"MEMSEARCH_HOME": str(full_disk)})
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")
    assert "the disk is full; free some space and try again" in result.stderr


@pytest.mark.parametrize("full_disk", ["closed"], indirect=True)
@pytest.mark.parametrize("command", [["index"], ["status"]])
def test_an_index_that_cannot_open_on_a_full_disk_says_the_disk_is_full(full_disk, command):
    """Not "disk I/O error; stop `memsearch serve`": that is what SQLite says when it cannot make the -shm."""
    result = _cli(*command, env={"MEMSEARCH_HOME": str(full_disk)})
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "the disk is full; free some space and try again" in result.stderr and "serve" not in result.stderr


def test_a_scrub_whose_vacuum_finds_the_disk_full_fails(full_disk):
    """Its VACUUM, which makes the old bytes leave the file, needs room for a copy: a scrub that could not run it
    did not do its job, and says so by its exit code, not only in a "problem" line."""
    (full_disk / "daily" / "2026-11-05.md").unlink()  # nothing to re-index: the scrub reaches its VACUUM
    result = _cli("scrub", env={"MEMSEARCH_HOME": str(full_disk)})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "problem: vacuum failed: the disk is full" in result.stdout
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: the scrub did not finish: vacuum failed")


def test_a_summary_request_lost_to_a_full_disk_is_counted(full_disk):
    env = {"MEMSEARCH_HOME": str(full_disk)}
    ended = _hook("session-end", {"session_id": "full1", "cwd": "/w/shop", "reason": "other"}, env=env)
    assert ended.returncode == 0 and ended.stdout == b"" and ended.stderr == b""
    doctor = _cli("doctor", env=env)
    assert re.search(r"FAIL capture: 1 event could not be recorded at 20.*No space left on device.*summary",
                     doctor.stdout), doctor.stdout


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
        elif how == "one page":  # the walkthrough's: opening and the schema read fine, a table's page does not
            f.seek(4096 * 3)
            f.write(b"\xde\xad" * 2048)
        elif how == "truncated":
            f.truncate(os.path.getsize(db) // 2)
        else:
            f.write(b"this is not an SQLite header at all")


def _index_notes_to_damage(home):
    """An index of 41 notes, the one about the ledger export among them: large enough for damage in its middle."""
    write(home / "notes" / "exports.md", "# Exports\n\nThe nightly ledger export retries three times.\n")
    for i in range(40):
        write(home / "notes" / f"n{i}.md", f"# Note {i}\n\n" + f"filler words about topic {i} " * 60 + "\n")
    assert _cli("index").returncode == 0


@pytest.mark.parametrize("how", ["page", "truncated", "header"])
def test_a_damaged_index_is_said_in_one_line_and_index_rebuilds_it(home, how):
    _index_notes_to_damage(home)
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


@pytest.mark.parametrize("how", ["one page", "page", "truncated", "header"])
def test_maintain_rebuilds_a_damaged_index_and_says_so(home, how):
    """The weekly cron line runs maintain: its retention step read the damaged index (for the chunk counts of the
    logs it expires) before the rescan would rebuild it, and stopped on a traceback."""
    write(home / "events" / "2026-11-20.jsonl", json.dumps({"id": "e1", "ts": "2026-11-20T10:00:00", "type": "prompt",
                                                            "content": "how does the ledger export retry"}) + "\n")
    _index_notes_to_damage(home)
    _damage(home / ".memsearch" / "index.db", how)
    result = _cli("maintain", "--json")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "was damaged" in json.loads(result.stdout)["index"]["model_note"]
    found = _cli("search", "ledger export", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)["hits"][0]["path"] == "notes/exports.md"
    assert "damaged" not in _cli("maintain").stdout  # said once


@pytest.mark.parametrize("how", ["page", "header"])
def test_index_full_replaces_a_damaged_index(home, how):
    _index_notes_to_damage(home)
    _damage(home / ".memsearch" / "index.db", how)
    result = _cli("index", "--full")
    assert result.returncode == 0, result.stderr
    found = _cli("search", "ledger export", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)["hits"][0]["path"] == "notes/exports.md"
    assert _cli("doctor").stdout.count("FAIL index") == 0
