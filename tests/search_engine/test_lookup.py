"""search_engine.lookup: show, timeline and get take only ids, never a path; a hostile id reads nothing outside the memory root."""

import subprocess

import pytest

from conftest import HOSTILE_IDS, MEMSEARCH
from indexer.base.errors import NotFound, UsageError
from indexer.base.settings import resolve_settings
from indexer.pipeline import index
from search_engine.lookup import get_many, show, timeline


@pytest.mark.parametrize("ident", HOSTILE_IDS)
def test_show_timeline_and_get_take_only_ids(linked_home, ident):
    index(resolve_settings(linked_home, model="none"), embedder=None)
    settings = resolve_settings(linked_home)
    with pytest.raises((UsageError, NotFound)):
        show(settings, ident)
    with pytest.raises((UsageError, NotFound)):
        timeline(settings, ident)
    try:
        assert get_many(settings, [ident]) == []
    except UsageError as exc:
        assert "invalid id" in str(exc)


def test_show_cli_rejects_a_path_with_one_line(linked_home):
    index(resolve_settings(linked_home, model="none"), embedder=None)
    for cmd in (["show", "../../etc/passwd"], ["timeline", "/etc/passwd"]):
        proc = subprocess.run([MEMSEARCH, *cmd], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.startswith("Error: invalid id") and proc.stderr.count("\n") == 1
        assert "root:" not in proc.stderr


def _cli(*args: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([MEMSEARCH, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MEMSEARCH_MODEL": "none"})


def test_a_short_prefix_is_told_the_four_character_rule_not_that_ids_are_hexadecimal(memory):
    """'3c6' is hexadecimal: what it lacks is length, in show, timeline, forget and MCP alike."""
    import json
    import os

    from conftest import mcp_rpc, mcp_session

    ident = get_many(resolve_settings(memory), [_some_id(memory)])[0].id
    for cmd in (["show", ident[:3]], ["timeline", ident[:3]], ["forget", ident[:3], "--dry-run"]):
        done = _cli(*cmd)
        assert done.returncode == 2 and done.stdout == "", done
        assert done.stderr == f"Error: invalid id '{ident[:3]}': an id prefix needs at least 4 characters\n", done
    assert _cli("show", ident[:4]).returncode == 0
    assert "ids are hexadecimal" in _cli("show", "zz-top").stderr
    with mcp_session(env={**os.environ, "MEMSEARCH_MODEL": "none"}) as (proc, _):
        short = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                               "params": {"name": "timeline", "arguments": {"id": ident[:3]}}})
        assert short["result"]["isError"] is True
        assert "an id prefix needs at least 4 characters" in json.dumps(short["result"]["content"])


def _some_id(home) -> str:
    from search_engine.search import search

    return search(resolve_settings(home, model="none"), "database", mode="bm25").hits[0].id


def test_show_timeline_get_and_forget_of_a_forgotten_id_say_it_was_forgotten_not_that_ids_change(memory):
    import json
    import os
    import time

    from conftest import mcp_rpc, mcp_session

    ident = _some_id(memory)
    forgot = _cli("forget", ident, "--yes")
    assert forgot.returncode == 0, forgot
    today = time.strftime("%Y-%m-%d")
    said = f"Error: memory {ident} was forgotten on {today} (`memsearch forget`): it is gone for good\n"
    for cmd in (["show", ident], ["timeline", ident], ["forget", ident, "--dry-run"], ["show", ident.upper()]):
        done = _cli(*cmd)
        assert done.returncode == 1 and done.stdout == "", done
        assert done.stderr == said, done
    never = _cli("show", "deadbeef0000")  # an id never known keeps the advice to find it again
    assert never.returncode == 1 and "ids change when their source changes" in never.stderr
    with mcp_session(env={**os.environ, "MEMSEARCH_MODEL": "none"}) as (proc, _):
        for n, (tool, arguments) in enumerate((("get", {"ids": [ident]}), ("timeline", {"id": ident}))):
            gone = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 2 + n, "method": "tools/call",
                                  "params": {"name": tool, "arguments": arguments}})
            assert gone["result"]["isError"] is True
            assert f"was forgotten on {today}" in json.dumps(gone["result"]["content"]), gone
