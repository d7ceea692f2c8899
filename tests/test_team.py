"""The team memory wired in: the ``db_url`` setting (never from a project file, never printed with its password),
``memsearch sync`` pushing the local index to a real PostgreSQL + pgvector without loss (also after a kill -9 of
the sync or the server stopped mid-sync), and search reading the team store, falling back to the local index when
the server cannot be reached."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid

import pytest

from conftest import MEMSEARCH, TEAM_PASSWORDS
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
    assert resolve_settings(home, strict=False).db_url is None


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


# -- 2. sync without loss ----------------------------------------------------------------------------------------

psycopg = pytest.importorskip("psycopg", reason="the team extra (psycopg, pgvector) is not installed")


def note_files(home, n: int, version: str = "v1") -> None:
    for i in range(n):
        write(home / "notes" / f"n{i:02d}.md", f"# Note {i}\n\nThe {version} note about topic{i} and retries.\n\n"
                                              f"## Detail\n\nMore {version} text on topic{i}.\n")


def local_rows(settings) -> tuple[dict[str, tuple], dict[str, bytes]]:
    """The local index's chunks (uid -> source, hash, text, reply_to) and its vectors (hash -> float32 bytes)."""
    from indexer.store.local import SqliteStore

    with SqliteStore.open(settings.db_path, create=False) as local:
        chunks = {c.uid: (c.file, c.hash, c.text, c.reply_to) for c in local.stored_chunks()}
        model = local.vector_model()
        vectors = local.stored_vectors(model, sorted({c[1] for c in chunks.values()})) if model else {}
    return chunks, vectors


def team_rows(admin_url: str, owner: str = "alice") -> tuple[dict[str, tuple], dict[str, bytes], list[str]]:
    """What the team store holds for ``owner`` (as the superuser, which row-level security does not filter):
    chunks (uid -> source without the machine, hash, text, reply_to), every vector, and the chunk uids (duplicates
    kept)."""
    import numpy as np

    with psycopg.connect(admin_url) as conn:
        rows = conn.execute("SELECT uid, source, hash, text, reply_to FROM memsearch.chunks WHERE owner = %s",
                            (owner,)).fetchall()
        vectors = conn.execute("SELECT hash, embedding::text FROM memsearch.vectors").fetchall()
    chunks = {uid: (source.split(":", 1)[1], h, text, reply) for uid, source, h, text, reply in rows}
    as_bytes = {h: np.asarray(json.loads(v), dtype=np.float32).tobytes() for h, v in vectors if v is not None}
    return chunks, as_bytes, [r[0] for r in rows]


def assert_same_as_local(settings, admin_url: str) -> None:
    chunks, vectors = local_rows(settings)
    remote, remote_vectors, uids = team_rows(admin_url)
    assert remote == chunks
    assert len(uids) == len(set(uids))
    assert {h: remote_vectors.get(h) for h in vectors} == vectors  # the local vectors, bit for bit


