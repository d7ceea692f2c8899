"""hooks.entry: the never-raise contract of the hook process (exit 0, bad stdin, the off switch, light start-up) and
the plugin wrapper that runs it, as Claude Code runs it: real processes fed the payloads of the hooks reference."""

import contextlib
import json
import os
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings as hsettings, strategies as st

from conftest import REPO, SAMPLE
from hookrun import check_hook_output, context_of, hook, no_hook_errors, prompt_payload, run_in_process
from indexer.base.settings import resolve_settings
from indexer.pipeline import index


@pytest.mark.parametrize("raw", [b"", b"garbage{{{", b"\xff\xfe\x00binary", b"[1, 2, 3]", b'"a string"',
                                 b'{"prompt": 42}', b'{"session_id": "x"}', b"{" * 100_000,
                                 json.dumps({"prompt": "database " * 1_000_000}).encode()])
def test_malformed_stdin_exits_0_with_nothing_or_one_json(memory, raw):
    out = hook("prompt", None, raw=raw)
    if out and len(raw) > 8 * 2**20:  # too large to read: the user is told its event is lost
        assert "over 8 MiB" in json.loads(out)["systemMessage"]
    elif out:
        context_of(out)


def test_the_hooks_that_print_nothing_are_the_ones_claude_code_runs_in_the_background():
    """An async hook's output reaches Claude on the next turn, not the user (hooks reference, 3.6): the entry point
    keeps its notices for the next prompt's hook, so its list must be what the plugin and `install` register."""
    from hooks.entry import ASYNC_EVENTS
    from search_engine.cli.install import HOOKS

    plugin = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    in_plugin = {h["command"].rsplit(" ", 1)[-1] for groups in plugin.values() for g in groups for h in g["hooks"]
                 if h.get("async")}
    installed = {arg for arg, _, _, is_async in HOOKS.values() if is_async}
    assert set(ASYNC_EVENTS) == in_plugin == installed


def test_disabled_by_env(memory):
    assert hook("prompt", prompt_payload("database locked nightly export"), env={"MEMSEARCH_DISABLE": "1"}) == ""


def test_plugin_layout():
    plugin = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert plugin["name"] == "memsearch" and "hooks" not in plugin
    hooks = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) >= {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"}
    for groups in hooks.values():
        for group in groups:
            for handler in group["hooks"]:
                assert handler["type"] == "command" and "${CLAUDE_PLUGIN_ROOT}/hooks/run.sh" in handler["command"]
    mcp = json.loads((REPO / ".mcp.json").read_text())
    assert mcp["mcpServers"]["memsearch"]["args"] == ["mcp"]
    assert os.access(REPO / "hooks" / "run.sh", os.X_OK)


def test_plugin_wrapper_runs_the_hook(memory):
    payload = json.dumps(prompt_payload("Why do we get database is locked errors during the nightly export?"))
    proc = subprocess.run([str(REPO / "hooks" / "run.sh"), "prompt"], input=payload, capture_output=True, text=True,
                          env={**os.environ, "CLAUDE_PLUGIN_ROOT": str(REPO)}, timeout=60)
    assert proc.returncode == 0 and "memory-context" in context_of(proc.stdout)


def test_hook_start_up_stays_light(memory):
    """The cold path (no server) searches BM25 and imports none of the indexer, nor the model's packages, nor
    ``dataclasses`` (with ``inspect``), nor what only writing (``xxhash``) or a time in the query (``datetime``) needs."""
    probe = ("import sys, runpy; sys.argv = ['memsearch-hook', 'prompt']; "
             "from hooks.entry import main; main(); "
             "print(','.join(m for m in ('typer', 'fastembed', 'onnxruntime', 'numpy', 'rich', 'click', 'starlette', "
             "'uvicorn', 'jinja2', 'indexer.pipeline', 'indexer.sources', 'indexer.chunker', 'zipfile', "
             "'indexer.base.reports', 'indexer.store.lexicon', 'dataclasses', 'inspect', 'xxhash', 'datetime') "
             "if m in sys.modules), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", probe], input=json.dumps(prompt_payload("database locked export")),
                          capture_output=True, text=True, timeout=60)
    assert proc.stderr.strip() == ""


def test_the_warm_hook_path_imports_no_json_library_or_config_parser():
    probe = ("import sys; import hooks.handlers, search_engine.context, search_engine.query, indexer.optout; "
             "print(','.join(m for m in ('orjson', 'tomllib', 'subprocess', 'uuid', 'apsw', 'dataclasses', 'inspect') "
             "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout + proc.stderr


def test_an_event_with_a_lone_surrogate_is_recorded_not_lost(tmp_path):
    from indexer.eventlog import Event, append
    from indexer.sources import parse_event_bytes

    path = append(tmp_path, Event(type="prompt", content="broken \ud800 text", session_id="s1"))
    parsed = parse_event_bytes(path.read_bytes(), 0, 1200, 200)
    assert not parsed.problems and parsed.drafts[0].text == "broken \ufffd text"  # the replacement character


FUZZ = hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


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
        check_hook_output(*run_in_process(event, data, capsys))


@FUZZ
@given(event=st.sampled_from(EVENTS), payload=_payload)
# Found on main: orjson refused an integer above 64 bits in a tool response and the event was lost.
@example(event="tool", payload={"tool_name": "Bash", "tool_input": {"command": "x"},
                                "tool_response": {"n": 2**64, "extra": [2**80]}})
def test_fuzzed_hook_payloads(hook_env, capsys, event, payload):
    with hook_env() as root:
        check_hook_output(*run_in_process(event, json.dumps(payload).encode(), capsys))
        no_hook_errors(root)
