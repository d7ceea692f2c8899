"""search_engine.cli.doctor: `memsearch doctor` runs each installed hook command and says which one fails."""

import os
import subprocess
import sys
from pathlib import Path

from conftest import MEMSEARCH


def test_doctor_checks_each_hook_command_and_exits_1_on_failure(sample_home, tmp_path):
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "MEMSEARCH_MODEL": "none"}
    env.pop("CLAUDECODE", None)
    subprocess.run([MEMSEARCH, "index"], env=env, check=True, capture_output=True, timeout=120)
    subprocess.run([MEMSEARCH, "install"], env=env, check=True, capture_output=True, cwd=tmp_path)
    ok = subprocess.run([MEMSEARCH, "doctor"], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    lines = ok.stdout.splitlines()
    assert any(x.startswith("ok   hook UserPromptSubmit (user): ") and x.endswith("runs") for x in lines)
    assert any(x.startswith("info server: not running") for x in lines)
    model_failed = any(x.startswith("FAIL model") for x in lines)  # the model is off here on purpose
    assert ok.returncode == (1 if model_failed else 0) and "Traceback" not in ok.stderr
    settings = tmp_path / "claude" / "settings.json"
    broken = settings.read_text().replace(str(Path(sys.executable).with_name("memsearch-hook")), "/gone/memsearch-hook")
    settings.write_text(broken)
    bad = subprocess.run([MEMSEARCH, "doctor"], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert bad.returncode == 1
    assert "FAIL hook UserPromptSubmit (user): '/gone/memsearch-hook' not found" in bad.stdout


def test_doctor_on_a_memory_root_not_made_yet_says_the_first_hook_creates_it(tmp_path):
    root = tmp_path / "not yet" / "memory"
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "MEMSEARCH_MODEL": "none",
           "MEMSEARCH_HOME": str(root)}
    out = subprocess.run([MEMSEARCH, "doctor"], env=env, capture_output=True, text=True, timeout=120).stdout
    assert f"ok   capture: no event lost; {root} does not exist yet (the first hook creates it)" in out
    assert "not writable" not in out and not root.exists()


def test_doctor_fails_hooks_that_record_into_another_memory_root(tmp_path):
    claude, installed, other = tmp_path / "claude", tmp_path / "installed", tmp_path / "other"
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(claude), "MEMSEARCH_MODEL": "none"}
    env.pop("CLAUDECODE", None)
    subprocess.run([MEMSEARCH, "install", "--home", str(installed)], env=env, check=True, capture_output=True,
                   cwd=tmp_path)
    same = subprocess.run([MEMSEARCH, "doctor", "--home", str(installed)], env=env, capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert "hooks root" not in same.stdout
    moved = subprocess.run([MEMSEARCH, "doctor", "--home", str(other)], env=env, capture_output=True, text=True,
                           cwd=tmp_path, timeout=120)
    assert moved.returncode == 1
    assert f"FAIL hooks root (user): record into {installed}, not {other}" in moved.stdout
    assert f"memsearch install --scope user --home {other}" in moved.stdout


def test_doctor_does_not_blame_the_disk_for_an_event_lost_to_its_size(tmp_path):
    from indexer.base import lost

    root = tmp_path / "memory"
    (root / ".memsearch").mkdir(parents=True)
    lost.record(root / ".memsearch", "a tool hook payload over 8 MiB")
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "MEMSEARCH_MODEL": "none",
           "MEMSEARCH_HOME": str(root)}
    out = subprocess.run([MEMSEARCH, "doctor"], env=env, capture_output=True, text=True, timeout=120).stdout
    assert "FAIL capture: 1 event could not be recorded" in out and "keep space free" not in out, out
    assert "nothing to repair: a hook's payload over the size memsearch reads is not recorded" in out, out
