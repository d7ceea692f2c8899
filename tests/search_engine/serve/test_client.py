"""Settings travel with each request: one warm server, two projects with different ``.memsearch.toml`` tuning,
and each project's prompt gets from the server exactly what its own process would rank."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import MEMSEARCH
from indexer.base.settings import resolve_settings

PROMPTS = ["Why do we get database is locked errors during the nightly export?",
           "what prevents a shopper paying double when a checkout is retried",
           "how do we deploy the payments service and roll it back"]
SESSION = "sess-travel"
TUNING = {"a": "bm25_share = 0.2\ndedup_threshold = 0.5\n", "b": "fusion = \"rrf\"\nrrf_k = 2\nbm25_weight = 3.0\n"}


def _projects(tmp_path: Path, home: Path) -> dict[str, Path]:
    """Two projects with their own tuning. Their prompts are not recorded (``exclude_paths``; injection stays
    on), so every search, warm or cold, first or last, runs over the same index."""
    (home / "memsearch.toml").write_text(f"exclude_paths = [{str(tmp_path / 'project-*')!r}]\n")
    out = {}
    for name, toml in TUNING.items():
        folder = tmp_path / f"project-{name}"
        folder.mkdir()
        (folder / ".memsearch.toml").write_text(toml)
        out[name] = folder
    return out


def _serve(tmp_path: Path, env: dict[str, str]) -> subprocess.Popen:
    """A server started from a folder without a project file: its own tuning is the defaults."""
    server = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "120"], cwd=tmp_path, env={**os.environ, **env},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while subprocess.run([MEMSEARCH, "serve", "--status"], capture_output=True, env={**os.environ, **env}).returncode:
        assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.1)
    from search_engine.serve.client import request

    while not request(resolve_settings(), {"op": "ping"}, timeout=1.0):
        assert time.monotonic() < deadline, "the server does not answer"
        time.sleep(0.1)
    return server


def _stop(server: subprocess.Popen) -> None:
    server.terminate()
    server.wait(timeout=30)


def _recall(project: Path, prompt: str, monkeypatch):
    """The prompt hook's own code path, up to the gate, in the project's folder; and the block it injects."""
    from hooks import handlers
    from search_engine.context import format_context

    monkeypatch.chdir(project)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    # what is compared is the ranking, not the latency: a server slowed by a loaded machine must still answer
    monkeypatch.setattr(handlers, "SERVER_TIMEOUT", 30.0)
    found = handlers.recall({"session_id": SESSION, "cwd": str(project), "hook_event_name": "UserPromptSubmit",
                             "prompt": prompt})
    assert found is not None
    block, _ = format_context(found.query, found.hits, max_items=found.max_items, project=found.project,
                              token_budget=found.token_budget)
    injected = handlers.prompt({"session_id": SESSION, "cwd": str(project), "hook_event_name": "UserPromptSubmit",
                                "prompt": prompt})
    assert (json.loads(injected)["hookSpecificOutput"]["additionalContext"] if injected else "") == block
    return [(h.id, round(h.score, 6), h.bm25_rank, h.vector_rank) for h in found.hits], block


#: What the warm prompt hook must not import: the server searches and renders the block. (The projects here have
#: a ``.memsearch.toml``, so reading settings imports ``tomllib``.)
NOT_ON_THE_WARM_PATH = ("dataclasses", "inspect", "indexer.base.types", "search_engine.search", "search_engine.query",
                        "search_engine.context", "search_engine.lexical", "indexer.pipeline", "apsw", "orjson",
                        "numpy")


def _warm_hook_imports(project: Path, prompt: str) -> tuple[str, list[str]]:
    """A prompt hook process in ``project``: what it injected, and which of NOT_ON_THE_WARM_PATH it imported."""
    probe = ("import sys; sys.argv = ['memsearch-hook', 'prompt']; from hooks.entry import main; main(); "
             f"print(','.join(m for m in {NOT_ON_THE_WARM_PATH!r} if m in sys.modules), file=sys.stderr)")
    payload = json.dumps({"session_id": SESSION, "cwd": str(project), "hook_event_name": "UserPromptSubmit",
                          "prompt": prompt})
    proc = subprocess.run([sys.executable, "-c", probe], input=payload, capture_output=True, text=True, timeout=60,
                          cwd=project, env={**os.environ, "CLAUDE_PROJECT_DIR": str(project)})
    imported = [m for m in proc.stderr.strip().splitlines()[-1].split(",") if m] if proc.stderr.strip() else []
    return proc.stdout, imported


def _no_local_search(*args, **kwargs):
    raise AssertionError("the hook searched in its own process: the warm server did not answer")


def test_the_hook_ranks_each_projects_prompt_the_same_through_the_server_as_in_its_own_process(
        sample_home, tmp_path, monkeypatch):
    """BM25 on both paths (no model): the hook's cold path (no server) and its warm path (one server for both
    projects) inject the same block, with the same hits in the same order with the same scores."""
    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    subprocess.run([MEMSEARCH, "index"], check=True, capture_output=True, timeout=300)
    projects = _projects(tmp_path, sample_home)
    cold = {(p, q): _recall(folder, q, monkeypatch) for p, folder in projects.items() for q in PROMPTS}
    assert any(cold[("a", q)][0] != cold[("b", q)][0] for q in PROMPTS), \
        "the two projects' tuning ranks some prompt differently (else this test could not tell them apart)"
    assert any(block for _, block in cold.values()), "something is injected"
    server = _serve(tmp_path, {"MEMSEARCH_MODEL": "none"})
    try:
        import search_engine.search

        monkeypatch.setattr(search_engine.search, "search", _no_local_search)
        warm = {(p, q): _recall(folder, q, monkeypatch) for p, folder in projects.items() for q in PROMPTS}
        injected, imported = _warm_hook_imports(projects["a"], PROMPTS[0])
    finally:
        _stop(server)
    assert warm == cold
    assert imported == [] and "memory-context" in injected, (imported, injected)


@pytest.mark.usefixtures("real_embedder")
def test_the_hooks_hybrid_hits_from_the_server_are_what_each_project_ranks_itself(
        sample_home, tmp_path, monkeypatch, real_embedder):
    """With the model: the hook's hybrid hits from one warm server equal a hybrid search in the project's own
    process with the project's settings (the cold path of ``memsearch search``), less the feedback list, which
    the prompt hook never runs (its latency budget)."""
    from search_engine.filters import Filters
    from search_engine.search import search

    subprocess.run([MEMSEARCH, "index"], check=True, capture_output=True, timeout=300)
    projects = _projects(tmp_path, sample_home)
    server = _serve(tmp_path, {})
    try:
        warm = {(p, q): _recall(folder, q, monkeypatch) for p, folder in projects.items() for q in PROMPTS}
    finally:
        _stop(server)
    for (p, q), (hits, _) in warm.items():
        monkeypatch.chdir(projects[p])
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(projects[p]))
        settings = resolve_settings()
        assert settings.origins["bm25_share" if p == "a" else "fusion"] == "project"
        own = search(settings.replace(feedback_share=0.0), q, mode="hybrid", k=settings.max_items * 3,
                     filters=Filters(exclude_session=SESSION), embedder=real_embedder)
        assert own.mode_used == "hybrid"
        assert hits == [(h.id, round(h.score, 6), h.bm25_rank, h.vector_rank) for h in own.hits], (p, q)
    assert any(warm[("a", q)][0] != warm[("b", q)][0] for q in PROMPTS)
    assert all(any(rank[3] is not None for rank in hits) for hits, _ in warm.values()), "hybrid, from the server"


def test_the_warm_server_renders_the_block_the_cold_path_makes(sample_home, monkeypatch):
    """The prompt hook asks the server for its block; it is the block the hook's own BM25 path makes, and the
    eval's ``recall`` gets the same hits back as real :class:`Hit` objects."""
    import json

    import orjson

    from hooks import handlers
    from indexer.base.settings import resolve_settings
    from indexer.base.types import Hit
    from indexer.pipeline import index
    from search_engine.context import format_context
    from search_engine.filters import Filters
    from search_engine.query import ParsedQuery
    from search_engine.search import search
    from search_engine.serve.server import Server

    monkeypatch.setenv("MEMSEARCH_MODEL", "none")  # the server answers hybrid requests by BM25: as the cold path
    monkeypatch.setenv("MEMSEARCH_HOME", str(sample_home))
    settings = resolve_settings(sample_home)
    index(settings, embedder=None)
    server = Server(settings)
    server.load()
    asked = []

    def over_the_socket(settings, payload, timeout=0.5):
        asked.append(payload)
        return orjson.loads(orjson.dumps(server.handle(payload)))

    monkeypatch.setattr(handlers, "request", over_the_socket)
    text = "why do exports hit locked databases"
    payload = {"session_id": "sess-b", "cwd": "/home/dev/payments-api", "prompt": text}
    found = handlers.recall(payload)
    cold = search(settings, ParsedQuery.parse(text), mode="bm25", k=found.max_items * 3,
                  filters=Filters(exclude_session="sess-b"), embedder=None)
    assert found.hits and all(type(hit) is Hit for hit in found.hits)
    assert found.hits == list(cold.hits)
    block, shown = format_context(found.query, list(cold.hits), max_items=found.max_items, project="payments-api",
                                  token_budget=found.token_budget)
    assert shown, "the prompt finds something to inject"
    asked.clear()
    output = handlers.prompt(payload)
    assert [a.get("render") for a in asked if a["op"] == "search"] == [
        {"project": "payments-api", "max_items": found.max_items, "token_budget": found.token_budget}]
    assert json.loads(output)["hookSpecificOutput"]["additionalContext"] == block


