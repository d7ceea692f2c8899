"""The `memsearch` command as a user runs it: real processes, real model, exit codes and stream separation."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MEMSEARCH, SAMPLE, write


def run(*args, env=None, check_rc=0):
    proc = subprocess.run([MEMSEARCH, *args], capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=120)
    if check_rc is not None:
        assert proc.returncode == check_rc, (proc.returncode, proc.stdout, proc.stderr)
    return proc


@pytest.fixture(scope="module")
def indexed_root(tmp_path_factory, model_cache):
    """The sample memory indexed once with the real model, shared by the tests that only read it."""
    root = tmp_path_factory.mktemp("cli") / "memory"
    shutil.copytree(SAMPLE, root)
    env = {**os.environ, "MEMSEARCH_HOME": str(root), "MEMSEARCH_CACHE_DIR": str(model_cache),
           "HOME": str(root.parent)}
    proc = subprocess.run([MEMSEARCH, "index", "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return root, json.loads(proc.stdout)


@pytest.fixture
def indexed_cli(indexed_root, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_HOME", str(indexed_root[0]))
    return indexed_root[1]


def test_index_then_reindex_reports(sample_home):
    first = json.loads(run("index", "--json").stdout)
    assert first["files_changed"] == 14 and first["chunks_embedded"] > 0
    assert first["chunks_pending"] == 0 and first["model"].startswith("all-MiniLM-L6-v2-int8")
    again = run("index").stdout
    assert "0 changed, 14 unchanged" in again and "0 embedded" in again and "nothing new to embed" in again


def test_search_json_shape(indexed_cli):
    data = json.loads(run("search", "what prevents a shopper paying double", "--json", "-k", "3").stdout)
    assert set(data) >= {"query", "mode_requested", "mode_used", "fallback_reason", "health", "hits",
                         "hidden_duplicates"}
    assert data["mode_used"] == "hybrid" and data["fallback_reason"] is None
    assert set(data["health"]) >= {"index_exists", "chunks", "pending_embeddings", "last_indexed"}
    hit = data["hits"][0]
    assert set(hit) >= {"id", "kind", "category", "title", "text", "path", "line_start", "line_end", "ts",
                        "session_id", "project", "score", "bm25_rank", "vector_rank"}
    assert hit["path"] in ("areas/projects/payments-api/rules.md", "areas/patterns/retries/summary.md",
                           "daily/2026-11-20.md")


def test_hybrid_finds_what_keywords_miss(indexed_cli):
    query = "what prevents a shopper paying double"
    bm25 = json.loads(run("search", query, "--mode", "bm25", "--json").stdout)
    assert bm25["hits"] == []
    hybrid = json.loads(run("search", query, "--json", "-k", "3").stdout)
    assert any("idempotency" in h["text"] or "two times" in h["text"] for h in hybrid["hits"])


def test_no_results_is_an_empty_list(indexed_cli):
    data = json.loads(run("search", "zzzqqqxxx", "--mode", "bm25", "--json").stdout)
    assert data["hits"] == [] and data["health"]["chunks"] > 0


def test_without_a_model_every_output_says_bm25(indexed_cli):
    env = {"MEMSEARCH_MODEL": "none"}
    data = json.loads(run("search", "webhook", "--json", env=env).stdout)
    assert data["mode_requested"] == "hybrid" and data["mode_used"] == "bm25"
    assert "MEMSEARCH_MODEL=none" in data["fallback_reason"] and data["hits"]
    text = run("search", "webhook", env=env).stdout
    assert text.startswith("mode_used: bm25 (requested hybrid: embeddings disabled by MEMSEARCH_MODEL=none)")


def test_vector_without_a_model_is_a_one_line_error(indexed_cli):
    proc = run("search", "webhook", "--mode", "vector", env={"MEMSEARCH_MODEL": "none"}, check_rc=1)
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("Error: --mode vector needs an embedding model")
    assert "Traceback" not in proc.stderr


def test_usage_errors_exit_2(indexed_cli):
    proc = run("search", "x", "--since", "someday", check_rc=2)
    assert proc.stderr == "Error: invalid date 'someday': use YYYY-MM-DD, an ISO timestamp, today, or 7d/2w/3m/1y\n"
    proc = run("search", "x", "--raw", "--mode", "bm25", '"broken', check_rc=2)
    assert run("search", "x", "--mode", "bogus", check_rc=2).stderr.startswith("Error: invalid mode")
    assert run("search", "x", "--kind", "memo", check_rc=2).stderr.startswith("Error: invalid kind")


@pytest.mark.parametrize("args", [("search", "x", "-k", "abc"), ("search", "x", "--format", "weird"),
                                  ("ui", "--port", "-1"), ("ui", "--idle-timeout", "-1"), ("hook",), ("search",),
                                  ("status", "--bogus"), ("serve", "--idle-timeout", "-5"),
                                  ("serve", "--status", "--stop"), ("nosuchcommand",)])
def test_every_usage_error_is_one_line_and_exit_2(indexed_cli, args):
    proc = run(*args, check_rc=2)
    assert proc.stdout == "" and proc.stderr.startswith("Error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "─" not in proc.stderr  # no box, no traceback


def test_a_terminal_that_cannot_show_the_text_gets_replacements_and_json_stays_utf8(indexed_cli, home):
    write(home / "notes" / "tokyo.md", "# 東京\n\n東京の会議は木曜 · weekly sync 🚀\n")
    run("index", "--home", str(home), env={"MEMSEARCH_MODEL": "none"})
    text = run("search", "weekly", "--home", str(home), "--mode", "bm25", env={"PYTHONIOENCODING": "ascii"})
    assert "weekly sync" in text.stdout and "Traceback" not in text.stderr
    proc = subprocess.run([MEMSEARCH, "search", "東京", "--home", str(home), "--mode", "bm25", "--json"],
                          capture_output=True, env={**os.environ, "PYTHONIOENCODING": "latin-1"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.decode("utf-8"))["hits"][0]["title"] == "東京"


def test_a_cjk_query_in_vector_mode_with_the_english_only_model_is_refused_in_one_line(indexed_cli):
    refused = run("search", "東京の会議", "--mode", "vector", check_rc=None)
    assert refused.returncode != 0 and refused.stdout == "" and "Traceback" not in refused.stderr
    assert refused.stderr.count("\n") == 1 and "English-only" in refused.stderr and "--mode bm25" in refused.stderr
    hybrid = json.loads(run("search", "東京の会議", "--json").stdout)
    assert hybrid["mode_used"] == "bm25" and "English-only" in hybrid["fallback_reason"]


def test_search_before_indexing(home):
    data = json.loads(run("search", "anything", "--json").stdout)
    assert data["hits"] == [] and data["health"]["index_exists"] is False
    assert "never built" in run("search", "anything").stdout


def test_explain_text(indexed_cli):
    out = run("search", "webhook refund commit", "--explain").stdout
    assert "explain: lexical query" in out and "bm25 #" in out and "vector #" in out


def test_index_format(indexed_cli):
    lines = run("search", "webhook", "--format", "index", "-k", "3").stdout.splitlines()
    assert len([line for line in lines if line[:12].isalnum() and len(line.split()[0]) == 12]) == 3


def test_show_and_neighbours(indexed_cli):
    hits = json.loads(run("search", "busy_timeout", "--mode", "bm25", "--json").stdout)["hits"]
    target = next(h for h in hits if h["path"] == "daily/2026-11-19.md")
    view = json.loads(run("show", target["id"], "--json").stdout)
    assert view["chunk"]["text"] == target["text"] and view["source_chunks"] >= 2
    assert view["previous_id"] or view["next_id"]
    text = run("show", target["id"][:8]).stdout
    assert f"id: {target['id']}" in text and "source: daily/2026-11-19.md:" in text
    missing = run("show", "deadbeef0000", check_rc=1)
    assert missing.stderr.startswith("Error: no memory with id deadbeef0000")
    assert run("show", "../../etc/passwd", check_rc=2).stderr.startswith("Error: invalid id")


def test_status(indexed_cli):
    info = json.loads(run("status", "--json").stdout)
    assert info["index_exists"] and info["chunks"] == sum(info["chunks_by_kind"].values())
    assert set(info["chunks_by_kind"]) == {"note", "fact", "event"}
    assert info["model"]["available"] and info["pending_embeddings"] == 0 and info["db_bytes"] > 0
    assert info["settings"]["model"]["from"] == "default"
    assert info["not_embedded"] >= 1  # the sample's Japanese notes: the bundled model is English-only
    shown = run("status").stdout
    assert f"not embedded: {info['not_embedded']} (" in shown and 'model = "multilingual-e5-small" or "minilm+e5" embeds' in shown
    text = run("status", env={"MEMSEARCH_MODEL": "none"}).stdout
    assert "model: none: embeddings disabled by MEMSEARCH_MODEL=none" in text and "[env]" in text


def test_home_flag_and_config_file(tmp_path):
    root = tmp_path / "elsewhere"
    write(root / "MEMORY.md", "# Memory\nThe flux capacitor needs 1.21 gigawatts.\n")
    write(root / "memsearch.toml", 'model = "none"\n')
    assert "1 changed" in run("index", "--home", str(root)).stdout
    data = json.loads(run("search", "gigawatts", "--home", str(root), "--json").stdout)
    assert data["mode_used"] == "bm25" and "memsearch.toml" in data["fallback_reason"]
    write(root / "memsearch.toml", "modle = 'typo'\n")
    assert "unknown key(s)" in run("status", "--home", str(root), check_rc=1).stderr


def test_a_memory_root_that_does_not_exist_is_said_by_status_and_by_the_index_that_creates_it(tmp_path):
    typo = tmp_path / "memroy"
    status = run("status", "--home", str(typo), env={"MEMSEARCH_MODEL": "none"})
    assert f"home: {typo} (does not exist: check --home or MEMSEARCH_HOME)" in status.stdout
    assert json.loads(run("status", "--home", str(typo), "--json").stdout)["home_exists"] is False
    first = run("index", "--home", str(typo), env={"MEMSEARCH_MODEL": "none"})
    assert first.stderr.count("\n") == 1 and f"the memory root {typo} did not exist; it is created now" in first.stderr
    assert typo.is_dir() and run("index", "--home", str(typo), env={"MEMSEARCH_MODEL": "none"}).stderr == ""
    assert "does not exist" not in run("status", "--home", str(typo)).stdout


def test_index_of_a_path_outside_the_memory_root_is_one_usage_error_line(home, tmp_path):
    note = write(tmp_path / "elsewhere" / "p.md", "# Out\nA platypus note.\n")
    refused = run("index", str(note), check_rc=2)
    assert refused.stdout == "" and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"Error: {note} is outside the memory root {home}: ")
    assert "0 deleted" in run("index", env={"MEMSEARCH_MODEL": "none"}).stdout


def test_an_empty_home_or_path_is_one_error_line_never_the_current_folder(tmp_path):
    """``--home ""`` or ``index ""`` would mean the current folder (``Path("")`` is "."), and an empty
    MEMSEARCH_HOME the default root: each is an error instead (exit 2 for the flag and the argument; 1 for the
    variable, as for any bad value there), and nothing is written where the command ran."""
    cwd = tmp_path / "somewhere"
    write(cwd / "note.md", "# Here\nnot a memory\n")

    def here(*args, env=None):
        return subprocess.run([MEMSEARCH, *args], capture_output=True, text=True, cwd=cwd, timeout=120,
                              env={**os.environ, "MEMSEARCH_MODEL": "none", **(env or {})})

    for args in (["index", "--home", ""], ["search", "note", "--home", ""], ["status", "--home", " "]):
        result = here(*args)
        assert (result.returncode, result.stdout) == (2, ""), args
        assert result.stderr == ("Error: --home is empty: give the memory root's folder, or leave --home out to use "
                                 "$MEMSEARCH_HOME or ~/.claude/memory\n")
    result = here("index", "")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "Error: a PATH given is empty: name a file or folder (is a shell variable unset?)\n"
    result = here("index", env={"MEMSEARCH_HOME": ""})
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == ("Error: MEMSEARCH_HOME is set but empty: set it to the memory root's folder, or unset it "
                             "to use ~/.claude/memory\n")
    assert sorted(p.name for p in cwd.iterdir()) == ["note.md"]


def test_a_date_range_that_ends_before_it_starts_is_one_usage_error_line(home):
    from datetime import date, timedelta

    today, week = date.today().isoformat(), (date.today() - timedelta(days=7)).isoformat()
    write(home / "daily" / "2026-11-20.md", "# Day\nthe quokka census\n")
    run("index", env={"MEMSEARCH_MODEL": "none"})
    for args, said in ((["--since", "today", "--until", "7d"], "Error: --since {today} is after --until {week}"),
                       (["--since", "2026-11-21T10:00:00", "--until", "2026-11-20"],
                        "Error: --since 2026-11-21T10:00:00 is after --until 2026-11-20")):
        result = run("search", "quokka", *args, check_rc=2, env={"MEMSEARCH_MODEL": "none"})
        assert result.stdout == "" and result.stderr == said.format(today=today, week=week) + (
            ": nothing can match; swap them\n")
    found = run("search", "quokka", "--since", "2026-11-20", "--until", "2026-11-20", "--json",
                env={"MEMSEARCH_MODEL": "none"})
    assert [h["path"] for h in json.loads(found.stdout)["hits"]] == ["daily/2026-11-20.md"]


def test_bad_files_are_reported_one_line_each(home):
    write(home / "ok.md", "# Fine\ntext\n")
    write(home / "bad.json", "{nope")
    out = run("index").stdout
    assert "skipped: bad.json: invalid JSON" in out and "Traceback" not in out



def test_a_file_name_that_is_not_utf8_is_one_line_and_the_rest_is_indexed(home):
    write(home / "ok.md", "# Fine\nquokka\n")
    write(Path(os.fsdecode(bytes(home) + b"/bad-\xff\xfe-name.md")), "# x\nzebra\n")
    env = {"MEMSEARCH_MODEL": "none"}
    for args in (["index"], ["index", "--full"], ["maintain"]):
        proc = run(*args, env=env)
        assert "skipped: bad-\\xff\\xfe-name.md: file name is not valid UTF-8\n" in proc.stdout, proc.stdout
        assert proc.stderr == ""
    data = json.loads(run("index", "--json", env=env).stdout)
    assert data["skipped"] == [{"path": "bad-\\xff\\xfe-name.md", "reason": "file name is not valid UTF-8"}]
    assert "bad-\\xff\\xfe-name.md" in {e["path"] for e in json.loads(run("stats", "--json").stdout)["storage"]}
    assert json.loads(run("search", "quokka", "--mode", "bm25", "--json").stdout)["hits"][0]["path"] == "ok.md"

_PROBE = """
import sys
sys.argv = {argv!r}
from search_engine.cli.console import main
try:
    main()
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('fastembed', 'onnxruntime', 'numpy', 'tokenizers',
                                                           'starlette', 'uvicorn', 'jinja2'))
