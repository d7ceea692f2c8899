"""Eight concurrent writers on one team database: two members, each with four hook processes (UserPromptSubmit,
PostToolUse, PostToolUseFailure, Stop) recording events through the hooks' real code path, while each member's
sync pushes and searches read the team store at the same time. Afterwards every event written is indexed exactly
once, locally and on the team store, and each member's events are theirs alone."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import traceback

import psycopg

from hookrun import events, no_hook_errors
from indexer.base.settings import resolve_settings

#: Events each hook process records.
PER_WRITER = 12
HOOKS = ("prompt", "tool", "tool-failure", "stop")

#: One hook process: the hooks' entry point called for each payload, stdin fed from a pipe as Claude Code does.
WRITER = """
import json, os, sys
from hooks.entry import main

hook, member, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
session = f"{member}-{hook}"
for i in range(count):
    base = {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/home/dev/payments-api",
            "permission_mode": "default"}
    if hook == "prompt":
        payload = {**base, "hook_event_name": "UserPromptSubmit",
                   "prompt": f"{member} asks how the deploy retries work, turn {i}"}
    elif hook == "stop":
        payload = {**base, "hook_event_name": "Stop", "stop_hook_active": False,
                   "last_assistant_message": f"{member}: the deploy retries three times, answer {i}"}
    else:
        payload = {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                   "tool_input": {"command": f"make deploy-{member}-{i}"}, "tool_use_id": f"toolu_{member}{i}"}
        if hook == "tool":
            payload["tool_response"] = {"stdout": f"deployed {member} build {i}", "stderr": "", "interrupted": False}
        else:
            payload.update(hook_event_name="PostToolUseFailure", error=f"deploy {member} {i} failed: timeout")
    read, write = os.pipe()
    os.write(write, json.dumps(payload).encode())
    os.close(write)
    sys.stdin = open(read, "rb")
    main(["tool" if hook == "tool-failure" else hook])
    sys.stdin.close()
"""


def _member_home(tmp_path, member: str, url: str):
    home = tmp_path / member
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "deploy.md").write_text(f"# Deploy\n\n{member}'s notes on how the deploy retries.\n")
    (home / "memsearch.toml").write_text(f'db_url = "{url}"\n')
    return home


def _team_events(admin_url: str, owner: str) -> dict[str, int]:
    """event id -> chunks holding it, for ``owner``'s events on the team store (as the superuser)."""
    with psycopg.connect(admin_url) as conn:
        return dict(conn.execute("SELECT event_id, count(*) FROM memsearch.chunks WHERE owner = %s AND kind = 'event'"
                                 " GROUP BY event_id", (owner,)).fetchall())


def _local_events(settings) -> dict[str, int]:
    from indexer.store.local import SqliteStore

    counts: dict[str, int] = {}
    with SqliteStore.open(settings.db_path, create=False) as local:
        for chunk in local.stored_chunks(kind="event"):
            counts[chunk.event_id] = counts.get(chunk.event_id, 0) + 1
    return counts


def test_eight_hook_writers_with_syncs_and_searches_index_every_event_once(team, tmp_path, fake):
    from indexer.pipeline import index
    from indexer.sync import sync
    from search_engine.search import search

    homes = {m: _member_home(tmp_path, m, team.urls[m]) for m in ("alice", "bob")}
    settings = {m: resolve_settings(home) for m, home in homes.items()}
    for member in homes:  # each member starts indexed and synced, as after `memsearch index`
        index(settings[member], embedder=fake)
        sync(settings[member])

    stop = threading.Event()
    failures: list[str] = []
    counts = {"syncs": 0, "searches": 0, "team_searches": 0}

    def keep_syncing(member: str) -> None:
        done = 0
        while not stop.is_set() or done < 2:  # at least twice, however fast the writers are
            done += 1
            try:
                sync(settings[member])
                counts["syncs"] += 1
            except Exception as exc:  # any failure of a sync racing the hooks is the defect under test
                failures.append(f"sync {member}: {exc!r}\n{traceback.format_exc()}")

    def keep_searching(member: str) -> None:
        done = 0
        while not stop.is_set() or done < 2:
            done += 1
            try:
                result = search(settings[member], "deploy retries", mode="bm25", k=5, embedder=None)
                counts["searches"] += 1
                counts["team_searches"] += result.health.store_reason is None
            except Exception as exc:
                failures.append(f"search {member}: {exc!r}\n{traceback.format_exc()}")

    env = {**os.environ, "MEMSEARCH_NO_SERVER": "1", "PYTHONPATH": os.getcwd()}
    threads = [threading.Thread(target=f, args=(m,)) for m in homes for f in (keep_syncing, keep_searching)]
    for t in threads:
        t.start()
    started = time.monotonic()
    try:
        writers = [subprocess.Popen([sys.executable, "-c", WRITER, hook, member, str(PER_WRITER)],
                                    env={**env, "MEMSEARCH_HOME": str(home)}, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
                   for member, home in homes.items() for hook in HOOKS]
        errors = [w.communicate(timeout=120)[1] for w in writers]
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    writing = time.monotonic() - started
    assert [w.returncode for w in writers] == [0] * 8
    assert errors == [b""] * 8
    assert failures == []
    assert counts["syncs"] >= 4 and counts["team_searches"] >= 4, (counts, writing)

    for member, home in homes.items():  # what the next `memsearch index` does: index, then push
        index(settings[member], embedder=fake)
        report = sync(settings[member])
        assert report.vectors_pending == 0
        no_hook_errors(home)
        written = [e["id"] for e in events(home)]
        assert len(written) == len(set(written)) == len(HOOKS) * PER_WRITER
        assert sorted(e["type"] for e in events(home)) == sorted(
            ["prompt"] * PER_WRITER + ["response"] * PER_WRITER + ["tool"] * 2 * PER_WRITER)
        assert _local_events(settings[member]) == dict.fromkeys(written, 1)
        assert _team_events(team.admin_url, member) == dict.fromkeys(written, 1)
    # each member's events stay theirs: bob's search on the team store finds none of alice's events
    found = search(settings["bob"], "alice deploy", mode="bm25", k=50, embedder=None)
    assert found.health.store_reason is None and found.hits
    assert all("alice" not in h.text for h in found.hits if h.kind == "event")
    print(f"\n8 writers x {PER_WRITER} events in {writing:.1f}s with {counts['syncs']} syncs and "
          f"{counts['searches']} searches ({counts['team_searches']} on the team store) running")
