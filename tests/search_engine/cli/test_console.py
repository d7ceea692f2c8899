"""The console script: ``memsearch search`` answered by a running server without the Typer app, with the same
output, warnings and errors as the Typer app gives; everything else goes to the Typer app."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from conftest import MEMSEARCH
from search_engine.cli.console import search_parser

#: ``memsearch search`` argument lists whose output both paths must print the same.
VARIANTS = [
    ["database locked nightly export"],
    ["database locked nightly export", "--json"],
    ["payments retry", "--mode", "bm25", "-k", "3", "--format", "index"],
    ["payments retry", "--limit=2", "--explain", "--json"],
    ["--kind", "note", "deploy the payments service", "--all-status"],
    ["export", "--since", "2020-01-01", "--until", "2099-12-31", "--project", "payments-api", "--json"],
    ["export", "--category", "incident", "--raw"],
]


def test_the_fast_parser_takes_the_options_the_typer_command_declares():
    """Option names, flag or value, and defaults: the same in both parsers (a new option in one must be added to
    the other, or searches with it would be parsed differently)."""
    import typer.main

    from search_engine.cli.main import app

    search = typer.main.get_command(app).commands["search"]
    declared = {tuple(sorted(p.opts)): (p.is_flag, None if p.default is None else str(p.default))
                for p in search.params if p.param_type_name == "option"}
    fast = {tuple(sorted(a.option_strings)): (a.nargs == 0, None if a.default is None else str(a.default))
            for a in search_parser()._actions if a.option_strings}
    assert fast == declared and len(fast) >= 15


def _run(argv, env, *, normalise=True):
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    if not normalise:
        return proc
    # the Typer app run as a module names itself so in its usage lines (and pads its boxes to that name)
    for stream in ("stdout", "stderr"):
        text = getattr(proc, stream).replace("python -m search_engine.cli.main", "memsearch")
        setattr(proc, stream, " ".join(text.replace("─", "").split()))
    return proc


@pytest.fixture
def served(memory, tmp_path):
    """The sample memory (BM25 only) with a running server; the environment to call it with."""
    env = {**os.environ, "MEMSEARCH_MODEL": "none"}
    env.pop("MEMSEARCH_NO_SERVER", None)
    server = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "120"], env=env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _run([MEMSEARCH, "serve", "--status"], env).returncode:
        assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.1)
    yield env
    server.terminate()
    server.wait(timeout=30)


def test_a_search_gets_the_same_answer_from_the_server_path_as_from_the_typer_app(served):
    probe = ("import sys; from search_engine.cli.console import main; sys.argv = ['memsearch', *sys.argv[1:]]; "
             "main(); print(','.join(m for m in ('typer', 'click', 'pydantic', 'rich', 'apsw', 'search_engine.search') "
             "if m in sys.modules), file=sys.stderr)")
    for argv in VARIANTS:
        fast = _run([sys.executable, "-c", probe, "search", *argv], served, normalise=False)
        typer_app = _run([sys.executable, "-m", "search_engine.cli.main", "search", *argv], served, normalise=False)
        assert fast.returncode == typer_app.returncode == 0, (argv, fast.stderr, typer_app.stderr)
        assert fast.stdout == typer_app.stdout and fast.stdout.strip(), argv
        imported = fast.stderr.strip().splitlines()[-1] if fast.stderr.strip() else ""
        assert imported == "", (argv, imported)


@pytest.mark.parametrize("argv", [
    ["export", "--since", "last blue moon"],  # a bad filter: the Typer app's error line and exit code
    ["export", "--format", "yaml"],
    ["export", "-k", "many"],
    ["export", "--no-such-option"],
    ["--help"],
    [],
])
def test_what_the_fast_parser_is_unsure_of_goes_to_the_typer_app(served, argv):
    fast = _run([MEMSEARCH, "search", *argv], served)
    typer_app = _run([sys.executable, "-m", "search_engine.cli.main", "search", *argv], served)
    assert (fast.returncode, fast.stdout, fast.stderr) == (typer_app.returncode, typer_app.stdout, typer_app.stderr)
    assert fast.returncode != 0 or "Usage" in fast.stdout
    assert "Traceback" not in fast.stderr


def test_a_project_file_refusal_is_warned_on_the_server_path_too(served, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".memsearch.toml").write_text('db_url = "postgresql://x@y/z"\n')
    fast = subprocess.run([MEMSEARCH, "search", "export"], capture_output=True, text=True, env=served, cwd=project,
                          timeout=120)
    typer_app = subprocess.run([sys.executable, "-m", "search_engine.cli.main", "search", "export"],
                               capture_output=True, text=True, env=served, cwd=project, timeout=120)
    assert fast.returncode == 0 and "Warning:" in fast.stderr
    assert (fast.stdout, fast.stderr) == (typer_app.stdout, typer_app.stderr)