print('HEAVY=' + ','.join(heavy), file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [["memsearch", "--help"], ["memsearch", "search", "webhook", "--mode", "bm25"],
                                  ["memsearch", "status"], ["memsearch", "search", "webhook", "--help"]])
def test_startup_never_imports_the_model_stack(indexed_cli, argv):
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(argv=argv)], capture_output=True, text=True,
                          timeout=60)
    assert "HEAVY=\n" in proc.stderr, proc.stderr[-500:]


def test_hybrid_search_does_import_it(indexed_cli):
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(argv=["memsearch", "search", "webhook"])],
                          capture_output=True, text=True, timeout=60)
    assert "fastembed" in proc.stderr


def test_timeline_cli(memory):
    hits = json.loads(subprocess.run([MEMSEARCH, "search", "webhook", "--kind", "event", "--mode", "bm25", "--json"],
                                     capture_output=True, text=True).stdout)["hits"]
    event = next(h for h in hits if h["event_id"] == "e3")
    view = json.loads(subprocess.run([MEMSEARCH, "timeline", event["id"], "--window", "2", "--json"],
                                     capture_output=True, text=True).stdout)
    assert [h["event_id"] for h in view["before"]] == ["e1", "e2"]
    assert view["after"][0]["event_id"] == "e4" and view["center"]["event_id"] == "e3"


