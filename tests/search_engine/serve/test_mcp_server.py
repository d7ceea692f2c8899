"""search_engine.serve.mcp_server: the MCP server over stdio as Claude Code runs it, a real process answering JSON-RPC."""

import json
import os
import subprocess

from conftest import HOSTILE_IDS, MEMSEARCH, mcp_rpc, mcp_session
from indexer.base.settings import resolve_settings
from indexer.pipeline import index


def test_mcp_server_answers_over_stdio(memory):
    with mcp_session(env={**os.environ, "MEMSEARCH_MODEL": "none"}) as (proc, init):
        assert "three steps" in init["result"]["instructions"]
        tools = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = {t["name"]: t for t in tools["result"]["tools"]}
        assert set(listed) == {"search", "timeline", "get", "recent"}
        params = listed["search"]["inputSchema"]["properties"]
        assert "hybrid" in params["mode"]["description"] and params["k"]["maximum"] == 50
        assert "YYYY-MM-DD" in params["since"]["description"]
        found = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                            "params": {"name": "search", "arguments": {"query": "database locked", "k": 2}}})
        text = found["result"]["content"][0]["text"]
        assert text.startswith("mode_used: bm25") and len(text.splitlines()) == 3
        first_id = text.splitlines()[1].split()[0]
        got_text = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 40, "method": "tools/call",
                                  "params": {"name": "get", "arguments": {"ids": [first_id]}}})
        snippet = " ".join(got_text["result"]["structuredContent"]["result"][0]["text"].split())[:40]
        assert snippet.replace("<", "&lt;").replace(">", "&gt;") in text.splitlines()[1]
        wrong = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 41, "method": "tools/call",
                               "params": {"name": "timeline", "arguments": {"id": "not-an-id"}}})
        assert wrong["result"]["isError"] is True
        message = wrong["result"]["content"][0]["text"]
        assert "invalid id 'not-an-id'" in message and "\n" not in message and "Traceback" not in message
        vector = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 42, "method": "tools/call",
                                "params": {"name": "search", "arguments": {"query": "x", "mode": "vector"}}})
        assert vector["result"]["isError"] is True and "embedding model" in vector["result"]["content"][0]["text"]
        latest = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 43, "method": "tools/call",
                                "params": {"name": "recent", "arguments": {"limit": 3, "project": "*"}}})
        lines = latest["result"]["content"][0]["text"].splitlines()
        assert lines[0] == "project: all" and len(lines) == 4
        got = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                          "params": {"name": "get", "arguments": {"ids": [first_id] * 30}}})
        assert first_id in json.dumps(got["result"])
        assert len(got["result"]["structuredContent"]["result"]) == 1  # the same id thirty times is one item
        long_id = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 44, "method": "tools/call",
                                 "params": {"name": "timeline", "arguments": {"id": "a" * 100_000}}})
        assert long_id["result"]["isError"] is True and len(json.dumps(long_id)) < 1_000  # not echoed back whole
        line = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                           "params": {"name": "timeline", "arguments": {"id": first_id, "window": 2}}})
        assert f"> {first_id}" in line["result"]["content"][0]["text"]
        bad = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                          "params": {"name": "get", "arguments": {"ids": ["../../etc/passwd"]}}})
        assert "etc/passwd" not in json.dumps(bad.get("result", {}).get("structuredContent", {}))


