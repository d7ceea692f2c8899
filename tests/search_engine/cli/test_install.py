"""search_engine.cli.install: `memsearch install` / `uninstall` edit Claude Code's settings file idempotently, keep the
user's other hooks and backups."""

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import MEMSEARCH, mcp_rpc, mcp_session, write
from hookrun import prompt_payload


def test_install_is_idempotent_keeps_other_hooks_and_uninstall_restores(tmp_path):
    config = tmp_path / "claude"
    other = {"hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "lint.sh"}]}]},
             "model": "opus"}
    write(config / "settings.json", json.dumps(other))
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    for _ in range(2):
        out = subprocess.run([MEMSEARCH, "install", "--json"], capture_output=True, text=True,
                             env={**os.environ, **env}, check=True)
    report = json.loads(out.stdout)
    assert report["backup"] is None, "a second install changes nothing"
    data = json.loads((config / "settings.json").read_text())
    assert data["model"] == "opus"
    prompt_groups = data["hooks"]["UserPromptSubmit"]
    assert len(prompt_groups) == 1 and prompt_groups[0]["hooks"][0]["command"].endswith('memsearch-hook" prompt')
    assert data["hooks"]["PostToolUse"][0]["hooks"][0]["command"] == "lint.sh"
    assert list(config.glob("settings.json.memsearch-backup-*"))
    subprocess.run([MEMSEARCH, "uninstall"], capture_output=True, env={**os.environ, **env}, check=True)
    assert json.loads((config / "settings.json").read_text()) == other


def test_install_scopes_home_and_an_uninstall_that_leaves_nothing(tmp_path, home):
    project = tmp_path / "repo"
    (project / ".claude").mkdir(parents=True)
    custom = tmp_path / "elsewhere memory"
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    env.pop("MEMSEARCH_HOME")

    def run(*args):
        return subprocess.run([MEMSEARCH, *args], capture_output=True, text=True, env=env, cwd=project, check=True)

    run("install", "--scope", "local", "--home", str(custom))
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = local["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command.startswith(f"MEMSEARCH_HOME='{custom}' ") and command.endswith('memsearch-hook" prompt')
    # the command really uses that root: a prompt recorded through it lands there
    subprocess.run(command, shell=True, input=json.dumps(prompt_payload("where does this prompt go, exactly?")),
                   text=True, env={**env, "MEMSEARCH_NO_SERVER": "1"}, check=True, capture_output=True)
    assert "where does this prompt go" in "".join(p.read_text() for p in (custom / "events").glob("*.jsonl"))

    shared = {"permissions": {"allow": ["Bash(make test)"]}}
    write(project / ".claude" / "settings.json", json.dumps(shared))
    out = run("install", "--scope", "project", "--home", str(custom)).stdout
    data = json.loads((project / ".claude" / "settings.json").read_text())
    assert data["hooks"]["Stop"][0]["hooks"][0]["command"] == "memsearch-hook stop", "a shared file: no local path"
    assert sys.executable.rsplit("/", 2)[0] not in (project / ".claude" / "settings.json").read_text()
    assert str(custom) not in (project / ".claude" / "settings.json").read_text()
    note = [line for line in out.splitlines() if line.startswith("note: ")]
    assert len(note) == 1 and str(custom) in note[0] and "settings.local.json" in note[0]
    assert "also in the local scope" in note[0] and "recorded 2 times" in note[0]  # both scopes' hooks would run
    doctor = subprocess.run([MEMSEARCH, "doctor"], capture_output=True, text=True, env=env, cwd=project).stdout
    assert "FAIL hooks (scopes): installed in project and local: each event is recorded 2 times" in doctor

    run("uninstall", "--scope", "local", "--home", str(custom))
    run("uninstall", "--scope", "project", "--home", str(custom))
    assert not (project / ".claude" / "settings.local.json").exists(), "a file left empty is removed"
    assert json.loads((project / ".claude" / "settings.json").read_text()) == shared
    assert sorted(p.name for p in (project / ".claude").iterdir()) == ["settings.json"], "no backup in the repo"
    assert len(list((custom / ".memsearch" / "backups").iterdir())) == 3


def test_a_memory_root_that_is_a_file_is_refused_by_install_and_needed_by_no_uninstall(tmp_path):
    """install would register hooks that lose every event; uninstall must still work (its backup goes to Claude
    Code's folder), and status says what the root is."""
    project, claude = tmp_path / "repo", tmp_path / "claude"
    (project / ".claude").mkdir(parents=True)
    homefile = write(tmp_path / "homefile", "not a folder\n")
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(claude), "MEMSEARCH_MODEL": "none"}

    def run(*args, home=homefile):
        return subprocess.run([MEMSEARCH, *args], capture_output=True, text=True, cwd=project, timeout=120,
                              env={**env, "MEMSEARCH_HOME": str(home)})

    refused = run("install", "--scope", "local")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (f"Error: the memory root {homefile} is a file, not a folder: give a folder with --home "
                              "or MEMSEARCH_HOME (it is created if missing)\n")
    assert not (project / ".claude" / "settings.local.json").exists()
    write(project / ".claude" / "settings.local.json", json.dumps({"env": {"A": "1"}}))
    assert run("install", "--scope", "local", home=tmp_path / "mem").returncode == 0
    removed = run("uninstall", "--scope", "local")
    assert removed.returncode == 0 and removed.stderr == "", removed.stderr
    assert json.loads((project / ".claude" / "settings.local.json").read_text()) == {"env": {"A": "1"}}
    backups = list((claude / "memsearch-backups").iterdir())
    assert len(backups) == 1 and f"backup: {backups[0]}" in removed.stdout
    assert "memsearch-hook" in backups[0].read_text() and backups[0].stat().st_mode & 0o777 == 0o600
    status = run("status")
    assert f"home: {homefile} (is a file, not a folder: check --home or MEMSEARCH_HOME)" in status.stdout
    assert json.loads(run("status", "--json").stdout)["home_problem"] == "is a file, not a folder"
    assert "FAIL capture: " in run("doctor").stdout


