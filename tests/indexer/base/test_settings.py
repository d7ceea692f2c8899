"""Settings: every knob is one, documented, shown by ``status``, checked when built, and the search tuning a
project may set is what travels with each request to the warm server."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import MEMSEARCH, REPO, write
from indexer.base.errors import ConfigError
from indexer.base.settings import _SPEC, FIELDS, PROJECT_KEYS, resolve_settings, with_tuning


def _readme_section(title: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(f"### {title}\n")
    end = text.index("\n### ", start + 1)
    return text[start:end]


def test_the_readme_lists_every_setting_with_its_environment_variable():
    section = _readme_section("Settings")
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    named = {n for row in rows for n in re.findall(r"`([a-z0-9_]+)`", row.split("|")[1])}
    envs = {n for row in rows for n in re.findall(r"`([A-Z0-9_]+)`", row.split("|")[2])}
    assert named == set(_SPEC), "each setting the code reads has one row in the README, and no row is stale"
    assert envs == {env for env, _, _ in _SPEC.values()}


def test_the_readme_lists_exactly_the_keys_a_project_file_may_set():
    section = _readme_section("Settings")
    paragraph = section[section.index("A project may tune search"):]
    paragraph = paragraph.split("\n\n")[0]
    listed = set(re.findall(r"`([a-z0-9_]+)`", paragraph[:paragraph.index("A bad value")]))
    assert listed == set(PROJECT_KEYS)


def test_every_ranking_knob_the_search_reads_travels_with_a_request():
    """A setting ``search()`` reads but the request does not carry would rank the warm server's way, not the
    caller's: every one it reads (but the index it opens) is a key a request carries."""
    source = (REPO / "search_engine" / "search.py").read_text(encoding="utf-8")
    read = set(re.findall(r"\bsettings\.([a-z_0-9]+)\b", source)) - {"db_path"}
    assert read and read <= set(PROJECT_KEYS), read - set(PROJECT_KEYS)
    assert all(name in FIELDS for name in read)


def test_with_tuning_checks_each_value_and_keeps_what_a_project_may_not_set(home):
    base = resolve_settings(home)
    tuned = with_tuning(base, {"rrf_k": 7, "fusion": "RRF", "model": "other", "db_path": "/etc/passwd"})
    assert (tuned.rrf_k, tuned.fusion, tuned.model, tuned.db_path) == (7, "rrf", base.model, base.db_path)
    assert tuned.origins["rrf_k"] == "request" and "model" not in tuned.origins
    assert with_tuning(base, {"rrf_k": base.rrf_k}) is base
    with pytest.raises(ConfigError, match=r"^bm25_share = 1\.5 from request is not valid: expected a number from 0 to 1$"):
        with_tuning(base, {"bm25_share": 1.5})


def test_settings_are_immutable_and_replace_checks_the_new_value(home):
    base = resolve_settings(home)
    with pytest.raises(AttributeError):
        base.rrf_k = 3  # type: ignore[misc]
    assert base.replace(candidates=80).candidates == 80 and base.candidates == 50
    assert base.replace(candidates=80) == base.replace(candidates=80) != base
    with pytest.raises(ConfigError, match="candidates"):
        base.replace(candidates=0)


def _status(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([MEMSEARCH, "status", *(["--json"] if env.pop("json", None) else [])],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MEMSEARCH_MODEL": "none", **env})


def test_claude_dir_and_hook_timing_are_settings_shown_by_status(home, tmp_path):
    claude = tmp_path / "claude-config"
    result = _status({"json": "1", "CLAUDE_CONFIG_DIR": str(claude), "MEMSEARCH_HOOK_LOG_TIMES": "1"})
    described = json.loads(result.stdout)["settings"]
    assert described["claude_dir"] == {"value": str(claude), "from": "env"}
    assert described["log_hook_times"] == {"value": True, "from": "env"}
    assert set(FIELDS) <= set(described)
    text = _status({"CLAUDE_CONFIG_DIR": str(claude)}).stdout
    assert re.search(rf"claude_dir\s.*{re.escape(str(claude))}.*env", text)
    write(home / "memsearch.toml", "log_hook_times = 'sometimes'\n")
    bad = _status({})
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr == (f"Error: log_hook_times = 'sometimes' from {home / 'memsearch.toml'} is not valid: "
                          "expected true or false\n")


def test_import_transcripts_reads_the_claude_dir_setting(home, tmp_path):
    claude = tmp_path / "claude-config"
    session = claude / "projects" / "-home-dev-app" / "sess-1.jsonl"
    write(session, json.dumps({"type": "user", "sessionId": "sess-1", "timestamp": "2026-01-02T03:04:05Z",
                               "cwd": "/home/dev/app", "uuid": "u1",
                               "message": {"role": "user", "content": "where do the kestrel reports go"}}) + "\n")
    result = subprocess.run([MEMSEARCH, "import", "transcripts"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "MEMSEARCH_MODEL": "none", "CLAUDE_CONFIG_DIR": str(claude)})
    assert result.returncode == 0, result.stderr
    logged = "".join(p.read_text() for p in sorted((Path(home) / "events").glob("*.jsonl")))
    assert "kestrel reports" in logged


def test_a_hook_logs_its_time_when_the_setting_says_so(home):
    payload = json.dumps({"session_id": "s1", "cwd": str(home), "hook_event_name": "Stop",
                          "last_assistant_message": "done with the osprey migration"}).encode()
    hook = str(Path(MEMSEARCH).with_name("memsearch-hook"))
    env = {**os.environ, "MEMSEARCH_MODEL": "none"}
    subprocess.run([hook, "stop"], input=payload, capture_output=True, timeout=60, env=env, check=True)
    log = home / ".memsearch" / "logs" / "hooks.log"
    assert not log.exists() or " ms" not in log.read_text()
    write(home / "memsearch.toml", "log_hook_times = true\n")
    subprocess.run([hook, "stop"], input=payload, capture_output=True, timeout=60, env=env, check=True)
    assert re.search(r"stop: \d+\.\d ms", log.read_text())


def test_a_tilde_user_that_names_no_user_is_a_one_line_error_not_a_traceback(home):
    """``Path.expanduser`` raises RuntimeError for ``~0``: it is a bad value like any other (found by the
    property test over every setting and source)."""
    result = _status({"MEMSEARCH_EXTRA_SOURCES": "~0"})
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == ("Error: extra_sources = '~0' from MEMSEARCH_EXTRA_SOURCES is not valid: expected a path "
                             "(its ~user names no user here)\n")
    result = _status({"MEMSEARCH_HOME": "~nosuchuser-memsearch/mem"})
    assert result.returncode == 1 and result.stderr.startswith("Error: home = '~nosuchuser-memsearch/mem' from "
                                                               "MEMSEARCH_HOME is not valid")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    lenient = resolve_settings(home, strict=False, db_path="~0/index.db")
    assert lenient.db_path == home / ".memsearch" / "index.db" and "db_path = '~0/index.db'" in lenient.problems[0]