@pytest.mark.parametrize("render", [{"project": 3, "max_items": 5, "token_budget": 100},
                                    {"project": None, "max_items": "5", "token_budget": 100},
                                    {"project": None, "max_items": 5, "token_budget": -1}, "yes"])
def test_a_bad_render_request_gets_a_one_line_error(sample_home, monkeypatch, render):
    from indexer.base.settings import resolve_settings
    from search_engine.serve.server import Server

    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    server = Server(resolve_settings(sample_home))
    server.load()
    answer = server.handle({"op": "search", "query": "export", "render": render})
    assert answer["ok"] is False and "render needs" in answer["error"] and "\n" not in answer["error"]


def test_the_prompt_hook_asks_the_server_for_its_search_without_the_feedback_list(sample_home, monkeypatch):
    """The feedback list (a second BM25 search, ``feedback_share``) is for ``memsearch search`` and MCP; the prompt
    hook asks the warm server with it off, whatever the settings say, to keep its latency."""
    from hooks import handlers

    monkeypatch.setenv("MEMSEARCH_FEEDBACK_SHARE", "0.5")
    sent: list[dict] = []
    monkeypatch.setattr(handlers, "request", lambda settings, req, timeout: sent.append(req))
    handlers.recall({"session_id": SESSION, "cwd": str(sample_home), "hook_event_name": "UserPromptSubmit",
                     "prompt": "which ferry goes to the islands"})
    assert [(r["op"], r["mode"], r["settings"]["feedback_share"]) for r in sent] == [("search", "hybrid", 0.0)]
    assert resolve_settings().feedback_share == 0.5
