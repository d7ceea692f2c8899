"""The team memory wired in: the ``db_url`` setting (never from a project file, never printed with its password),
``memsearch sync`` pushing the local index to a real PostgreSQL + pgvector without loss (also after a kill -9 of
the sync or the server stopped mid-sync), and search reading the team store, falling back to the local index when
the server cannot be reached."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import MEMSEARCH
from indexer.base.errors import ConfigError, UsageError
from indexer.base.settings import resolve_settings

SECRET = "s3cret-Pw-9q"
URL = f"postgresql://alice:{SECRET}@db.example:5432/memory"


def run(*args: str, cwd=None, env=None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([MEMSEARCH, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, **(env or {})})


# -- 1. selecting the team database ------------------------------------------------------------------------------


def test_db_url_resolves_from_flag_env_and_memory_root_config(home, monkeypatch):
    assert resolve_settings(home).db_url is None
    (home / "memsearch.toml").write_text(f'db_url = "{URL}"\n')
    s = resolve_settings(home)
    assert (s.db_url, s.origins["db_url"]) == (URL, "config")
    monkeypatch.setenv("MEMSEARCH_DB_URL", URL.replace("memory", "env"))
    assert resolve_settings(home).db_url.endswith("/env")
    assert resolve_settings(home, db_url=URL.replace("memory", "flag")).origins["db_url"] == "flag"


@pytest.mark.parametrize("bad", ["mysql://u:" + SECRET + "@h/x", "postgresql://u:" + SECRET + "@h:port/x",
                                 "not a url " + SECRET, "postgresql://u:" + SECRET + "@h/x\nsslmode=disable",
                                 "postgresql://"])
def test_a_bad_db_url_is_one_line_that_never_shows_the_password(home, monkeypatch, bad):
    monkeypatch.setenv("MEMSEARCH_DB_URL", bad)
    with pytest.raises(ConfigError) as env_error:
        resolve_settings(home)
    assert "MEMSEARCH_DB_URL" in str(env_error.value) and "postgresql://" in str(env_error.value)
    monkeypatch.delenv("MEMSEARCH_DB_URL")
    with pytest.raises(UsageError) as flag_error:
        resolve_settings(home, db_url=bad)
    for message in (str(env_error.value), str(flag_error.value)):
        assert SECRET not in message and "\n" not in message


def test_a_project_file_never_sets_the_team_database(home, tmp_path, monkeypatch):
    project = tmp_path / "repo"
    project.mkdir()
    (project / ".memsearch.toml").write_text(f'db_url = "postgresql://evil:{SECRET}@evil.example/x"\nrrf_k = 10\n')
    monkeypatch.chdir(project)
    s = resolve_settings(home)
    assert s.db_url is None and s.rrf_k == 10
    done = run("status")
    assert done.returncode == 0
    warnings = [line for line in done.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 1 and "db_url refused" in warnings[0] and ".memsearch.toml" in warnings[0]
    assert "evil.example" not in done.stdout + done.stderr and SECRET not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    # the hooks resolve leniently: the same refusal, never an error
    assert any("db_url refused" in p for p in resolve_settings(home, strict=False).problems)


def test_status_masks_the_password_from_every_source(home):
    (home / "memsearch.toml").write_text(f'db_url = "{URL}"\n')
    outputs = [run("status"), run("status", "--json"),
               run("status", "--db-url", URL.replace("memory", "flag")),
               run("status", "--json", env={"MEMSEARCH_DB_URL": URL + "?sslmode=require&password=" + SECRET})]
    for done in outputs:
        assert done.returncode == 0, done.stderr
        assert SECRET not in done.stdout + done.stderr
    assert "postgresql://alice:***@db.example:5432/memory" in outputs[0].stdout
    shown = json.loads(outputs[1].stdout)["settings"]["db_url"]
    assert shown == {"value": "postgresql://alice:***@db.example:5432/memory", "from": "config"}
    assert json.loads(outputs[3].stdout)["settings"]["db_url"]["from"] == "env"
