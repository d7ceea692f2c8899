"""Running the Claude Code hooks as Claude Code does: a real ``memsearch-hook`` process fed a payload of the hooks
reference on stdin. Shared by the tests of the hooks, the warm server and the end-to-end checks."""

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson

HOOK = str(Path(sys.executable).with_name("memsearch-hook"))


def hook(event, payload, env=None, raw=None):
    data = raw if raw is not None else json.dumps(payload).encode()
    proc = subprocess.run([HOOK, event], input=data, capture_output=True, timeout=60,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0
    assert b"Traceback" not in proc.stderr and b"Traceback" not in proc.stdout
    return proc.stdout.decode()


def prompt_payload(prompt, session="sess-b", cwd="/home/dev/payments-api"):
    return {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": cwd, "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit", "prompt": prompt}


def tool_payload(name, tool_input, response, session="sess-a"):
    return {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/home/dev/payments-api",
            "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_name": name,
            "tool_input": tool_input, "tool_response": response, "tool_use_id": "toolu_01ABC", "duration_ms": 12}


def context_of(out):
    data = json.loads(out)
    assert set(data) == {"hookSpecificOutput"}
    spec = data["hookSpecificOutput"]
    assert spec["hookEventName"] == "UserPromptSubmit"
    return spec["additionalContext"]


def events(home):
    lines = []
    for path in sorted((home / "events").glob("*.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines()]
    return lines


def run_in_process(event: str, data: bytes, capsys) -> tuple[int, str, str]:
    """The hook's ``main`` in this process (fast enough to fuzz), stdin fed from a pipe; its exit code and output."""
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


def check_hook_output(code: int, out: str, err: str) -> None:
    """Exit 0, no traceback, nothing on stderr, and stdout empty or one UserPromptSubmit answer."""
    assert code == 0
    assert "Traceback" not in out and "Traceback" not in err and err == ""
    if out:
        data = json.loads(out)
        assert set(data) == {"hookSpecificOutput"}
        assert isinstance(data["hookSpecificOutput"]["additionalContext"], str)


def no_hook_errors(home: Path) -> None:
    """No error in the hooks' log and every line a hook wrote to the event log is whole, valid JSON."""
    log = home / ".memsearch" / "logs" / "hooks.log"
    errors = [line for line in log.read_text().splitlines() if ": error " in line] if log.exists() else []
    assert errors == []
    for path in (home / "events").glob("*.jsonl"):  # every line a hook wrote is whole, valid JSON
        for line in path.read_bytes().splitlines():
            assert isinstance(orjson.loads(line), dict)
