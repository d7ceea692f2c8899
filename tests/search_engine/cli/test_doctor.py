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


def _doctor(env: dict, *args: str) -> tuple[subprocess.CompletedProcess, float, dict[str, str]]:
    """``memsearch doctor`` run; (the process, its seconds, each ``team …`` line by check name)."""
    import time

    start = time.monotonic()
    done = subprocess.run([MEMSEARCH, "doctor", *args], env=env, capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    team = {}
    for i, line in enumerate(lines):
        name = line[5:].split(":", 1)[0]
        if name.startswith("team "):
            fix = lines[i + 1].strip() if i + 1 < len(lines) and lines[i + 1].startswith("     fix: ") else ""
            team[name] = line + ("\n" + fix if fix else "")
    assert "Traceback" not in done.stderr, done.stderr
    return done, time.monotonic() - start, team


def _team_env(tmp_path, home, url: str | None) -> dict:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "MEMSEARCH_MODEL": "none",
           "MEMSEARCH_HOME": str(home)}
    env.pop("CLAUDECODE", None)
    env.pop("MEMSEARCH_DB_URL", None)
    return {**env, "MEMSEARCH_DB_URL": url} if url else env


def test_doctor_checks_the_team_database_only_when_db_url_is_set(home, tmp_path, team, pg_server):
    import json

    import psycopg

    from conftest import TEAM_PASSWORDS
    from indexer.store.pg_schema import SCHEMA_VERSION

    (home / "notes").mkdir()
    (home / "notes" / "deploy.md").write_text("# Deploy\n\nthe deploy retries three times\n")
    none, _, lines = _doctor(_team_env(tmp_path, home, None))
    assert lines == {} and none.stdout.startswith("ok   sqlite-vec")  # no line about a team database

    alice = team.urls["alice"]
    shown = alice.replace(TEAM_PASSWORDS["alice"], "***")
    env = _team_env(tmp_path, home, alice)
    _, _, lines = _doctor(env)
    assert lines["team extra"].startswith("ok   team extra: psycopg 3.")
    assert lines["team database"].startswith(f"ok   team database: {shown} answers as alice (")
    assert lines["team schema"] == f"ok   team schema: version {SCHEMA_VERSION}, as this memsearch needs"
    assert lines["team access"] == ("ok   team access: alice reads and writes its own rows under row-level security "
                                    "(0 sources, 0 meta keys of its own)")
    assert lines["team sync"] == (f"info team sync: this memory root has never synced to {shown}\n"
                                  "fix: run `memsearch sync`")
    assert lines["team forgets"] == "ok   team forgets: none waiting to reach the team database"

    subprocess.run([MEMSEARCH, "index"], env=env, check=True, capture_output=True, timeout=120)  # and syncs
    with psycopg.connect(team.admin_url) as conn:
        def snapshot():
            return [conn.execute(f"SELECT * FROM memsearch.{t} ORDER BY 1, 2").fetchall() for t in ("meta", "sources")]

        before = snapshot()
        conn.commit()
        done, _, lines = _doctor(env, "--json")
        assert snapshot() == before  # read-only: nothing written, not even the root's record
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert checks["team access"]["ok"] and checks["team access"]["detail"].endswith(
        f"(1 sources, {len(before[0])} meta keys of its own)")
    assert checks["team sync"]["detail"].startswith(f"this memory root last synced to {shown} at ")
    assert not checks["team sync"]["info"]

    # ids a forget could not remove there: those the database still holds fail; one another memory root of the
    # member removed since (here: never there) does not
    with psycopg.connect(team.admin_url) as conn:
        held = [r[0] for r in conn.execute("SELECT uid FROM memsearch.chunks WHERE owner = 'alice' LIMIT 1")]
    assert len(held) == 1
    (home / ".memsearch" / "team-forget.json").write_text(json.dumps([*held, "aaaa1111bbbb"]))
    done, _, lines = _doctor(env)
    assert done.returncode == 1
    assert lines["team forgets"] == (
        "FAIL team forgets: 1 forgotten chunk(s) are still on the team database (it could not be reached when you "
        "forgot them)\nfix: run `memsearch sync` (it removes them there first)")
    (home / ".memsearch" / "team-forget.json").write_text('["aaaa1111bbbb", "cccc2222dddd"]')
    done, _, lines = _doctor(env)
    assert lines["team forgets"] == (
        "ok   team forgets: none waiting: the 2 forgotten chunk(s) listed here are no longer on the team database "
        "(another memory root of yours removed them there); the next connection clears the list")
    (home / ".memsearch" / "team-forget.json").write_text(json.dumps(held))

    as_admin, _, lines = _doctor(env, "--db-url", team.admin_url)
    assert as_admin.returncode == 1 and lines["team access"].startswith(
        "FAIL team access: postgres is a superuser role: row-level security does not apply to it")
    with psycopg.connect(team.admin_url, autocommit=True) as admin:  # a login role the administrator never added
        admin.execute("DROP ROLE IF EXISTS outsider")
        admin.execute("CREATE ROLE outsider LOGIN PASSWORD 'outsider-pw'")
        try:
            outside, _, lines = _doctor(env, "--db-url", pg_server.url("outsider", "outsider-pw", team.db))
        finally:
            admin.execute("DROP ROLE outsider")
    assert outside.returncode == 1 and "team schema" not in lines
    assert lines["team access"] == (
        "FAIL team access: outsider lacks USAGE on schema memsearch (not in memsearch_member)\n"
        "fix: the administrator runs `memsearch team init --apply --member outsider` (it grants memsearch_member)")
    wrong = alice.replace(TEAM_PASSWORDS["alice"], "not-Her-pw")
    refused, _, lines = _doctor(env, "--db-url", wrong)
    assert refused.returncode == 1 and lines["team database"].startswith(
        f"FAIL team database: cannot reach {shown}: ")
    assert "password authentication failed" in lines["team database"]
    assert "team schema" not in lines and "team access" not in lines and "team sync" in lines
    for done in (none, as_admin, refused):
        out = done.stdout + done.stderr
        assert TEAM_PASSWORDS["alice"] not in out and "not-Her-pw" not in out and pg_server.password not in out