def write(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def synced_home(home, team, fake):
    """A memory root of 30 notes and a few events indexed with the fake embedder, ``db_url`` = alice's."""
    from indexer.pipeline import index

    note_files(home, 30)
    write(home / "events" / "2026-11-20.jsonl", "".join(
        json.dumps({"id": f"e{i}", "ts": f"2026-11-20T10:0{i}:00", "session_id": "s1", "type": "prompt",
                    "content": f"event {i} about the deploy"}) + "\n" for i in range(3)))
    (home / "memsearch.toml").write_text(f'db_url = "{team.urls["alice"]}"\n')
    settings = resolve_settings(home)
    index(settings, embedder=fake)
    return settings


def test_sync_sends_the_local_index_then_only_what_changed(synced_home, team, fake):
    from indexer.pipeline import index
    from indexer.sync import sync

    settings, home = synced_home, synced_home.home
    first = sync(settings)
    chunks, vectors = local_rows(settings)
    assert (first.sources_sent, first.chunks_added, first.vectors_sent) == (31, len(chunks), len(vectors))
    assert first.vectors_pending == 0 and first.model == fake.model_id
    assert_same_as_local(settings, team.admin_url)

    again = sync(settings)
    assert (again.sources_sent, again.chunks_added, again.chunks_removed, again.vectors_sent) == (0, 0, 0, 0)
    assert again.sources_unchanged == 31

    write(home / "notes" / "n03.md", "# Note 3\n\nRewritten entirely: the cache is warmed at start.\n")
    (home / "notes" / "n04.md").unlink()
    with open(home / "events" / "2026-11-20.jsonl", "a") as log:
        log.write(json.dumps({"id": "e9", "ts": "2026-11-20T11:00:00", "session_id": "s1", "type": "response",
                              "content": "the deploy went out"}) + "\n")
    index(settings, embedder=fake)
    third = sync(settings)
    assert (third.sources_sent, third.sources_deleted) == (2, 1)
    assert third.chunks_added == 2 and third.vectors_sent == 2  # the new note chunk and the new event
    assert_same_as_local(settings, team.admin_url)
    # the response carries the turn it replies to, with the hash (and so the vector) that goes with it
    assert [c[3] for c in team_rows(team.admin_url)[0].values() if c[2] == "the deploy went out"] == [
        "event 2 about the deploy"]
    # the team store ranks it: alice finds her rewritten note by its new words
    from search_engine.filters import Filters
    from search_engine.query import content_terms, terms

    alice = team.store("alice")
    found = alice.fetch_hits([s.id for s in alice.lexical_top_k(content_terms(terms("cache warmed")), "AND",
                                                                 Filters(), 5)])
    assert [h.path for h in found.values()] == ["notes/n03.md"]



def test_a_sync_leaves_no_vector_that_no_chunk_holds_and_keeps_those_moved_or_held_by_another_member(
        synced_home, team, fake):
    """What a sync removes (a deleted note, a rewritten one's old paragraphs) takes its vectors with it once the
    sync is done, as a forget does; a renamed note keeps its vectors (its content is held again, not sent again),
    and so does content bob's chunk holds."""
    from indexer.pipeline import index
    from indexer.store import ChunkRow, SourceState
    from indexer.sync import sync

    settings, home = synced_home, synced_home.home
    sync(settings)
    before, _ = local_rows(settings)
    on_team = set(team_rows(team.admin_url)[1])
    deleted = {h for (path, h, _, _) in before.values() if path.endswith("/n04.md")}
    rewritten = {h for (path, h, _, _) in before.values() if path.endswith("/n03.md")}
    moved = {h for (path, h, _, _) in before.values() if path.endswith("/n05.md")}
    shared_by_bob = sorted(deleted)[0]
    team.store("bob").write_batch(SourceState(path="bob:/b/copy.md", source="notes", mtime_ns=1, size=1),
                                  [ChunkRow(uid="b1", hash=shared_by_bob, kind="note", text="bob's copy", path="copy.md")])
    (home / "notes" / "n04.md").unlink()
    write(home / "notes" / "n03.md", "# Note 3\n\nRewritten entirely: the cache is warmed at start.\n")
    (home / "notes" / "n05.md").rename(home / "notes" / "n05-renamed.md")
    index(settings, embedder=fake)
    report = sync(settings)
    _, local_vectors = local_rows(settings)
    _, remote_vectors, _ = team_rows(team.admin_url)
    assert set(remote_vectors) == set(local_vectors) | {shared_by_bob}
    assert moved <= set(remote_vectors) and not (rewritten | deleted) - moved - {shared_by_bob} & set(remote_vectors)
    assert report.vectors_sent == len(set(local_vectors) - on_team) > 0  # the renamed note's were not sent again



def test_a_sync_that_changes_nothing_does_not_look_for_missing_vectors_unless_they_may_be(synced_home, team, fake,
                                                                                          monkeypatch):
    """The look for content the team store lacks a vector for (an anti-join of every visible chunk) is skipped by
    a sync that sends and removes nothing while the local vectors are those the last complete vector step saw;
    it runs again when they change (content embedded locally after the sync), when the last sync stopped before
    its vector step (chunks sent, vectors not), and once a day whatever happened (a vector an administrator
    removed comes back)."""
    import indexer.sync as sync_module
    from indexer.pipeline import index
    from indexer.store.postgres import PgStore
    from indexer.sync import sync

    looked: list[str] = []
    real = PgStore.pending_hashes
    monkeypatch.setattr(PgStore, "pending_hashes", lambda self, model: looked.append(model) or real(self, model))
    settings, home = synced_home, synced_home.home
    sync(settings)
    assert looked
    looked.clear()
    quiet = sync(settings)
    assert not looked and quiet.vectors_sent == 0 and quiet.vectors_pending == 0 and quiet.sources_unchanged == 31

    # a note indexed without its vector, sent; its vector made locally afterwards: the next sync sends it
    write(home / "notes" / "late.md", "# Late\n\nA note embedded after it was synced.\n")
    index(settings, embedder=None)
    assert sync(settings).vectors_pending == 1 and looked
    looked.clear()
    index(settings, embedder=fake)  # the source unchanged: only its vector is new
    assert sync(settings).vectors_sent == 1 and looked

    # a sync that dies after sending chunks, before its vector step: the next one looks, though it sends nothing
    write(home / "notes" / "cut.md", "# Cut\n\nSent by a sync that died before its vectors.\n")
    index(settings, embedder=fake)
    monkeypatch.setattr(sync_module, "_push_vectors", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        sync(settings)
    monkeypatch.undo()
    monkeypatch.setattr(PgStore, "pending_hashes", lambda self, model: looked.append(model) or real(self, model))
    looked.clear()
    resumed = sync(settings)
    assert resumed.sources_sent == 0 and resumed.vectors_sent == 1 and resumed.vectors_pending == 0 and looked

    # a vector removed by the administrator: back with the daily look
    with psycopg.connect(team.admin_url, autocommit=True) as admin:
        admin.execute("DELETE FROM memsearch.vectors WHERE hash = (SELECT hash FROM memsearch.vectors LIMIT 1)")
    assert sync(settings).vectors_sent == 0
    monkeypatch.setattr(sync_module, "VECTOR_CHECK_EVERY", 0)
    assert sync(settings).vectors_sent == 1


def test_sync_cli_summary_json_and_an_unreachable_database(synced_home, team):
    done = run("sync")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("synced to postgresql://alice:***@127.0.0.1:") and "31 sources sent" in done.stdout
    assert len(done.stdout.splitlines()) == 1
    as_json = json.loads(run("sync", "--json").stdout)
    assert as_json["sources_unchanged"] == 31 and as_json["sources_sent"] == 0
    assert "alice-pw" not in done.stdout + json.dumps(as_json)

    closed = "postgresql://alice:alice-pw-Zq9@127.0.0.1:1/nowhere"  # nothing listens on port 1
    down = run("sync", "--db-url", closed)
    assert down.returncode == 1 and down.stdout == ""
    assert down.stderr.count("\n") == 1 and down.stderr.startswith("Error: cannot reach the team database")
    assert "alice-pw" not in down.stderr and "Traceback" not in down.stderr
    write(synced_home.home / "notes" / "new.md", "# New\n\nA note written while the server was away.\n")
    indexed = run("index", "--db-url", closed, env={"MEMSEARCH_MODEL": "none"})
    assert indexed.returncode == 0, indexed.stderr
    last = indexed.stdout.splitlines()[-1]
    assert last.startswith("team: cannot reach the team database") and "the sync is pending" in last
    assert "alice-pw" not in indexed.stdout + indexed.stderr
    assert "files: " in indexed.stdout and "1 changed" in indexed.stdout  # indexed locally all the same


def _wait_for(predicate, timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


#: ``memsearch sync`` sending one source per transaction (a sync sends a few thousand chunks per transaction; these
#: notes are a few chunks each), so a sync stopped on one source has committed the ones before it.
ONE_SOURCE_PER_TRANSACTION = ("import sys, indexer.sync; indexer.sync.SOURCE_BATCH = 1; sys.argv[0] = 'memsearch'; "
                              "from search_engine.cli.console import main; main()")


def _blocked_sync(settings, admin_url: str, locked: str):
    """Start ``memsearch sync`` (one source per transaction) while the superuser holds the row of source
    ``locked``: the sync sends the sources before it (in path order), then waits on that row. Returns (the sync
    process, the admin connection holding the lock)."""
    from indexer.sync import machine_key, machine_name

    admin = psycopg.connect(admin_url)
    admin.execute("SELECT 1 FROM memsearch.sources WHERE path = %s FOR UPDATE",
                  (machine_key(machine_name(), locked),))
    proc = subprocess.Popen([sys.executable, "-c", ONE_SOURCE_PER_TRANSACTION, "sync"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "MEMSEARCH_HOME": str(settings.home)})

    def waiting() -> bool:
        assert proc.poll() is None, proc.communicate()
        with psycopg.connect(admin_url, autocommit=True) as probe:
            return bool(probe.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = 'alice'"
                                      " AND wait_event_type = 'Lock'").fetchone()[0])

    _wait_for(waiting)
    return proc, admin


def _edit_all(settings, fake) -> None:
    from indexer.pipeline import index

    note_files(settings.home, 30, "v2")
    index(settings, embedder=fake)


def test_a_sync_killed_mid_way_leaves_no_duplicates_and_the_next_one_completes(synced_home, team, fake):
    import signal

    from indexer.sync import sync

    settings = synced_home
    sync(settings)
    _edit_all(settings, fake)
    proc, admin = _blocked_sync(settings, team.admin_url, str(settings.home / "notes" / "n15.md"))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    admin.rollback()
    admin.close()
    with psycopg.connect(team.admin_url, autocommit=True) as probe:  # the killed client's session ends
        _wait_for(lambda: not probe.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = 'alice'")
                  .fetchone()[0])
    remote, _, uids = team_rows(team.admin_url)
    texts = {source.rsplit("/", 1)[1]: text for source, _, text, _ in remote.values() if "Detail" not in text}
    assert "v2" in texts.get("n00.md", "") and "v1" in texts.get("n20.md", "")  # stopped half-way through
    assert len(uids) == len(set(uids))

    after = sync(settings)
    assert after.sources_sent == 15  # n15 (its transaction never committed) and the 14 after it
    assert_same_as_local(settings, team.admin_url)


@pytest.fixture
def own_server():
    """A server of this test's own (it is stopped and started again), with the team schema and member alice."""
    from conftest import TEAM_PASSWORDS
    from indexer.store.postgres import apply_team_init
    from scripts.pg_local import LocalPostgresUnavailable, start

    try:
        server = start()
    except LocalPostgresUnavailable as exc:
        pytest.skip(f"no local PostgreSQL: {exc}")
    apply_team_init(server.url(), ["alice"], [("fake-32", 32)])
    with psycopg.connect(server.url(), autocommit=True) as admin:
        admin.execute(f"ALTER ROLE alice PASSWORD '{TEAM_PASSWORDS['alice']}'")
    yield server, server.url("alice", TEAM_PASSWORDS["alice"])
    server.stop()


def _pg_ctl(server, *args: str) -> None:
    from scripts.pg_local import START_TIMEOUT, _run

    _run(server, [str(server.bin_dir / "pg_ctl"), "-D", str(server.data_dir), *args], START_TIMEOUT + 10)


def test_the_server_stopped_mid_sync_then_the_next_sync_sends_the_rest(own_server, home, fake):
    from indexer.pipeline import index
    from indexer.sync import sync

    server, url = own_server
    note_files(home, 30)
    settings = resolve_settings(home, db_url=url)
    (home / "memsearch.toml").write_text(f'db_url = "{url}"\n')
    index(settings, embedder=fake)
    sync(settings)
    _edit_all(settings, fake)
    proc, admin = _blocked_sync(settings, server.url(), str(home / "notes" / "n10.md"))
    _pg_ctl(server, "-m", "fast", "-w", "stop")  # ends every session, the sync's included
    out, err = proc.communicate(timeout=60)
    admin.close()
    assert proc.returncode == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("Error: the sync to postgresql://alice:***@127.0.0.1:")
    assert "the next `memsearch sync` sends the rest" in err and "Traceback" not in err

    down = run("sync", timeout=60)  # the server is down: one line, exit 1
    assert down.returncode == 1 and down.stderr.startswith("Error: cannot reach the team database")
    _pg_ctl(server, "-o", f"-h 127.0.0.1 -p {server.port} -k {server.data_dir} -c fsync=off -c max_connections=40",
            "-l", str(server.root / "server.log"), "-w", "start")
    after = sync(settings)
    assert after.sources_sent == 20  # n10 (rolled back when the server stopped) and the 19 after it
    assert_same_as_local(settings, server.url())


# -- 3. search on the team store -----------------------------------------------------------------------------------

HOOK = MEMSEARCH.replace("memsearch", "memsearch-hook")
CLOSED = "postgresql://alice:alice-pw-Zq9@127.0.0.1:1/nowhere"  # nothing listens on port 1


def test_search_reads_the_team_store_from_a_machine_with_no_local_index(synced_home, team, tmp_path):
    from indexer.sync import sync
    from search_engine.search import search

    sync(synced_home)
    other = tmp_path / "second-machine"  # the same member elsewhere: nothing indexed there
    other.mkdir()
    found = search(resolve_settings(other, db_url=team.urls["alice"], model="none"), "topic7 retries", mode="bm25")
    assert found.health.store == "team" and found.health.store_reason is None
    assert found.health.chunks == len(local_rows(synced_home)[0])
    assert found.hits[0].path == "notes/n07.md"
    done = run("search", "topic7 retries", "--json", "--home", str(other), env={
        "MEMSEARCH_DB_URL": team.urls["alice"], "MEMSEARCH_MODEL": "none"})
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["health"]["store"] == "team" and answer["hits"][0]["path"] == "notes/n07.md"
    # bob sees none of alice's private notes on the same server
    as_bob = search(resolve_settings(other, db_url=team.urls["bob"], model="none"), "topic7 retries", mode="bm25")
    assert as_bob.health.store == "team" and as_bob.hits == ()


@pytest.mark.model
def test_a_member_with_no_vectors_of_his_own_gets_hybrid_search_from_the_team_store(team, tmp_path, real_embedder,
                                                                                    fake):
    """alice syncs a shared note with its vector; bob's memory is empty: his search is hybrid all the same, his query
    embedded by his own model and matched against the vectors the team store holds, and nothing tells him his index
    was never built or holds no vectors. Before, only an index of his own (one note) made it so."""
    from indexer.pipeline import index
    from indexer.sync import sync
    from search_engine.search import search

    alice = resolve_settings(tmp_path / "alice", db_url=team.urls["alice"], share=["areas/projects/*"])
    write(alice.home / "areas" / "projects" / "api" / "summary.md", "# API client\n\nThe HTTP client uses retry "
          "backoff: exponential delays with jitter, capped at 30 seconds, for 5xx answers.\n")
    write(alice.home / "notes" / "mine.md", "# Mine\n\nalice's own retry notes stay hers.\n")
    index(alice, embedder=real_embedder)
    assert sync(alice).vectors_sent == 2
    bob_home = tmp_path / "bob"
    bob_home.mkdir()
    as_bob = {"MEMSEARCH_DB_URL": team.urls["bob"]}

    done = run("search", "how does the client wait between attempts", "--home", str(bob_home), env=as_bob)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "mode_used: hybrid"
    assert "vector #1" in done.stdout and "areas/projects/api/summary.md" in done.stdout
    assert done.stdout.splitlines()[-1] == "index: 1 chunks indexed, 0 awaiting embeddings, nothing of yours synced yet"
    assert "never built" not in done.stdout and "no vectors" not in done.stdout
    vector = json.loads(run("search", "retry backoff", "--mode", "vector", "--json", "--home", str(bob_home),
                            env=as_bob).stdout)
    assert vector["mode_used"] == "vector" and [h["path"] for h in vector["hits"]] == ["areas/projects/api/summary.md"]
    assert vector["health"]["index_exists"] and vector["health"]["store"] == "team"
    status = run("status", "--home", str(bob_home), env=as_bob)
    assert "never built" not in status.stdout
    assert "(not built on this machine; searches read the team database)" in status.stdout
    assert "1 chunks visible (0 yours, 1 shared by others)" in status.stdout

    # another model than the team's vectors': BM25, and the reason names the model the team store holds
    other = search(resolve_settings(bob_home, db_url=team.urls["bob"]), "retry backoff", embedder=fake)
    assert other.mode_used == "bm25" and other.fallback_reason == (
        f"the index holds vectors of {real_embedder.model_id}, not of the current model {fake.model_id}; run "
        "`memsearch index`")


def test_an_unreachable_team_database_falls_back_to_the_local_index_and_says_so(synced_home, monkeypatch):
    from search_engine.search import search

    settings = synced_home.replace(db_url=CLOSED)
    local = search(settings.replace(model="none"), "topic7 retries", mode="bm25")
    assert local.health.store == "local" and local.hits[0].path == "notes/n07.md"
    reason = local.health.store_reason
    assert reason.startswith("cannot reach the team database postgresql://alice:***@127.0.0.1:1/nowhere")
    assert reason.endswith(": searched the local index") and "\n" not in reason

    done = run("search", "topic7 retries", "--mode", "bm25", env={"MEMSEARCH_DB_URL": CLOSED})
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "searched the local index" in notes[0]
    assert "alice-pw" not in done.stdout + done.stderr and "notes/n07.md" in done.stdout

    monkeypatch.setenv("MEMSEARCH_DB_URL", CLOSED)
    payload = {"session_id": "s-x", "transcript_path": "/tmp/t.jsonl", "cwd": str(synced_home.home),
               "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
               "prompt": "what did we note about topic7 retries?"}
    hooked = subprocess.run([HOOK, "prompt"], input=json.dumps(payload).encode(), capture_output=True, timeout=60)
    assert hooked.returncode == 0 and b"Traceback" not in hooked.stdout + hooked.stderr
    assert b"n07.md" in hooked.stdout  # answered from the local index
    assert b"alice-pw" not in hooked.stdout + hooked.stderr


def test_after_one_failed_connect_the_hooks_read_the_local_index_without_trying_again(synced_home, team,
                                                                                      silent_host, monkeypatch):
    from indexer.base.paths import TEAM_UNREACHABLE
    from search_engine.search import search

    port, accepted = silent_host
    silent = f"postgresql://alice:alice-pw-Zq9@127.0.0.1:{port}/memory"
    monkeypatch.setenv("MEMSEARCH_DB_URL", silent)
    payload = {"session_id": "s-x", "transcript_path": "/tmp/t.jsonl", "cwd": str(synced_home.home),
               "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
               "prompt": "what did we note about topic7 retries?"}

    def prompt_hook() -> bytes:
        done = subprocess.run([HOOK, "prompt"], input=json.dumps(payload).encode(), capture_output=True, timeout=60)
        assert done.returncode == 0 and b"Traceback" not in done.stdout + done.stderr
        return done.stdout

    assert b"n07.md" in prompt_hook()  # waited for the silent host, then answered from the local index
    tried = len(accepted)
    assert tried >= 1
    memo = json.loads((synced_home.state_dir / TEAM_UNREACHABLE).read_text())
    assert "alice-pw" not in json.dumps(memo) and silent not in json.dumps(memo)
    for _ in range(2):  # the next prompts, each a new process: straight to the local index
        assert b"n07.md" in prompt_hook()
    assert len(accepted) == tried

    again = search(synced_home.replace(db_url=silent, model="none"), "topic7", mode="bm25")
    assert again.health.store == "local" and "cannot reach the team database" in again.health.store_reason
    assert len(accepted) == tried
    # another team database is not the one remembered: it is tried, and answers
    assert search(synced_home.replace(db_url=team.urls["alice"], model="none"), "topic7",
                  mode="bm25").health.store == "team"
    # once the retry period is over, the silent host is tried again
    memo["at"] -= 3600
    (synced_home.state_dir / TEAM_UNREACHABLE).write_text(json.dumps(memo))
    assert search(synced_home.replace(db_url=silent, model="none"), "topic7", mode="bm25").health.store == "local"
    assert len(accepted) > tried


def test_the_hook_reads_the_team_store_when_it_answers(synced_home, team, tmp_path, monkeypatch):
    from indexer.sync import sync

    sync(synced_home)
    other = tmp_path / "second-machine"
    other.mkdir()
    monkeypatch.setenv("MEMSEARCH_HOME", str(other))
    monkeypatch.setenv("MEMSEARCH_DB_URL", team.urls["alice"])
    payload = {"session_id": "s-y", "transcript_path": "/tmp/t.jsonl", "cwd": str(other),
               "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
               "prompt": "what did we note about topic7 retries?"}
    hooked = subprocess.run([HOOK, "prompt"], input=json.dumps(payload).encode(), capture_output=True, timeout=60)
    assert hooked.returncode == 0 and b"Traceback" not in hooked.stdout + hooked.stderr
    assert b"notes/n07.md" in hooked.stdout


def test_the_server_stopped_mid_search_then_the_local_index_answers(own_server, home, fake, monkeypatch):
    from indexer.pipeline import index
    from indexer.store.postgres import PgStore
    from indexer.sync import sync
    from search_engine.search import search

    server, url = own_server
    note_files(home, 5)
    settings = resolve_settings(home, db_url=url, model="none")
    index(settings, embedder=fake)
    sync(settings)
    assert search(settings, "topic3", mode="bm25").health.store == "team"
    ranked = PgStore.lexical_top_k

    def stop_then_rank(self, *args, **kwargs):  # the server goes away between connecting and ranking
        _pg_ctl(server, "-m", "fast", "-w", "stop")
        return ranked(self, *args, **kwargs)

    monkeypatch.setattr(PgStore, "lexical_top_k", stop_then_rank)
    found = search(settings, "topic3", mode="bm25")
    assert found.health.store == "local" and found.hits[0].path == "notes/n03.md"
    assert found.health.store_reason.startswith("the team database failed mid-search (")
    assert found.health.store_reason.endswith("): searched the local index")


def test_content_the_model_gave_no_vector_is_not_left_pending_on_the_team_store(synced_home, team, fake):
    from indexer.pipeline import index
    from indexer.store.local import SqliteStore
    from indexer.sync import sync

    write(synced_home.home / "notes" / "cjk.md", "# 東京\n\n東京の会議は金曜日です。\n")
    index(synced_home, embedder=None)  # its chunk waits for the model…
    with SqliteStore.open(synced_home.db_path, create=False) as local:
        (pending,) = local.pending_embeddings(fake.model_id)
        local.put_embeddings(fake.model_id, [(pending.hash, None)])  # …which has no vector for it
    report = sync(synced_home)
    assert report.vectors_pending == 0
    with psycopg.connect(team.admin_url) as conn:
        assert conn.execute("SELECT embedding IS NULL FROM memsearch.vectors WHERE hash = %s",
                            (pending.hash,)).fetchall() == [(True,)]


def test_text_an_older_version_stored_with_a_nul_syncs_and_is_found_on_the_team_store(synced_home, team, fake,
                                                                                     monkeypatch):
    """Before filter version 7 a pasted NUL was indexed as is, and PostgreSQL refused it: every later sync stopped
    there. What the local index holds still syncs (without the NUL), and the next syncs have nothing left."""
    import indexer.privacy
    from indexer.pipeline import index
    from indexer.sync import sync
    from search_engine.search import search

    home = synced_home.home
    write(home / "events" / "2026-11-21.jsonl", json.dumps({
        "id": "nul1", "ts": "2026-11-21T09:00:00", "session_id": "s2", "type": "prompt",
        "content": "paste: abc\u0000def, why does the wombat export stall?"}) + "\n")
    write(home / "areas" / "projects" / "zoo" / "facts.json",
          json.dumps({"facts": [{"id": 1, "fact": "the quoll\u0000 ledger is rebuilt nightly"}]}))
    with monkeypatch.context() as old_version:  # the filter as it was: it kept the NUL
        old_version.setattr(indexer.privacy, "storable", lambda text: text)
        index(synced_home, embedder=fake)
    stored = [c[2] for c in local_rows(synced_home)[0].values() if "\x00" in c[2]]
    assert len(stored) == 2  # the local index holds both as an older version stored them

    report = sync(synced_home)
    assert report.skipped == () and report.chunks_added == len(local_rows(synced_home)[0])
    remote = {c[2] for c in team_rows(team.admin_url)[0].values()}
    assert "paste: abcdef, why does the wombat export stall?" in remote
    assert "the quoll ledger is rebuilt nightly" in remote and not any("\x00" in t for t in remote)
    found = search(synced_home, "wombat export stall", embedder=fake)
    assert found.health.store == "team" and found.mode_used == "hybrid"
    assert found.hits[0].text == "paste: abcdef, why does the wombat export stall?"
    assert found.hits[0].bm25_rank == 1 and found.hits[0].vector_rank is not None  # its vector was sent too
    again = run("sync")
    assert again.returncode == 0 and again.stderr == "" and "0 sources sent" in again.stdout


def test_a_chunk_the_team_store_refuses_is_left_out_and_said_and_the_rest_is_sent(synced_home, team):
    """A chunk the server cannot take for its own content (here: a tsvector over PostgreSQL's 1 MB) costs only
    itself, named in one line, never the chunks after it nor the next syncs."""
    from indexer.store import ChunkRow, SourceState
    from indexer.store.local import SqliteStore

    huge = " ".join(f"w{i:x}" for i in range(150_000))  # ~1 MB of distinct words: a 1.5 MB tsvector
    path = str(synced_home.home / "notes" / "zz-dump.md")
    with SqliteStore.open(synced_home.db_path, create=False) as local, local.transaction():
        local.write_batch(SourceState(path, "note", 1, len(huge), "h-dump"), [
            ChunkRow("dump-huge", "hash-huge", "note", huge, "notes/zz-dump.md", 0, "notes", "Dump", 3, 9),
            ChunkRow("dump-ok", "hash-ok", "note", "the platypus survives the dump", "notes/zz-dump.md", 1,
                     "notes", "Dump", 10, 12)])
    done = run("sync")
    assert done.returncode == 0, done.stderr
    first, *refused = done.stdout.splitlines()
    assert first.startswith("synced to postgresql://alice:***@") and "32 sources sent" in first
    assert len(refused) == 1 and refused[0].startswith(
        "not sent to the team database: notes/zz-dump.md chunk dump-huge (lines 3-9): string is too long for tsvector (")
    assert refused[0].endswith(" bytes, max 1048575 bytes); the local index keeps it")
    remote = team_rows(team.admin_url)[0]
    assert "dump-ok" in remote and "dump-huge" not in remote
    assert len(remote) == len(local_rows(synced_home)[0]) - 1  # every other chunk went
    as_json = json.loads(run("sync", "--json").stdout)  # the source is sent: nothing is tried again until it changes
    assert as_json["sources_sent"] == 0 and as_json["skipped"] == []


def test_a_long_lived_process_does_not_wait_for_an_unreachable_team_database_on_every_search(synced_home, monkeypatch):
    import indexer.team
    from search_engine.search import search

    tries = []
    real = indexer.team.open_team
    monkeypatch.setattr(indexer.team, "open_team", lambda *a, **kw: tries.append(1) or real(*a, **kw))
    settings = synced_home.replace(db_url=CLOSED, model="none")
    first, second = (search(settings, "topic7", mode="bm25") for _ in range(2))
    assert len(tries) == 1 and first.health.store_reason == second.health.store_reason
    assert second.hits[0].path == "notes/n07.md"
    monkeypatch.setattr(indexer.team, "TEAM_RETRY", 0.0)  # the retry period over: it tries again
    search(settings, "topic7", mode="bm25")
    assert len(tries) == 2


def test_a_sync_in_many_small_batches_sends_everything_once(synced_home, team, monkeypatch):
    """Several batches of sources per sync, and several vector batches in flight on two connections at once."""
    import indexer.sync
    from indexer.sync import sync

    monkeypatch.setattr(indexer.sync, "SOURCE_BATCH", 5)
    monkeypatch.setattr(indexer.sync, "VECTOR_BATCH", 3)
    report = sync(synced_home)
    chunks, vectors = local_rows(synced_home)
    assert (report.sources_sent, report.chunks_added) == (31, len(chunks))
    assert report.vectors_sent == len({c[1] for c in chunks.values()}) and report.vectors_pending == 0
    assert_same_as_local(synced_home, team.admin_url)
    again = sync(synced_home)
    assert (again.sources_sent, again.chunks_added, again.vectors_sent) == (0, 0, 0)


def test_a_successful_sync_clears_the_memo_of_a_failed_connection(synced_home, team):
    from indexer.base.paths import TEAM_UNREACHABLE
    from indexer.sync import sync
    from indexer.team import recent_failure, remember_failure
    from search_engine.search import search

    settings = synced_home.replace(model="none")
    remember_failure(settings, "cannot reach the team database (a moment ago)")
    assert recent_failure(settings) is not None
    meanwhile = search(settings, "topic7", mode="bm25")
    assert meanwhile.health.store == "local" and "a moment ago" in meanwhile.health.store_reason
    sync(settings)
    assert recent_failure(settings) is None and not (settings.state_dir / TEAM_UNREACHABLE).exists()
    assert search(settings, "topic7", mode="bm25").health.store == "team"


def test_show_timeline_stats_and_forget_use_the_team_store(synced_home, team, tmp_path):
    from indexer.base.paths import TEAM_FORGET
    from indexer.base.reports import ForgetSelector
    from indexer.forget import apply_forget, plan_forget
    from indexer.sync import sync
    from search_engine.browse import recent, stats
    from search_engine.lookup import show, timeline

    sync(synced_home)
    chunks = local_rows(synced_home)[0]
    note = next(uid for uid, (file, *_) in chunks.items() if file.endswith("n07.md"))
    event = next(uid for uid, (_, _, text, *_) in chunks.items() if text == "event 1 about the deploy")
    other = tmp_path / "second-machine"  # the same member elsewhere: nothing indexed there
    other.mkdir()
    elsewhere = resolve_settings(other, db_url=team.urls["alice"], model="none")
    view = show(elsewhere, note[:8])
    assert view.chunk.id == note and view.chunk.path == "notes/n07.md" and view.note is None
    around = timeline(elsewhere, event)
    assert [h.text for h in around.before + (around.center,) + around.after] == [
        f"event {i} about the deploy" for i in range(3)]
    counted = stats(elsewhere)
    assert (counted.store, counted.events, counted.sessions, counted.chunks) == ("team", 3, 1, len(chunks))
    assert {h.id for h in recent(elsewhere, type="prompt")} == {u for u, c in chunks.items() if "events" in c[0]}
    down = synced_home.replace(db_url=CLOSED, model="none")  # unreachable: the local index answers, and says so
    assert show(down, note).note.endswith(": read the local index")
    assert stats(down).store == "local" and stats(down).note
    env = {"MEMSEARCH_DB_URL": team.urls["alice"], "MEMSEARCH_MODEL": "none"}
    shown = run("show", note, "--home", str(other), env=env)
    assert shown.returncode == 0 and "notes/n07.md" in shown.stdout and "note:" not in shown.stdout
    counted = run("stats", "--home", str(other), env=env)
    assert counted.returncode == 0 and counted.stdout.startswith("index: the team database")
    fallback = run("show", note, "--home", str(synced_home.home), env={**env, "MEMSEARCH_DB_URL": CLOSED})
    assert fallback.returncode == 0 and "\nnote: cannot reach the team database" in fallback.stdout
    assert "alice-pw" not in fallback.stdout + fallback.stderr

    report = apply_forget(synced_home, plan_forget(synced_home, ForgetSelector(ids=(note,))))
    assert report.team_removed == 1 and report.team_note is None
    assert note not in team_rows(team.admin_url)[0]
    later = next(uid for uid, (file, *_) in chunks.items() if file.endswith("n08.md"))
    report = apply_forget(down, plan_forget(down, ForgetSelector(ids=(later,))))
    assert report.team_removed is None and "the next `memsearch sync` removes them" in report.team_note
    assert later in team_rows(team.admin_url)[0]  # still there…
    sync(synced_home)
    remote = team_rows(team.admin_url)[0]
    assert note not in remote and later not in remote  # …until the next sync
    assert not (synced_home.state_dir / TEAM_FORGET).exists()
    assert set(remote) == set(local_rows(synced_home)[0])


def test_a_memory_forgotten_while_the_team_database_was_unreachable_never_comes_back(synced_home, team, tmp_path):
    """Forgotten while the database was down: a search that reaches it again (the warm server's open store, a CLI
    search, the prompt hook) never shows the team copy, and the first connection that succeeds removes it there."""
    from indexer.base.paths import TEAM_FORGET
    from indexer.base.reports import ForgetSelector
    from indexer.forget import apply_forget, plan_forget
    from indexer.sync import sync
    from search_engine.search import search

    sync(synced_home)
    chunks = local_rows(synced_home)[0]
    note = next(uid for uid, (file, _, text, _) in chunks.items() if file.endswith("n08.md") and "v1 note" in text)
    down = synced_home.replace(db_url=CLOSED, model="none")
    report = apply_forget(down, plan_forget(down, ForgetSelector(ids=(note,))))
    assert report.team_removed is None and note in team_rows(team.admin_url)[0]
    up = synced_home.replace(model="none")
    # an open store (the warm server's): left out, though still on the team database
    held = search(up, "topic8 note", mode="bm25", team=team.store("alice"))
    assert held.health.store == "team" and held.hits and note not in {h.id for h in held.hits}
    assert note in team_rows(team.admin_url)[0]
    # the CLI (and the prompt hook, through the same search): left out
    env = {"MEMSEARCH_MODEL": "none"}
    done = run("search", "topic8 note", "--mode", "bm25", "--json", "--home", str(synced_home.home), env=env)
    found = json.loads(done.stdout)
    assert found["health"]["store"] == "team" and found["hits"] and note not in {h["id"] for h in found["hits"]}
    # a read without a search's filter (show, recent, the session-start context) removes it there first
    shown = run("show", note, "--home", str(synced_home.home), env=env)
    assert shown.returncode == 1 and f"memory {note} was forgotten on " in shown.stderr
    assert note not in team_rows(team.admin_url)[0] and not (synced_home.state_dir / TEAM_FORGET).exists()


def test_a_memory_forgotten_while_the_team_database_was_down_never_comes_back_through_another_root(
        synced_home, team, tmp_path, monkeypatch):
    """Forgotten in one memory root while the team database was down: another root of the same member on this
    machine, using that database (here as ``localhost``, the same one), never shows the team copy (search, CLI),
    and its first read without a search's filter (``show``) removes it there and clears the user's list."""
    import indexer.team
    from indexer.base.paths import TEAM_FORGET_DIR, user_state_dir
    from indexer.base.reports import ForgetSelector
    from indexer.forget import apply_forget, plan_forget
    from indexer.sync import sync
    from indexer.team import TeamUnavailable, pending_forgets
    from search_engine.cli.doctor import team_checks

    sync(synced_home)
    chunks = local_rows(synced_home)[0]
    note = next(uid for uid, (file, _, text, _) in chunks.items() if file.endswith("n08.md") and "v1 note" in text)
    here = synced_home.replace(model="none")

    def down(*args, **kwargs):
        raise TeamUnavailable("cannot reach the team database (stopped for the test)")

    with monkeypatch.context() as m:
        m.setattr(indexer.team, "open_team", down)
        report = apply_forget(here, plan_forget(here, ForgetSelector(ids=(note,))))
    assert report.team_removed is None and note in team_rows(team.admin_url)[0]
    forgets = next(c for c in team_checks(here) if c.name == "team forgets")
    assert not forgets.ok and forgets.detail.startswith("1 forgotten chunk(s) are still on the team database")
    other = tmp_path / "second-root"
    other.mkdir()
    url = team.urls["alice"].replace("127.0.0.1", "localhost")
    assert pending_forgets(resolve_settings(other, db_url=url)) == [note]
    env = {"MEMSEARCH_DB_URL": url, "MEMSEARCH_MODEL": "none"}
    found = json.loads(run("search", "topic8 note", "--mode", "bm25", "--json", "--home", str(other), env=env).stdout)
    assert found["health"]["store"] == "team" and found["hits"] and note not in {h["id"] for h in found["hits"]}
    shown = run("show", note, "--home", str(other), env=env)
    assert shown.returncode == 1 and "no memory with id" in shown.stderr
    assert note not in team_rows(team.admin_url)[0]
    assert not list((user_state_dir() / TEAM_FORGET_DIR).glob("*.json"))
    # the first root's own list still names it, but doctor asks the database: it is no longer there
    assert pending_forgets(here) == [note]
    forgets = next(c for c in team_checks(here) if c.name == "team forgets")
    assert forgets.ok and "no longer on the team database" in forgets.detail, forgets


def test_forgetting_a_prompt_removes_it_from_the_team_copy_of_its_session_summary_at_once(synced_home, team, fake):
    """The forget rewrites the local session summary; the team copy is replaced in the same forget when the database
    answers, and when it does not, searches leave the old summary's chunks out until the next sync replaces it."""
    from indexer.base.reports import ForgetSelector
    from indexer.forget import apply_forget, plan_forget
    from indexer.pipeline import index
    from indexer.summaries import build_summary, summary_path
    from indexer.sync import sync
    from search_engine.search import search

    summary = summary_path(synced_home, "s1")
    write(summary, build_summary(synced_home, "s1"))
    index(synced_home, embedder=fake)
    sync(synced_home)

    def on_team(text: str) -> list[str]:
        return [t for _, _, t, _ in team_rows(team.admin_url)[0].values() if text in t]

    assert len(on_team("event 1 about the deploy")) == 2  # the event and the summary
    event = next(uid for uid, (_, _, text, _) in local_rows(synced_home)[0].items()
                 if text == "event 1 about the deploy")
    report = apply_forget(synced_home, plan_forget(synced_home, ForgetSelector(ids=(event,))))
    assert report.summaries_rewritten == 1 and "event 1" not in summary.read_text()
    assert report.team_note is None and on_team("event 1 about the deploy") == []
    from search_engine.cli.render import forget_text

    assert (f"team database: {report.team_removed} chunks of yours removed (what was forgotten and the old copies "
            "of the session summaries it changed)") in forget_text(report)
    assert on_team("event 2 about the deploy")  # the rewritten summary is there, as the local one is

    down = synced_home.replace(db_url=CLOSED, model="none")
    event = next(uid for uid, (_, _, text, _) in local_rows(synced_home)[0].items()
                 if text == "event 2 about the deploy")
    report = apply_forget(down, plan_forget(down, ForgetSelector(ids=(event,))))
    assert report.team_removed is None and on_team("event 2 about the deploy")  # the team copy, until…
    found = search(synced_home.replace(model="none"), "event 2 deploy", mode="bm25", team=team.store("alice"))
    assert found.health.store == "team" and not [h for h in found.hits if "event 2 about" in h.text]
    sync(synced_home)  # …the next sync
    assert on_team("event 2 about the deploy") == []
    assert set(team_rows(team.admin_url)[0]) == set(local_rows(synced_home)[0])


def test_forgetting_another_members_shared_note_says_whose_it_is(synced_home, team, fake, tmp_path):
    """alice finds bob's shared note in her team search; forgetting it tells her in one line that it is bob's and
    only he can forget it (not "no memory with id"), and nothing is forgotten."""
    from indexer.pipeline import index
    from indexer.sync import sync

    bob = resolve_settings(tmp_path / "bob", db_url=team.urls["bob"], share=["notes/*"])
    write(bob.home / "notes" / "ops.md", "# Ops\n\nthe pager rotation lives in the wiki\n")
    index(bob, embedder=fake)
    sync(bob)
    uid = team_rows(team.admin_url, owner="bob")[2][0]
    found = run("search", "pager rotation", "--mode", "bm25", "--json", env={"MEMSEARCH_MODEL": "none"})
    assert uid in {h["id"] for h in json.loads(found.stdout)["hits"]}
    for asked in (uid, uid[:8]):
        done = run("forget", asked, "--yes")
        assert done.returncode != 0 and done.stderr == (
            f"Error: memory '{asked}' is a note bob shared on the team database: only its owner can forget it "
            "(ask bob)\n"), done.stderr
    assert uid in team_rows(team.admin_url, owner="bob")[2]
    gone = run("forget", "feedfacecafe", "--yes")
    assert "no memory with id feedfacecafe:" in gone.stderr


def test_forgetting_an_id_not_held_here_while_the_team_database_is_down_says_it_could_not_look_there(synced_home,
                                                                                                   team):
    """An id this root does not hold may be another member's shared note: with the team database down, "no memory
    with id" says on the same line that it could not be looked for there (password masked); with it up, not."""
    from indexer.sync import sync

    sync(synced_home)
    down = run("forget", "feedfacecafe", "--yes", env={"MEMSEARCH_DB_URL": CLOSED})
    assert (down.returncode, down.stdout) == (1, "") and down.stderr.count("\n") == 1, down.stderr
    assert down.stderr.startswith(
        "Error: no memory with id feedfacecafe: ids change when their source changes; find it again with "
        "`memsearch search` or `memsearch recent`; the team database could not be reached to look for it there "
        "(cannot reach the team database postgresql://alice:***@127.0.0.1:1/nowhere"), down.stderr
    assert down.stderr.endswith("): it may be a note another member shared there\n") and "alice-pw" not in down.stderr
    up = run("forget", "feedfacecafe", "--yes")
    assert up.returncode == 1 and up.stderr == (
        "Error: no memory with id feedfacecafe: ids change when their source changes; find it again with "
        "`memsearch search` or `memsearch recent`\n")


def test_the_warm_server_answers_from_the_team_store_and_only_for_the_same_database(synced_home, team, tmp_path,
                                                                                    monkeypatch):
    import time

    from indexer.sync import sync
    from search_engine.filters import Filters
    from search_engine.serve.client import remote_search, request

    sync(synced_home)
    other = tmp_path / "second-machine"
    other.mkdir()
    env = {"MEMSEARCH_HOME": str(other), "MEMSEARCH_DB_URL": team.urls["alice"], "MEMSEARCH_MODEL": "none"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MEMSEARCH_NO_SERVER")
    server = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "120"], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        settings = resolve_settings()
        deadline = time.monotonic() + 60
        while not request(settings, {"op": "ping"}, timeout=1.0):
            assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        warm = remote_search(settings, "topic7 retries", mode="bm25", k=3, filters=Filters())
        assert warm is not None and warm.health.store == "team"
        assert warm.hits[0].path == "notes/n07.md"
        elsewhere = settings.replace(db_url=CLOSED)  # another team database: not this server's to answer
        assert remote_search(elsewhere, "topic7 retries", mode="bm25", k=3, filters=Filters()) is None
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_shared_notes_reach_the_team_and_unsharing_takes_them_back(synced_home, team, tmp_path):
    from indexer.sync import sync
    from search_engine.search import search

    sharing = synced_home.replace(share=("notes/n07.md", "events/*"))  # an event log can never be shared
    sync(sharing)
    bob = resolve_settings(tmp_path, db_url=team.urls["bob"], model="none")
    found = search(bob, "topic7", mode="bm25")
    assert {h.path for h in found.hits} == {"notes/n07.md"} and found.health.store == "team"
    assert search(bob, "topic8", mode="bm25").hits == ()
    assert search(bob, "deploy", mode="bm25").hits == ()  # alice's events stay hers
    with psycopg.connect(team.urls["bob"]) as raw:  # also with bob's own SQL: row-level security
        kinds = raw.execute("SELECT DISTINCT kind, scope FROM memsearch.chunks").fetchall()
    assert kinds == [("note", "shared")]

    again = sync(synced_home)  # share emptied: every source is re-marked, nothing is sent twice
    assert again.sources_sent == 31 and again.chunks_added == 0
    assert search(bob, "topic7", mode="bm25").hits == ()
    assert sync(synced_home).sources_sent == 0


def test_status_says_what_the_member_sees_on_the_team_database_or_why_not(synced_home, team):
    from indexer.sync import sync

    sync(synced_home.replace(share=("notes/n07.md",)))
    up = run("status")
    line = next(line for line in up.stdout.splitlines() if line.startswith("team: "))
    total = len(local_rows(synced_home)[0])
    assert line.startswith("team: postgresql://alice:***@127.0.0.1:") and " as alice: " in line
    assert f"{total} chunks visible ({total} yours, 0 shared by others)" in line
    as_bob = json.loads(run("status", "--json", "--db-url", team.urls["bob"]).stdout)["team"]
    assert as_bob["reachable"] and as_bob["own_chunks"] == 0 and as_bob["shared_by_others"] == as_bob["chunks"] > 0
    down = run("status", "--db-url", CLOSED)
    assert down.returncode == 0
    assert "team: postgresql://alice:***@127.0.0.1:1/nowhere: unreachable (cannot reach" in down.stdout
    for done in (up, down):
        assert "alice-pw" not in done.stdout + done.stderr and "bob-pw" not in done.stdout + done.stderr


def test_status_says_when_this_memory_root_last_synced_not_when_it_indexed(synced_home, team, fake, tmp_path):
    """``last synced`` is when this root's last sync to this database ran to its end: "never" before one (though the
    local index exists), the same when the database is unreachable, and not moved by another root's sync."""
    import time

    from indexer.pipeline import index
    from indexer.sync import sync

    def last_synced(*args: str):
        return json.loads(run("status", "--json", *args).stdout)["team"]["last_synced"]

    assert last_synced() is None
    before = time.strftime("%Y-%m-%dT%H:%M:%S")
    sync(synced_home)
    synced = last_synced()
    assert synced is not None and synced >= before
    time.sleep(1.1)
    other = resolve_settings(tmp_path / "second-root", db_url=team.urls["alice"])
    write(other.home / "notes" / "o.md", "# O\n\nanother root\n")
    index(other, embedder=fake)
    sync(other)
    assert last_synced() == synced  # the other root's sync is not this root's
    text = run("status", "--db-url", CLOSED).stdout
    assert "unreachable (cannot reach" in text and "last synced never" in text  # that database: never synced
    assert f"last synced {synced}" in run("status").stdout


def test_last_synced_names_the_database_not_its_password_nor_which_loopback_name(synced_home, team, monkeypatch):
    """The same database reached with a changed password, or as ``localhost`` instead of ``127.0.0.1``, is the one
    this root synced to: ``status`` and ``doctor`` say when, and a sync that changes nothing does not look for missing
    vectors again. Another role or another database is not."""
    from indexer.store.postgres import PgStore
    from indexer.sync import sync

    sync(synced_home)
    synced = json.loads(run("status", "--json").stdout)["team"]["last_synced"]
    assert synced is not None
    with psycopg.connect(team.admin_url, autocommit=True) as conn:
        conn.execute("ALTER ROLE alice PASSWORD 'alice-new-pw-7'")
    moved = team.urls["alice"].replace("alice-pw-Zq9", "alice-new-pw-7").replace("127.0.0.1", "localhost")
    status = json.loads(run("status", "--json", "--db-url", moved).stdout)["team"]
    assert status["reachable"] and status["last_synced"] == synced
    doctor = run("doctor", "--db-url", moved).stdout
    assert f"this memory root last synced to {moved.replace('alice-new-pw-7', '***')} at {synced}" in doctor
    looked: list[str] = []
    real = PgStore.pending_hashes
    monkeypatch.setattr(PgStore, "pending_hashes", lambda self, model: looked.append(model) or real(self, model))
    assert sync(synced_home.replace(db_url=moved)).sources_sent == 0 and not looked
    for other in (moved.replace("alice:", "bob:"), moved.rsplit("/", 1)[0] + "/elsewhere"):
        assert json.loads(run("status", "--json", "--db-url", other).stdout)["team"]["last_synced"] is None


def test_the_warm_server_keeps_one_team_store_and_pushes_its_own_ingests_after_a_pause(synced_home, team,
                                                                                      monkeypatch):
    import indexer.team
    from indexer.eventlog import Event, append
    from indexer.sync import sync
    from search_engine.serve import server as serve

    sync(synced_home)
    opened = []
    real = indexer.team.open_team
    monkeypatch.setattr(indexer.team, "open_team", lambda *a, **kw: opened.append(1) or real(*a, **kw))
    server = serve.Server(synced_home.replace(model="none"))
    server.load()
    try:
        asked = {"op": "search", "query": "topic7 retries", "mode": "bm25", "k": 3}
        for _ in range(3):
            answer = server.handle(asked)
            assert answer["ok"] and answer["result"]["health"]["store"] == "team"
            assert answer["result"]["hits"][0]["path"] == "notes/n07.md"
        assert len(opened) == 1  # one pool for the server's lifetime, not one per search

        # an event a hook hands the server: indexed after the reply, pushed only once the burst has settled
        path = append(synced_home.home, Event("prompt", "why does the zeppelin deploy stall", session_id="s9"))
        monkeypatch.setattr(serve, "PUSH_AFTER", 60.0)
        assert server.handle({"op": "ingest", "paths": [str(path)]})["ok"]
        server.reply_sent()
        server.push_if_due()
        assert server.pusher is None and server.push_due is not None

        def on_team() -> list:
            with psycopg.connect(team.admin_url) as conn:
                return conn.execute("SELECT text FROM memsearch.chunks WHERE text LIKE '%zeppelin%'").fetchall()

        assert on_team() == []
        server.push_due = 0.0  # the pause is over
        server.push_if_due()
        assert server.pusher is not None
        server.pusher.join(timeout=30)
        assert [t for (t,) in on_team()] == ["why does the zeppelin deploy stall"]
        server.push_if_due()  # nothing changed since: no second push
        assert not server.pusher.is_alive() and server.push_due is None

        # the database drops the server's connections: that search is answered locally, the next from the team
        with psycopg.connect(team.admin_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'alice'")
        local = server.handle(asked)["result"]
        assert local["health"]["store"] == "local" and local["hits"][0]["path"] == "notes/n07.md"
        assert server.team is None
        again = server.handle(asked)["result"]
        assert again["health"]["store"] == "team" and len(opened) == 2
    finally:
        server.close()


def test_two_machines_with_the_same_file_keep_their_own_copies_on_the_team_store(synced_home, team, fake):
    """The same member's laptop and desktop hold an identical note (same path, same content, so the same chunk
    uids): each machine's source keeps its chunks, and the note deleted on one stays searchable from the other."""
    from indexer.pipeline import index
    from indexer.sync import sync
    from search_engine.search import search

    first = sync(synced_home, machine="laptop")
    second = sync(synced_home, machine="desktop")
    assert second.chunks_added == first.chunks_added > 0
    remote = team_rows(team.admin_url)[2]
    assert len(remote) == 2 * len(set(remote))  # every uid twice: once per machine's source

    (synced_home.home / "notes" / "n07.md").unlink()
    index(synced_home, embedder=fake)
    gone = sync(synced_home, machine="laptop")
    assert gone.sources_deleted == 1 and gone.chunks_removed > 0
    assert sync(synced_home, machine="laptop").sources_sent == 0
    with psycopg.connect(team.admin_url) as conn:
        held = conn.execute("SELECT DISTINCT split_part(source, ':', 1) FROM memsearch.chunks"
                            " WHERE path = 'notes/n07.md'").fetchall()
    assert held == [("desktop",)]
    found = search(synced_home.replace(model="none"), "topic7", mode="bm25")
    assert found.health.store == "team" and found.hits[0].path == "notes/n07.md"


def test_two_memory_roots_on_one_machine_never_delete_each_others_sources(synced_home, team, fake, tmp_path):
    """Two memory roots on one machine syncing as the same member: each sync deletes only what its own root sent
    (its sources, and the extra ones it recorded, also once dropped from its settings), and says how many sources
    of another root it left; a root inside another one keeps its sources too; each root keeps its own ``share``
    (no re-marking every sync) and its own record of its last sync."""
    from indexer.pipeline import index
    from indexer.sync import sync

    def sources(machine: str = "box") -> set[str]:
        with psycopg.connect(team.admin_url) as conn:
            return {r[0] for r in conn.execute("SELECT path FROM memsearch.sources WHERE owner = 'alice'"
                                               " AND path LIKE %s", (machine + ":%",))}

    a = synced_home
    b_home = tmp_path / "second-root"
    write(b_home / "notes" / "b.md", "# B\n\nthe second root's note about kumquats\n")
    outside = write(tmp_path / "project" / "CLAUDE.md", "# Project\n\nthe extra source about quinces\n")
    write(b_home / "memsearch.toml", f'db_url = "{team.urls["alice"]}"\nextra_sources = ["{outside}"]\n'
                                     'share = ["notes/*"]\n')
    b = resolve_settings(b_home)
    index(b, embedder=fake)
    first_a = sync(a, machine="box")
    first_b = sync(b, machine="box")
    assert first_a.sources_sent == 31 and first_b.sources_sent == 2 and first_b.sources_deleted == 0
    assert first_b.other_roots == 31
    everything = sources()
    assert f"box:{outside}" in everything and len(everything) == 33
    again_a = sync(a, machine="box")
    assert (again_a.sources_deleted, again_a.sources_sent, again_a.other_roots) == (0, 0, 2)
    assert sources() == everything  # neither sync deleted the other root's sources, nor re-marked its own
    assert sync(b, machine="box").sources_sent == 0
    from search_engine.cli.render import sync_text

    assert "\n2 sources from another memory root on this machine were left as they are" in sync_text(again_a)

    # an extra source dropped from b's settings is deleted from the team store by b's sync, and by b's only
    write(b_home / "memsearch.toml", f'db_url = "{team.urls["alice"]}"\nshare = ["notes/*"]\n')
    b = resolve_settings(b_home)
    index(b, embedder=fake)
    assert sync(a, machine="box").sources_deleted == 0 and f"box:{outside}" in sources()
    dropped = sync(b, machine="box")
    assert dropped.sources_deleted == 1 and sources() == everything - {f"box:{outside}"}

    # a root inside a's root: a's sync leaves its sources
    inner = resolve_settings(a.home / "nested", db_url=team.urls["alice"])
    write(inner.home / "n.md", "# Inner\n\nthe nested root's note\n")
    index(inner, embedder=fake)
    assert sync(inner, machine="box").sources_sent == 1
    assert sync(a, machine="box").sources_deleted == 0 and f"box:{inner.home}/n.md" in sources()

    from indexer.sync import root_meta_key

    with psycopg.connect(team.admin_url) as conn:
        keys = {r[0]: json.loads(r[1]) for r in conn.execute(
            "SELECT key, value FROM memsearch.meta WHERE owner = 'alice' AND key LIKE 'root:%'")}
    assert set(keys) == {root_meta_key("box", str(s.home)) for s in (a, b, inner)}
    assert keys[root_meta_key("box", str(b.home))]["share"] == "notes/*"
    assert keys[root_meta_key("box", str(a.home))]["share"] == "" and keys[root_meta_key("box", str(a.home))]["extra"] == []


def test_the_hnsw_indexes_are_built_with_the_set_parameters_and_older_ones_are_rebuilt(team):
    """``team init`` builds each model's HNSW index with m and ef_construction set; migration 4 rebuilds an index
    made before (pgvector's defaults), under the same name, and running the migrations again changes nothing."""
    import psycopg

    from indexer.store.pg_schema import HNSW_EF_CONSTRUCTION, HNSW_M
    from indexer.store.postgres import migrate

    def definitions(conn):
        return dict(conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'memsearch'"
                                 " AND indexname LIKE 'vectors_hnsw_%' ORDER BY indexname").fetchall())

    built = f"m='{HNSW_M}', ef_construction='{HNSW_EF_CONSTRUCTION}'"
    with psycopg.connect(team.admin_url, autocommit=True) as admin:
        made = definitions(admin)
        assert len(made) == 2 and all(built in d for d in made.values()), made
        name, current = next(iter(made.items()))
        admin.execute(f"DROP INDEX memsearch.{name}")
        admin.execute(current.replace(f" WITH ({built})", ""))  # as an older team init made it
        admin.execute("DELETE FROM memsearch.schema_version WHERE version >= 4")
        assert built not in definitions(admin)[name]
        assert migrate(admin) >= 4
        assert definitions(admin) == made
        assert migrate(admin) >= 4 and definitions(admin) == made


def test_forget_says_when_the_team_database_keeps_chunks_it_could_not_note_for_the_next_sync(home, monkeypatch):
    """An unreachable team database: the ids wait for the next sync, and the report says so; when even that note
    cannot be written, the report says that the team database keeps them (nothing is silently left)."""
    import indexer.team
    from indexer.team import TeamUnavailable, forget_on_team, pending_forgets

    settings = resolve_settings(home, db_url="postgresql://alice:alice-pw@127.0.0.1:1/memsearch")

    def unreachable(*args, **kwargs):
        raise TeamUnavailable("cannot reach the team database postgresql://alice:***@127.0.0.1:1/memsearch")

    monkeypatch.setattr(indexer.team, "open_team", unreachable)
    removed, note = forget_on_team(settings, ["aaaa1111bbbb"])
    assert removed is None and note.endswith("the next `memsearch sync` removes them there")
    assert pending_forgets(settings) == ["aaaa1111bbbb"]

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(indexer.team, "write_private", read_only)
    removed, note = forget_on_team(settings, ["cccc2222dddd"])
    assert removed is None and "could not be noted for the next sync (Read-only file system)" in note
    assert "alice-pw" not in note and "\n" not in note
    assert pending_forgets(settings) == ["aaaa1111bbbb"]


# -- removing a member -------------------------------------------------------------------------------------------


def _owned_by(admin_url: str, role: str) -> dict[str, int]:
    """Rows naming ``role`` in each table of the schema that has an owner (as the superuser: no row-level security)."""
    with psycopg.connect(admin_url) as conn:
        return {table: conn.execute(f"SELECT count(*) FROM memsearch.{table} WHERE owner = %s", (role,)).fetchone()[0]
                for table in ("chunks", "sources", "meta", "counts", "lexemes", "hashes", "contents")}


def test_remove_member_ends_their_sessions_deletes_their_rows_and_drops_the_role(synced_home, team, fake, tmp_path,
                                                                                pg_server):
    """alice synced (chunks, two shared notes, vectors), and a session of hers still holds a sync's staging table
    in an open transaction (a sync stopped mid-way that never hung up). Removing her ends that session, deletes
    her rows and the vectors only her chunks held, and drops her role; bob's rows, the vector his copy of her note
    holds, and his searches stay."""
    from indexer.pipeline import index
    from indexer.sync import sync
    from search_engine.search import search

    sync(synced_home.replace(share=("notes/n07.md", "notes/n08.md")))
    bob = resolve_settings(tmp_path / "bob", db_url=team.urls["bob"], share=["notes/ops.md"])
    write(bob.home / "notes" / "ops.md", "# Ops\n\nthe pager rotation lives in the wiki\n")
    write(bob.home / "notes" / "n07.md", (synced_home.home / "notes" / "n07.md").read_text())  # same content: one vector
    index(bob, embedder=fake)
    sync(bob)
    bob_search = bob.replace(model="none")
    assert {h.path for h in search(bob_search, "topic8", mode="bm25").hits} == {"notes/n08.md"}  # alice's, shared
    alice_chunks, vectors_before, _ = team_rows(team.admin_url)
    bob_before, _, bob_uids = team_rows(team.admin_url, owner="bob")
    bob_hashes = {h for _, h, _, _ in bob_before.values()}
    only_alice = {h for _, h, _, _ in alice_chunks.values()} - bob_hashes
    owned = _owned_by(team.admin_url, "alice")
    assert owned["meta"] >= 1 and only_alice & set(vectors_before) and bob_hashes & set(vectors_before)

    held = psycopg.connect(team.urls["alice"])  # the staging table a sync makes (indexer.store.postgres), left open
    held.execute("CREATE TEMP TABLE IF NOT EXISTS memsearch_stage_chunks(uid text) ON COMMIT DELETE ROWS")
    held.commit()  # made on the connection's first batch; the next one's transaction is open
    held.execute("INSERT INTO memsearch_stage_chunks VALUES ('x')")
    with psycopg.connect(team.admin_url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner"
                            " WHERE r.rolname = 'alice' AND c.relname = 'memsearch_stage_chunks'").fetchone()[0] == 1

    done = run("team", "remove-member", "alice", "--yes", env={"MEMSEARCH_ADMIN_URL": team.admin_url})
    assert done.returncode == 0, done.stderr
    gone = len(only_alice & set(vectors_before))
    assert done.stdout == (
        f"removed member alice from {team.admin_url.replace(pg_server.password, '***')}: {len(alice_chunks)} chunks, "
        f"{owned['sources']} sources, {owned['meta']} meta keys, {gone} vectors no other member's chunk holds; "
        "1 session ended; role alice dropped\n")
    assert pg_server.password not in done.stdout + done.stderr
    with pytest.raises(psycopg.OperationalError):
        held.execute("SELECT 1")
    held.close()
    with psycopg.connect(team.admin_url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = 'alice'").fetchone()[0] == 0
    assert set(_owned_by(team.admin_url, "alice").values()) == {0}
    _, vectors_after, _ = team_rows(team.admin_url, owner="bob")
    assert set(vectors_after) == set(vectors_before) - only_alice
    assert team_rows(team.admin_url, owner="bob")[0] == bob_before and sorted(team_rows(
        team.admin_url, owner="bob")[2]) == sorted(bob_uids)
    assert {h.path for h in search(bob_search, "pager rotation", mode="bm25").hits} == {"notes/ops.md"}
    assert {h.path for h in search(bob_search, "topic7", mode="bm25").hits} == {"notes/n07.md"}  # bob's own copy
    assert search(bob_search, "topic8", mode="bm25").hits == ()  # alice's shared note went with her
    # the kept counts still agree with the rows (what team init's recount would set them to)
    from indexer.store.pg_schema import RECOUNT_SQL

    with psycopg.connect(team.admin_url) as conn:
        kept = {t: sorted(conn.execute(f"SELECT * FROM memsearch.{t}").fetchall())
                for t in ("counts", "hashes", "contents")}
        conn.execute(RECOUNT_SQL)
        assert kept == {t: sorted(conn.execute(f"SELECT * FROM memsearch.{t}").fetchall())
                        for t in ("counts", "hashes", "contents")}
        conn.rollback()


def test_remove_member_refuses_a_name_that_is_not_a_member_and_asks_first(synced_home, team, pg_server):
    env = {"MEMSEARCH_ADMIN_URL": team.admin_url}
    where = team.admin_url.replace(pg_server.password, "***")
    # no such role (a name no test creates: roles are the server's, and other tests add members of their own);
    # a superuser, not a member
    for name in (f"nobody_{uuid.uuid4().hex[:8]}", "postgres"):
        done = run("team", "remove-member", name, "--yes", env=env)
        assert (done.returncode, done.stdout) == (1, "")
        assert re.fullmatch(rf"Error: '{name}' is not a member role of the team database {re.escape(where)} "
                            r"\(members: (?:\w+, )*alice, bob(?:, \w+)*\): nothing removed\n", done.stderr), done.stderr
    bad = run("team", "remove-member", "memsearch_member", "--yes", env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("Error: invalid member name 'memsearch_member'")
    unasked = subprocess.run([MEMSEARCH, "team", "remove-member", "alice"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, env={**os.environ, **env}, timeout=60)
    assert unasked.returncode == 1 and unasked.stderr == (
        "Error: remove-member needs a confirmation: run it on a terminal, or add --yes\n")
    assert _owned_by(team.admin_url, "alice")["chunks"] == 0  # nothing synced here, and the role is still there
    with psycopg.connect(team.admin_url) as conn:
        assert conn.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'alice'").fetchone() == (True,)
    unreachable = run("team", "remove-member", "alice", "--yes",
                      env={"MEMSEARCH_ADMIN_URL": "postgresql://postgres:admin-pw-Q1@127.0.0.1:1/nowhere"})
    assert unreachable.returncode == 1 and "admin-pw-Q1" not in unreachable.stderr
    assert unreachable.stderr.startswith("Error: cannot reach postgresql://postgres:***@127.0.0.1:1/nowhere: ")
    assert unreachable.stderr.count("\n") == 1


def test_remove_member_says_truly_whether_the_member_can_still_log_in(synced_home, team, pg_server, monkeypatch):
    """A URL whose role may not alter roles (a member's) fails at the first step: nothing changed, the member can
    still log in, and the error says so and asks for the administrator's URL. A later step failing (a lock not
    granted in time) leaves the role without login, and the error says that instead."""
    import indexer.store.pg_admin as pg_admin
    from indexer.store.postgres import StoreUnavailable

    refused = run("team", "remove-member", "alice", "--yes", "--admin-url", team.urls["bob"])
    where = team.urls["bob"].replace(TEAM_PASSWORDS["bob"], "***")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        f"Error: removing member alice from {where} failed at its first step (ALTER ROLE alice NOLOGIN: permission "
        "denied to alter role): nothing was changed, and alice can still log in: run it with the administrator's "
        "--admin-url (a role allowed to ALTER ROLE and DROP ROLE: a superuser's, as for `memsearch team init "
        "--apply`)\n"), refused.stderr
    assert "cannot log in" not in refused.stderr and TEAM_PASSWORDS["bob"] not in refused.stderr
    psycopg.connect(team.urls["alice"]).close()  # she still can

    monkeypatch.setattr(pg_admin, "LOCK_WAIT_S", 1)
    try:
        with psycopg.connect(team.admin_url) as holder:
            holder.execute("LOCK TABLE memsearch.chunks IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(StoreUnavailable) as failed:
                pg_admin.remove_member(team.admin_url, "alice")
            holder.rollback()
        assert "lock timeout" in str(failed.value) and str(failed.value).endswith(
            "nothing of theirs was deleted, and alice cannot log in until this is run again or "
            "`ALTER ROLE alice LOGIN`")
        with psycopg.connect(team.admin_url) as conn:
            assert conn.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'alice'").fetchone() == (False,)
    finally:  # roles belong to the server, not to this test's database
        with psycopg.connect(team.admin_url, autocommit=True) as conn:
            conn.execute("ALTER ROLE alice LOGIN")


def test_a_hybrid_hit_beyond_the_team_vector_list_carries_its_cosine(synced_home, team, fake):
    """The prompt hook's gate weighs every hit's meaning; the team store computes it for a hit its HNSW list did
    not reach, the same cosine a list long enough to reach it reports."""
    from indexer.sync import sync
    from search_engine.search import search

    sync(synced_home)
    narrow = resolve_settings(synced_home.home, candidates=1)
    found = search(narrow, "topic7 retries deploy", mode="hybrid", embedder=fake, k=10)
    assert found.health.store == "team" and found.mode_used == "hybrid"
    beyond = [h for h in found.hits if h.vector_rank is None]
    assert beyond and all(h.similarity is not None for h in beyond)
    reached = {h.id: h.similarity for h in search(synced_home, "topic7 retries deploy", mode="vector",
                                                  embedder=fake, k=100).hits}
    compared = [h for h in beyond if h.id in reached]  # (the vector list's own dedup may hide one)
    assert compared and all(h.similarity == pytest.approx(reached[h.id], abs=1e-3) for h in compared)


@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_near_duplicates_on_the_team_store_do_not_use_up_the_candidate_pool(synced_home, team, fake, mode):
    from indexer.pipeline import index
    from indexer.sync import sync
    from search_engine.search import search

    copy = {"ts": "2026-11-28T09:00:00", "session_id": "s2", "type": "tool", "tool_name": "Bash",
            "content": "retries retries exhausted: retries failed"}
    write(synced_home.home / "events" / "2026-11-28.jsonl",
          "".join(json.dumps({**copy, "id": f"c{i}"}) + "\n" for i in range(60)))
    index(synced_home, embedder=fake)
    sync(synced_home)
    found = search(synced_home, "retries", mode=mode, embedder=fake, k=10)
    assert found.health.store == "team"
    assert len(found.hits) == 10 and found.hidden_duplicates >= 59
    assert sum(h.path.startswith("notes/") for h in found.hits) == 9


def test_a_member_who_sees_nothing_on_the_team_database_is_not_told_the_index_was_never_built(synced_home, team,
                                                                                              tmp_path):
    """bob has synced nothing and alice shared nothing: his search and status say the team database holds nothing
    he can see, and how that changes; never that the index was never built (the README's promise)."""
    from indexer.sync import sync

    sync(synced_home)  # alice's chunks are there, all private to her
    bob_home = tmp_path / "bob-memory"
    bob_home.mkdir()
    env = {"MEMSEARCH_HOME": str(bob_home), "MEMSEARCH_DB_URL": team.urls["bob"]}
    for mode_env in ({"MEMSEARCH_MODEL": "none"}, {}):
        done = run("search", "topic7 retries", env={**env, **mode_env})
        assert done.returncode == 0, done.stderr
        assert "never built" not in done.stdout and "run `memsearch index` to embed" not in done.stdout
        assert "No results: nothing on the team database is visible to you yet" in done.stdout, done.stdout
        answer = json.loads(run("search", "topic7 retries", "--json", env={**env, **mode_env}).stdout)
        assert answer["health"]["store"] == "team" and answer["health"]["index_exists"] is True
        assert answer["hits"] == []
        if not mode_env:  # hybrid with the bundled model: why it ran BM25, in the team's terms
            assert "the team database holds no vectors you can see yet" in done.stdout.splitlines()[0]
    status = run("status", env=env)
    assert "never built" not in status.stdout, status.stdout
    assert "(not built on this machine; searches read the team database)" in status.stdout