def test_status_says_an_upgraded_index_is_catching_up_until_the_next_index_run(home):
    from indexer.store import sqlite as store

    write(home / "events" / "2026-11-20.jsonl", '{"id":"e1","session_id":"s1","type":"prompt","content":"hi"}\n')
    env = {"MEMSEARCH_MODEL": "none"}
    run("index", env=env)
    assert json.loads(run("status", "--json", env=env).stdout)["rechunk_due"] is False
    conn = store.connect(home / ".memsearch" / "index.db")
    store.set_meta(conn, "chunker", "2:1200:200")  # as the release before left it
    conn.close()
    assert json.loads(run("status", "--json", env=env).stdout)["rechunk_due"] is True
    assert "catching up: the index predates this version's chunker" in run("status", env=env).stdout
    assert "chunker settings changed" in run("index", env=env).stdout
    assert "catching up" not in run("status", env=env).stdout


def test_model_pull_says_in_one_line_that_the_model_host_is_unreachable_without_retrying(home, monkeypatch):
    """Offline, fastembed retries a download for ~40 s and logs each try: pull asks the host once and stops."""
    import socket

    import fastembed
    from typer.testing import CliRunner

    from indexer.base.errors import MemsearchError, UsageError
    from search_engine.cli.main import MODEL_HOST, app

    def unreachable(address, timeout=None):
        assert address == (MODEL_HOST, 443) and timeout
        raise OSError(-2, "Name or service not known")

    def never(*args, **kwargs):
        raise AssertionError("no download may start")

    monkeypatch.setattr(socket, "create_connection", unreachable)
    monkeypatch.setattr(fastembed.TextEmbedding, "__init__", never)
    result = CliRunner().invoke(app, ["model", "pull", "BAAI/bge-small-en-v1.5"])
    assert isinstance(result.exception, MemsearchError)
    assert str(result.exception).count("\n") == 0 and "huggingface.co is not reachable" in str(result.exception)
    unknown = CliRunner().invoke(app, ["model", "pull", "foo/bar"])
    assert isinstance(unknown.exception, UsageError) and "not a model fastembed knows" in str(unknown.exception)