def test_mcp_argument_errors_are_one_line_and_an_unknown_id_is_said(memory):
    with mcp_session(env={**os.environ, "MEMSEARCH_MODEL": "none"}) as (proc, _):
        expected = {
            ("search", '{"query": "x", "mode": "fuzzy"}'): "invalid mode 'fuzzy': use hybrid, bm25 or vector",
            ("search", '{"query": "x", "k": 0}'): "invalid k 0: it must be at least 1",
            ("search", '{"query": "x", "k": 5000}'): "invalid k 5000: it must be at most 50",
            ("search", '{"query": "x", "kind": "notes"}'): "invalid kind 'notes': use note, fact or event",
            ("get", '{"id": "5093c47e168c"}'): "missing argument ids",
            ("get", '{"ids": ["0123456789ab"]}'): "no memory with id 0123456789ab",
        }
        for n, ((tool, arguments), message) in enumerate(expected.items(), start=2):
            reply = mcp_rpc(proc, {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                   "params": {"name": tool, "arguments": json.loads(arguments)}})
            text = reply["result"]["content"][0]["text"]
            assert reply["result"]["isError"] is True and message in text and "\n" not in text, text
            assert "pydantic" not in text


def test_mcp_hybrid_search_keeps_one_loaded_model(sample_home):
    subprocess.run([MEMSEARCH, "index"], check=True, capture_output=True, timeout=300)
    with mcp_session() as (proc, _):
        for n, query in enumerate(["what prevents a shopper paying double", "why do exports hit locked databases"]):
            found = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                                   "params": {"name": "search", "arguments": {"query": query, "k": 3}}})
            text = found["result"]["content"][0]["text"]
            assert text.startswith("mode_used: hybrid"), text
        assert "Provider calls" in mcp_rpc(proc, {"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": "what prevents a shopper paying double", "k": 1}}}
        )["result"]["content"][0]["text"]


def test_mcp_tools_read_nothing_outside_the_memory_root(linked_home):
    index(resolve_settings(linked_home, model="none"), embedder=None)
    with mcp_session(env={**os.environ, "MEMSEARCH_MODEL": "none"}) as (proc, _):
        replies = [
            mcp_rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "search", "arguments": {"query": "swordfish launch code"}}}),
            mcp_rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                        "params": {"name": "get", "arguments": {"ids": HOSTILE_IDS}}}),
            mcp_rpc(proc, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                        "params": {"name": "timeline", "arguments": {"id": "../../etc/passwd"}}}),
        ]
    assert replies[0]["result"]["content"][0]["text"].endswith("no results")
    dumped = json.dumps(replies)
    assert "swordfish" not in dumped and "root:x:0" not in dumped
    for reply in replies[1:]:  # a tool error, or nothing found: never a file's content
        result = reply["result"]
        assert result.get("isError") is True or result.get("structuredContent", {}).get("result") == []


def _raw_exchange(proc, line: bytes, wait: float = 20) -> dict:
    """Send one raw line and read the one line that answers it; no answer within ``wait`` seconds fails the test
    (instead of hanging it, as a client of a server that drops the line would hang)."""
    import threading

    proc.stdin.write(line + b"\n")
    proc.stdin.flush()
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(wait)
    assert got and got[0], f"no answer to {line[:60]!r} within {wait} s"
    return json.loads(got[0])


def test_mcp_answers_a_line_it_cannot_parse_and_serves_the_next(memory):
    """JSON-RPC 2.0: a line that is not JSON gets a Parse error with a null id (the SDK's transport dropped it and
    the client waited forever); the server goes on with the next line."""
    parse_error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    with mcp_session(env={**os.environ, "MEMSEARCH_MODEL": "none"}) as (proc, _):
        for line in (b"{not json", b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"', b"\xff\xfe\x00",
                     b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"n": "a\x01b"}}'):
            assert _raw_exchange(proc, line) == parse_error, line
        assert _raw_exchange(proc, b"[1, 2]") == {"jsonrpc": "2.0", "id": None,
                                                  "error": {"code": -32600, "message": "Invalid Request"}}
        assert _raw_exchange(proc, b'{"jsonrpc": "1.0", "id": 4, "method": "ping"}')["error"]["code"] == -32600
        found = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                               "params": {"name": "search", "arguments": {"query": "database locked", "k": 1}}})
        assert found["result"]["isError"] is False and len(found["result"]["content"][0]["text"].splitlines()) >= 2


