"""Running the Claude Code hooks as Claude Code does: a real ``memsearch-hook`` process fed a payload of the hooks
reference on stdin. Shared by the tests of the hooks, the warm server and the end-to-end checks."""

import json
import os
import subprocess
import sys
from pathlib import Path

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