def test_changes_within_one_second_keep_every_backup(tmp_path):
    from search_engine.cli.install import install, uninstall

    project, custom = tmp_path / "repo", tmp_path / "mem"
    write(project / ".claude" / "settings.json", json.dumps({"model": "opus"}))
    reports = [install("project", project, home=custom), uninstall("project", project, home=custom),
               install("project", project, home=custom)]
    backups = [r.backup for r in reports]
    assert len(set(backups)) == 3 and all(Path(b).parent == custom / ".memsearch" / "backups" for b in backups)
    assert json.loads(Path(backups[0]).read_text()) == {"model": "opus"}
    assert {Path(b).stat().st_mode & 0o777 for b in backups} == {0o600}, "under the memory root: its user's alone"


def test_a_rewritten_settings_file_keeps_its_mode(tmp_path):
    from search_engine.cli.install import install

    project, custom = tmp_path / "repo", tmp_path / "mem"
    settings = write(project / ".claude" / "settings.local.json", json.dumps({"env": {"TOKEN": "x"}}))
    settings.chmod(0o600)
    install("local", project, home=custom)
    assert "memsearch-hook" in settings.read_text() and settings.stat().st_mode & 0o777 == 0o600


def test_the_mcp_server_is_registered_with_the_hooks_memory_root_and_searches_it(tmp_path):
    """`install --home X --mcp`: the MCP server gets X in its env, as every hook command does; Claude Code starts
    it from that entry and it finds what X holds; doctor agrees; uninstall takes the entry out."""
    config, custom = tmp_path / "claude", tmp_path / "other memory"
    write(custom / "daily" / "2026-11-20.md", "# Deploys\nthe staging password rotates every monday\n")
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config), "MEMSEARCH_MODEL": "none"}
    env.pop("MEMSEARCH_HOME")
    subprocess.run([MEMSEARCH, "index", "--home", str(custom)], env=env, check=True, capture_output=True)
    out = subprocess.run([MEMSEARCH, "install", "--home", str(custom), "--mcp"], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert f"MCP server registered in {config / '.claude.json'}" in out
    entry = json.loads((config / ".claude.json").read_text())["mcpServers"]["memsearch"]
    assert entry["env"] == {"MEMSEARCH_HOME": str(custom)} and entry["args"] == ["mcp"]
    hooks = json.loads((config / "settings.json").read_text())["hooks"]
    assert hooks["Stop"][0]["hooks"][0]["command"].startswith(f"MEMSEARCH_HOME='{custom}' ")

    with mcp_session([entry["command"], *entry["args"]], env={**env, **entry["env"]}) as (proc, _):
        found = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                               "params": {"name": "search", "arguments": {"query": "staging password"}}})
        assert "staging password" in found["result"]["content"][0]["text"]

    doctor = json.loads(subprocess.run([MEMSEARCH, "doctor", "--json", "--home", str(custom)], env=env,
                                       capture_output=True, text=True).stdout)
    checks = {c["name"]: c for c in doctor}  # doctor --json: a list of checks
    assert checks["mcp (user)"]["ok"], checks["mcp (user)"]
    elsewhere = json.loads(subprocess.run([MEMSEARCH, "doctor", "--json", "--home", str(tmp_path / "nope")],
                                          env=env, capture_output=True, text=True).stdout)
    checks = {c["name"]: c for c in elsewhere}
    assert not checks["mcp (user)"]["ok"] and f"searches {custom}" in checks["mcp (user)"]["detail"]

    subprocess.run([MEMSEARCH, "uninstall", "--home", str(custom)], env=env, check=True, capture_output=True)
    assert not (config / ".claude.json").exists(), "the file it alone held is removed"


def test_mcp_scopes_keep_local_paths_out_of_the_shared_file(tmp_path, home, monkeypatch):
    from search_engine.cli.install import install, uninstall

    project, custom = tmp_path / "repo", tmp_path / "mem"
    (project / ".claude").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    report = install("project", project, with_mcp=True, home=custom)
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["memsearch"] == {
        "type": "stdio", "command": "memsearch", "args": ["mcp"]}
    assert report.note and str(custom) in report.note
    install("local", project, with_mcp=True, home=custom)
    user_file = json.loads((tmp_path / "claude" / ".claude.json").read_text())
    local = user_file["projects"][str(project)]["mcpServers"]["memsearch"]
    assert local["env"] == {"MEMSEARCH_HOME": str(custom)} and local["command"].startswith("/")
    uninstall("local", project, home=custom)
    assert "mcpServers" not in json.loads((tmp_path / "claude" / ".claude.json").read_text())["projects"][
        str(project)]
    assert "memsearch" in (project / ".mcp.json").read_text(), "the project's entry stays"
    uninstall("project", project, home=custom)
    assert not (project / ".mcp.json").exists()