def test_timeline_marks_what_searches_leave_out(home):
    write(home / "areas" / "projects" / "shop" / "facts.json", json.dumps({"facts": [
        {"id": "f1", "fact": "Totals are rounded per line item.", "status": "active", "timestamp": "2026-11-19"},
        {"id": "f2", "fact": "Totals were rounded per basket.", "status": "superseded", "timestamp": "2026-10-01"}]}))
    env = {"MEMSEARCH_MODEL": "none"}
    run("index", env=env)
    hits = json.loads(run("search", "totals rounded", "--json", env=env).stdout)["hits"]
    assert [h["text"] for h in hits] == ["Totals are rounded per line item."]
    lines = run("timeline", hits[0]["id"], env=env).stdout.splitlines()
    basket = next(line for line in lines if "per basket" in line)
    assert "(superseded: searches leave it out)" in basket
    assert not any("searches leave it out" in line for line in lines if "per line item" in line)


def test_an_age_reaching_before_the_year_one_is_one_usage_error_line(home):
    write(home / "daily" / "2026-11-20.md", "# Day\nthe quokka census\n")
    run("index", env={"MEMSEARCH_MODEL": "none"})
    for args in (["search", "quokka", "--since", "9999999d"], ["search", "quokka", "--until", "99999999999999999999d"],
                 ["forget", "--before", "9999999d", "--dry-run"]):
        result = run(*args, check_rc=2, env={"MEMSEARCH_MODEL": "none"})
        assert result.stdout == "" and result.stderr.startswith("Error: invalid date '") and (
            result.stderr.count("\n") == 1), result.stderr


def test_timeline_and_recent_name_a_tool_once(home):
    """A tool event's text starts with ``Bash: command``: its title ``tool · Bash`` is not put before it again
    (the prompt block reads it the same way)."""
    from hookrun import hook, tool_payload

    hook("tool", tool_payload("Bash", {"command": "psql -c 'select count(*) from refunds'"},
                              {"stdout": "  count\n-------\n    42\n", "stderr": ""}))
    write(home / "events" / "2026-11-20.jsonl", '{"id":"p1","ts":"2026-11-20T09:00:00","session_id":"sess-a",'
                                                '"type":"prompt","content":"count the refunds please"}\n')
    env = {"MEMSEARCH_MODEL": "none"}
    run("index", env=env)
    recent = run("recent", env=env).stdout
    tool = next(line for line in recent.splitlines() if "psql" in line)
    assert "event/tool" in tool and "Bash: psql -c" in tool
    assert "Bash: Bash" not in recent and "tool · Bash" not in recent
    assert "prompt: count the refunds please" in recent  # other events keep their label
    ident = tool.split()[0]
    timeline = run("timeline", ident, env=env).stdout
    assert "Bash: psql -c" in timeline and "Bash: Bash" not in timeline and "tool · Bash" not in timeline