def test_doctor_does_not_wait_long_for_a_stopped_server_or_a_silent_host(home, tmp_path, silent_host):
    port, _ = silent_host
    for url, shown in (("postgresql://alice:alice-pw-Zq9@127.0.0.1:1/nowhere", "127.0.0.1:1/nowhere"),
                       (f"postgresql://alice:alice-pw-Zq9@127.0.0.1:{port}/memory", f"127.0.0.1:{port}/memory")):
        done, seconds, lines = _doctor(_team_env(tmp_path, home, url))
        assert done.returncode == 1 and seconds < 10
        first, fix = lines["team database"].split("\n")
        assert first.startswith(f"FAIL team database: cannot reach postgresql://alice:***@{shown}: ")
        assert fix.startswith("fix: start the server, or check db_url's host, port, user and password")
        assert "alice-pw-Zq9" not in done.stdout + done.stderr
        assert "team sync" in lines and "team forgets" in lines


def test_doctor_says_the_team_extra_is_missing_when_db_url_is_set(home, tmp_path):
    without_psycopg = ("import sys; sys.modules['psycopg'] = None; sys.argv[0] = 'memsearch'; "
                       "from search_engine.cli.console import main; main()")
    env = _team_env(tmp_path, home, "postgresql://alice:alice-pw-Zq9@127.0.0.1:1/nowhere")
    done = subprocess.run([sys.executable, "-c", without_psycopg, "doctor"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert ("FAIL team extra: psycopg is not installed, and db_url is set "
            "(postgresql://alice:***@127.0.0.1:1/nowhere)\n     fix: pip install 'memsearch-hybrid[team]'") in done.stdout
    assert "team database:" not in done.stdout and "alice-pw-Zq9" not in done.stdout + done.stderr