def test_mcp_replaces_a_lone_surrogate_in_a_request_and_answers_it(memory):
    """``"\\ud800"`` is valid JSON text that pydantic's parser refuses (and UTF-8 cannot carry): the request is
    served with U+FFFD in its place."""
    with mcp_session(env={**os.environ, "MEMSEARCH_MODEL": "none"}) as (proc, _):
        line = b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get", "arguments": ' \
               b'{"ids": ["abcd\\ud800"]}}}'
        unknown = _raw_exchange(proc, line)
        assert unknown["id"] == 2 and unknown["result"]["isError"] is True
        assert "abcd\ufffd" in unknown["result"]["content"][0]["text"]
        searched = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": "database \ud800 locked", "k": 1}}})
        assert searched["result"]["isError"] is False
        assert searched["result"]["content"][0]["text"].startswith("mode_used: bm25")
        paired = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "get", "arguments": {"ids": ["abcd\U0001f600"]}}})  # a proper pair is no lone surrogate
        assert "abcd\U0001f600" in paired["result"]["content"][0]["text"]


def _search_text(proc, query: str, n: int = 2) -> str:
    reply = mcp_rpc(proc, {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                           "params": {"name": "search", "arguments": {"query": query, "k": 3}}})
    assert reply["result"]["isError"] is False, reply
    return reply["result"]["content"][0]["text"]


def test_mcp_search_says_when_the_index_was_never_built(home):
    """As the CLI does: an empty answer is never ambiguous."""
    with mcp_session(env={**os.environ, "MEMSEARCH_MODEL": "none"}) as (proc, _):
        lines = _search_text(proc, "database locked").splitlines()
    assert lines[0].startswith("mode_used: bm25")
    assert lines[1:] == ["note: the index was never built; run `memsearch index`", "no results"]


def test_mcp_search_says_the_team_database_was_unreachable_and_answers_locally(memory):
    closed = "postgresql://alice:alice-pw-Zq9@127.0.0.1:1/nowhere"  # nothing listens on port 1
    with mcp_session(env={**os.environ, "MEMSEARCH_MODEL": "none", "MEMSEARCH_DB_URL": closed}) as (proc, _):
        text = _search_text(proc, "database locked")
    lines = text.splitlines()
    assert lines[1].startswith("note: cannot reach the team database postgresql://alice:***@127.0.0.1:1/nowhere")
    assert lines[1].endswith(": searched the local index")
    assert len(lines) >= 3 and not lines[2].startswith("note:") and lines[2] != "no results"  # the local hits
    assert "alice-pw" not in text


def test_mcp_search_has_no_note_when_there_is_nothing_to_say(memory):
    with mcp_session(env={**os.environ, "MEMSEARCH_MODEL": "none"}) as (proc, _):
        assert "note:" not in _search_text(proc, "database locked")


def test_mcp_get_skips_a_malformed_or_unknown_id_and_says_so(memory):
    """The schema says unknown ids are skipped: one malformed id among good ones failed the whole call."""
    with mcp_session(env={**os.environ, "MEMSEARCH_MODEL": "none"}) as (proc, _):
        found = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                               "params": {"name": "search", "arguments": {"query": "database locked", "k": 1}}})
        good = found["result"]["content"][0]["text"].splitlines()[1].split()[0]
        got = mcp_rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "get", "arguments": {"ids": [good, "zzzz", "0123456789ab", "z" * 500]}}})
    assert got["result"].get("isError") is not True
    items = got["result"]["structuredContent"]["result"]
    assert items[0]["id"] == good and items[0]["text"]
    skipped = {item["id"]: item["skipped"] for item in items[1:]}
    assert list(skipped) == ["zzzz", "0123456789ab", "z" * 40 + "…"]
    assert skipped["zzzz"].startswith("invalid id 'zzzz': ids are hexadecimal")
    assert skipped["0123456789ab"].startswith("no memory with id 0123456789ab")
    assert len(json.dumps(got)) < 5_000  # a long id is not echoed back whole
