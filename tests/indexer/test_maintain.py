"""Weekly maintenance: the atomic full rebuild, retention, the integrity checks, cron and the weekly script."""

import gzip
import json
import os
import subprocess
import threading
from datetime import datetime
from pathlib import Path

import orjson
import pytest

from conftest import MEMSEARCH, REPO, write
from fake_embedder import FakeEmbedder
from indexer.base.errors import ConfigError, MemsearchError
from indexer.base.settings import resolve_settings
from indexer.eventlog import Event, append
from indexer.maintain import check_index, expire_event_logs, maintain
from indexer.pipeline import index
from indexer.rebuild import maintenance_lock, rebuild
from indexer.store import sqlite as store
from search_engine.search import search

NOW = datetime(2026, 11, 21, 12, 0, 0)


def _event(eid, ts, content):
    return orjson.dumps({"id": eid, "ts": ts, "session_id": "s1", "type": "prompt", "content": content}) + b"\n"


def _chunks(settings):
    conn = store.connect(settings.db_path)
    try:
        return {row[0]: row[1] for row in conn.execute("SELECT uid, text FROM chunks")}
    finally:
        conn.close()


def _hits(settings, query, fake):
    return [h.id for h in search(settings, query, mode="hybrid", k=20, embedder=fake).hits]


# -- the atomic full rebuild ---------------------------------------------------------------------------------------

def test_full_rebuild_swaps_in_atomically_and_reuses_vectors(sample_home, settings, fake):
    index(settings, embedder=fake)
    before = _chunks(settings)
    embedded = fake.embedded
    write(sample_home / "daily" / "2026-11-21.md", "# Today\n\nA brand new note about pelicans.\n")
    reader = store.connect(settings.db_path)
    reader.execute("BEGIN")
    old_count = reader.execute("SELECT count(*) FROM chunks").fetchone()[0]

    report = rebuild(settings, embedder=fake)

    # A reader inside a transaction keeps the old index whole; its next transaction sees the new one whole.
    assert reader.execute("SELECT count(*) FROM chunks").fetchone()[0] == old_count == len(before)
    reader.execute("COMMIT")
    assert reader.execute("SELECT count(*) FROM chunks").fetchone()[0] == old_count + 1
    reader.close()
    assert report.full and report.chunks_added == 1 and report.chunks_removed == 0
    assert (report.files_scanned, report.files_changed, report.files_unchanged, report.files_deleted) == (15, 1, 14, 0)
    assert fake.embedded - embedded == 1  # every other vector was reused from the old index
    assert report.chunks_pending == 0
    assert set(before) < set(_chunks(settings))
    assert check_index(store.connect(settings.db_path)).ok
    assert not list(settings.state_dir.glob("rebuild-*"))
    assert _hits(settings, "pelicans", fake)


def test_full_rebuild_counts_an_event_log_the_hooks_start_meanwhile_and_names_what_it_kept(sample_home, settings):
    """An event log a hook created after the build's scan, and ingested into the live index, was reported as "kept
    the previous chunks of 1 unreadable source(s)" (nothing was unreadable), and "14 scanned" beside "15
    unchanged". A source that really could not be read is named."""
    from indexer.pipeline import ingest

    index(settings, embedder=None)
    giant = sample_home / "daily" / "2026-11-18.md"
    os.truncate(giant, 21 * 2**20)  # now too large to read: its previous chunks are kept, and it is named
    started = []
    log = sample_home / "events" / "2026-11-21.jsonl"

    def progress(phase, done, total):
        if phase == "scan" and done == total and not started:  # the build's scan is over: a hook starts a log
            started.append(write(log, _event("late1", "2026-11-21T10:00:00", "a late prompt about herons")))
            assert ingest(settings, [log])

    report = rebuild(settings, embedder=None, progress=progress)
    assert started and "unreadable" not in (report.model_note or "")
    assert "kept the previous chunks of 1 source(s) that could not be read now: daily/2026-11-18.md" in \
        report.model_note
    assert report.files_scanned == report.files_changed + report.files_unchanged == 15
    assert [c for c in _chunks(settings).values() if "herons" in c] == ["a late prompt about herons"]


def test_full_rebuild_equals_an_index_built_from_scratch(sample_home, settings, fake, tmp_path):
    index(settings, embedder=fake)
    (sample_home / "MEMORY.md").unlink()
    write(sample_home / "daily" / "2026-11-18.md", "# Changed\n\nThe retry budget is now five attempts.\n")
    rebuild(settings, embedder=fake)
    fresh = resolve_settings(sample_home, db_path=str(tmp_path / "fresh.db"))
    index(fresh, embedder=FakeEmbedder(dim=32))
    assert _chunks(settings) == _chunks(fresh)
    for query in ("retry budget", "database is locked", "idempotency keys", "東京"):
        assert _hits(settings, query, fake) == _hits(fresh, query, fake)


class _Crash(RuntimeError):
    pass


class _CrashingEmbedder(FakeEmbedder):
    def embed_passages(self, texts):
        raise _Crash("killed mid-embedding")


def test_a_failed_rebuild_leaves_the_old_index_and_no_leftovers(sample_home, settings, fake):
    index(settings, embedder=fake)
    before = _chunks(settings)
    write(sample_home / "daily" / "2026-11-21.md", "# Today\n\nSomething new.\n")
    write(settings.state_dir / "rebuild-99999.db", b"left by a killed rebuild")
    with pytest.raises(_Crash):
        rebuild(settings, embedder=_CrashingEmbedder(dim=32))
    assert _chunks(settings) == before
    assert not list(settings.state_dir.glob("rebuild-*"))
    assert check_index(store.connect(settings.db_path)).ok


def test_rebuild_catches_up_with_events_appended_while_it_builds(home, settings, fake):
    append(home, Event(type="prompt", content="first event before the rebuild"))
    index(settings, embedder=fake)
    appended = []

    def progress(phase, done, total):
        if phase == "scan" and not appended:  # a hook firing in the middle of the build
            appended.append(append(home, Event(type="prompt", content="second event during the rebuild")))

    from indexer import rebuild as rebuild_module

    with maintenance_lock(settings):
        rebuild_module.rebuild_locked(settings, embedder=fake, progress=progress)
    texts = set(_chunks(settings).values())
    assert appended and {"first event before the rebuild", "second event during the rebuild"} <= texts


def test_maintenance_runs_one_at_a_time(home, settings):
    with maintenance_lock(settings):
        with pytest.raises(MemsearchError, match="another `memsearch maintain` or `memsearch index --full`"):
            rebuild(settings, embedder=None)
        proc = subprocess.run([MEMSEARCH, "maintain"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "MEMSEARCH_MODEL": "none"})
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("Error: another `memsearch maintain`") and proc.stderr.count("\n") == 1


def test_warm_server_follows_a_rebuild_and_a_deleted_index(sample_home, settings, fake, monkeypatch):
    from search_engine.serve.server import Server

    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    settings = resolve_settings(sample_home)
    index(settings, embedder=None)
    server = Server(settings)
    server.load()

    def ask(query):
        answer = server.handle({"op": "search", "query": query, "mode": "bm25", "k": 5})
        assert answer["ok"]
        return answer["result"]["hits"]

    assert ask("idempotency") and not ask("pelicans")
    write(sample_home / "daily" / "2026-11-21.md", "# Today\n\npelicans everywhere\n")
    rebuild(settings, embedder=None)
    assert ask("pelicans")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{settings.db_path}{suffix}").unlink(missing_ok=True)
    assert not ask("pelicans")  # the index is gone: nothing, not the deleted file's content
    write(sample_home / "daily" / "2026-11-22.md", "# Tomorrow\n\nflamingos too\n")
    index(settings, embedder=None)
    assert ask("flamingos") and ask("pelicans")


# -- checks ---------------------------------------------------------------------------------------------------

def test_check_index_finds_tables_that_disagree(sample_home, settings, fake):
    index(settings, embedder=fake)
    conn = store.connect(settings.db_path)
    assert check_index(conn).ok
    some_id = conn.execute("SELECT min(id) FROM chunks").fetchone()[0]
    conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (some_id,))
    broken = check_index(conn)
    assert not broken.ok and broken.chunks_without_fts == 1 and broken.fts_rows == broken.chunks - 1
    conn.execute("INSERT INTO chunks_fts(rowid, title, body) VALUES (?, 'x', 'y')", (some_id,))
    vector_id = conn.execute("SELECT min(id) FROM embeddings").fetchone()[0]
    conn.execute("DELETE FROM vec_chunks WHERE rowid = ?", (vector_id,))
    broken = check_index(conn)
    assert not broken.ok and broken.embeddings_without_vector == 1 and broken.chunks_without_fts == 0


# -- maintain and retention ---------------------------------------------------------------------------------------

@pytest.fixture
def event_logs(home):
    old = write(home / "events" / "2026-06-01.jsonl", _event("o1", "2026-06-01T09:00:00", "stale pelican sighting")
                + b"not json at all\n" + _event("o2", "2026-06-01T18:00:00", "another stale pelican"))
    revived = write(home / "events" / "2026-06-02.jsonl",  # an old day that received a recent event
                    _event("r1", "2026-06-02T09:00:00", "old flamingo") + _event("r2", "2026-11-20T09:00:00", "new flamingo"))
    recent = write(home / "events" / "2026-11-20.jsonl", _event("n1", "2026-11-20T10:00:00", "recent heron"))
    return old, revived, recent


def test_maintain_expires_old_event_logs_into_the_archive(home, settings, fake, event_logs, tmp_path):
    old, revived, recent = event_logs
    original = old.read_bytes()
    write(home / "MEMORY.md", "# Memory\n\nUser notes never expire, however old.\n")
    os.utime(home / "MEMORY.md", (0, 0))
    index(settings, embedder=fake)
    assert len(_chunks(settings)) == 6

    report = maintain(settings, embedder=fake, now=NOW)

    assert report.ok and report.check.ok and report.retention_days_event == 90
    assert [(e.path, e.newest, e.chunks, e.archived_to) for e in report.expired] == [
        ("events/2026-06-01.jsonl", "2026-06-01T18:00:00", 2, "archive/events/2026-06-01.jsonl.gz")]
    assert gzip.decompress((home / "archive/events/2026-06-01.jsonl.gz").read_bytes()) == original
    assert not old.exists() and revived.exists() and recent.exists()
    assert report.chunks_before == 6 and report.chunks_after == 4
    assert report.index.chunks_removed == 2 and report.index.files_deleted == 1
    # the first maintain of a memory re-filters what it holds: no filter version was recorded for it yet
    assert [name for name, _ in report.steps] == ["privacy scrub", "retention", "rescan and embed", "optimize",
                                                  "vacuum", "integrity check"]
    assert report.scrubbed == {}
    assert report.bytes_before > 0 and report.bytes_after > 0
    texts = set(_chunks(settings).values())
    assert "stale pelican sighting" not in texts and {"old flamingo", "new flamingo", "recent heron"} <= texts
    # Retention lasts: a full rebuild, or an index deleted and built again, does not bring the events back.
    rebuild(settings, embedder=fake)
    fresh = resolve_settings(home, db_path=str(tmp_path / "fresh.db"))
    index(fresh, embedder=fake)
    assert _chunks(settings) == _chunks(fresh)
    assert maintain(settings, embedder=fake, now=NOW).expired == ()


def test_retention_can_delete_or_be_off(home, event_logs, monkeypatch):
    old = event_logs[0]
    monkeypatch.setenv("MEMSEARCH_RETENTION_DAYS_EVENT", "0")
    assert expire_event_logs(resolve_settings(home), NOW) == [] and old.exists()
    monkeypatch.setenv("MEMSEARCH_RETENTION_DAYS_EVENT", "30")
    monkeypatch.setenv("MEMSEARCH_ARCHIVE", "false")
    [gone] = expire_event_logs(resolve_settings(home), NOW)
    assert gone.archived_to is None and not old.exists() and not (home / "archive").exists()
    monkeypatch.setenv("MEMSEARCH_RETENTION_DAYS_EVENT", "soon")
    with pytest.raises(ConfigError, match="retention_days_event = .soon. from MEMSEARCH_RETENTION_DAYS_EVENT is not valid: expected a whole number"):
        resolve_settings(home)


def test_retention_settings_resolve_from_the_config_file(home):
    write(home / "memsearch.toml", "retention_days_event = 30\narchive = false\n")
    s = resolve_settings(home)
    assert (s.retention_days_event, s.archive) == (30, False)
    assert s.describe()["archive"] == {"value": False, "from": "config"}


def test_an_append_waiting_on_an_expiring_log_goes_to_a_fresh_log(home):
    path = write(home / "events" / "2026-06-01.jsonl", _event("o1", "2026-06-01T09:00:00", "old"))
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # maintenance holds the log's lock...
    late = Event(type="prompt", content="a late old-dated event", ts="2026-06-01T10:00:00+00:00")
    writer = threading.Thread(target=append, args=(home, late))
    writer.start()
    writer.join(0.3)
    assert writer.is_alive()  # ...so the append waits
    os.unlink(path)  # and the log is moved away before the lock is released
    os.close(fd)
    writer.join(10)
    assert not writer.is_alive()
    assert [json.loads(line)["content"] for line in path.read_text().splitlines()] == ["a late old-dated event"]


def test_maintain_cli_json_and_text(sample_home):
    env = {**os.environ, "MEMSEARCH_MODEL": "none"}
    subprocess.run([MEMSEARCH, "index"], env=env, check=True, capture_output=True, timeout=120)
    proc = subprocess.run([MEMSEARCH, "maintain", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is True and data["check"]["integrity"] == "ok" and data["check"]["chunks"] == 36
    assert set(data) >= {"index", "expired", "orphan_vectors_dropped", "bytes_before", "bytes_after", "steps"}
    text = subprocess.run([MEMSEARCH, "maintain"], env=env, capture_output=True, text=True, timeout=120).stdout
    assert "integrity: ok; fts: ok" in text and "tables agree" in text and "MB ->" in text
    full = subprocess.run([MEMSEARCH, "index", "--full"], env=env, capture_output=True, text=True, timeout=120)
    assert full.returncode == 0 and "(full rebuild)" in full.stdout


# -- cron ------------------------------------------------------------------------------------------------------

FAKE_CRONTAB = """#!/bin/sh
# A crontab(1) stand-in that keeps the table in $CRONTAB_FILE.
if [ "$1" = "-l" ]; then
  [ -f "$CRONTAB_FILE" ] || { echo "no crontab for $(id -un)" >&2; exit 1; }
  cat "$CRONTAB_FILE"
else
  cp "$1" "$CRONTAB_FILE"
fi
"""


@pytest.fixture
def crontab(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    write(bin_dir / "crontab", FAKE_CRONTAB).chmod(0o755)
    table = tmp_path / "crontab.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CRONTAB_FILE", str(table))
    return table


def cron(*args, check_rc=0):
    proc = subprocess.run([MEMSEARCH, "cron", *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == check_rc, proc.stderr
    return proc


def test_cron_install_is_idempotent_and_keeps_other_lines(home, crontab):
    others = "MAILTO=me@example.com\n# my backups\n15 2 * * * /usr/local/bin/backup --all\n"
    crontab.write_text(others)
    first = json.loads(cron("install", "--json").stdout)
    assert first["installed"] and first["changed"]
    line = first["line"]
    assert line.startswith("0 3 * * 0 ") and f"MEMSEARCH_HOME={home} " in line
    assert str(REPO / "scripts" / "weekly-reindex.sh") in line and line.endswith("# memsearch weekly maintenance")
    assert "already installed" in cron("install").stdout
    assert crontab.read_text() == others + line + "\n"
    cron("install", "--day", "wed", "--time", "22:30")
    assert crontab.read_text().startswith(others) and crontab.read_text().count("memsearch weekly") == 1
    assert "30 22 * * 3 " in crontab.read_text()
    assert cron("status").stdout.startswith("installed: 30 22 * * 3 ")
    assert "removed:" in cron("uninstall").stdout
    assert crontab.read_text() == others
    assert json.loads(cron("status", "--json").stdout)["installed"] is False
    assert "no memsearch line" in cron("uninstall").stdout and crontab.read_text() == others


def test_cron_without_a_crontab_command_prints_the_line_and_says_nothing_was_installed(home, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    proc = subprocess.run([MEMSEARCH, "cron", "install"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1  # nothing was installed: not a success
    first, line = proc.stdout.splitlines()
    assert "no crontab command" in first and "nothing installed" in first
    assert line.startswith("0 3 * * 0 ") and "weekly-reindex.sh" in line
    assert proc.stderr == "Error: the weekly line is not installed: this machine has no crontab command\n"
    removed = subprocess.run([MEMSEARCH, "cron", "uninstall"], capture_output=True, text=True, timeout=60)
    assert removed.returncode == 0 and "no memsearch line to remove" in removed.stdout
    assert "add this line" not in removed.stdout


def test_cron_bad_schedule_is_a_usage_error(home, crontab):
    proc = cron("install", "--day", "someday", check_rc=2)
    assert proc.stderr == "Error: invalid --day 'someday': use sun, mon, … sat (or 0-6, 0 is Sunday)\n"
    assert "invalid --time '25:00'" in cron("install", "--time", "25:00", check_rc=2).stderr
    assert not crontab.exists()


# -- the weekly script ------------------------------------------------------------------------------------------

SCRIPT = str(REPO / "scripts" / "weekly-reindex.sh")


def weekly(env=None):
    return subprocess.run(["/bin/sh", SCRIPT], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MEMSEARCH_MODEL": "none", "MEMSEARCH_BIN": MEMSEARCH, **(env or {})})


def test_weekly_script_runs_maintenance_and_logs(sample_home):
    proc = weekly()
    assert proc.returncode == 0 and proc.stderr == ""
    log = (sample_home / ".memsearch" / "logs" / "weekly-reindex.log").read_text()
    assert " start: " in log and "integrity: ok" in log and log.rstrip().endswith("done")


def test_weekly_script_never_overlaps(sample_home):
    state = sample_home / ".memsearch"
    state.mkdir()
    holder = subprocess.Popen(["flock", str(state / "weekly-reindex.lock"), "sleep", "30"])
    try:
        for _ in range(100):  # wait until the holder has the lock
            if subprocess.run(["flock", "-n", str(state / "weekly-reindex.lock"), "true"]).returncode:
                break
        proc = weekly()
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 3
    assert proc.stderr.startswith("weekly-reindex: FAILED: another weekly maintenance run is still going")
    assert proc.stderr.count("\n") == 1 and not (state / "index.db").exists()


def test_weekly_script_fails_with_one_clear_line(sample_home, tmp_path):
    broken = write(tmp_path / "memsearch", "#!/bin/sh\necho 'Error: the disk is full' >&2\nexit 1\n")
    broken.chmod(0o755)
    proc = weekly({"MEMSEARCH_BIN": str(broken)})
    assert proc.returncode == 1
    log = sample_home / ".memsearch" / "logs" / "weekly-reindex.log"
    assert proc.stderr == (f"weekly-reindex: FAILED: memsearch maintain exited 1: the disk is full; log: {log}\n")
    assert "failed: exit 1" in log.read_text()
    missing = weekly({"MEMSEARCH_HOME": str(tmp_path / "nowhere")})
    assert missing.returncode == 1 and "memory root" in missing.stderr and missing.stderr.count("\n") == 1


class _RebuildsMidway(FakeEmbedder):
    """An embedder during whose first batch a full rebuild is swapped in (as `memsearch maintain` would do while a
    `memsearch index` embeds): every chunk id the index run listed now names other content."""

    def __init__(self, settings, **kw):
        super().__init__(**kw)
        self.settings, self.swapped = settings, False

    def embed_passages(self, texts):
        if not self.swapped:
            self.swapped = True
            write(self.settings.home / "daily" / "2026-11-21.md", "# New\n\nshifts every id after it\n")
            (self.settings.home / "MEMORY.md").unlink()
            rebuild(self.settings, embedder=None)
        return super().embed_passages(texts)


def test_an_index_run_embedding_across_a_swap_stores_only_true_vectors(sample_home, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_EMBED_BATCH", "4")
    settings = resolve_settings(sample_home)
    index(settings, embedder=None)
    model = _RebuildsMidway(settings, dim=32)
    index(settings, embedder=model)  # no KeyError, no vector stored under another chunk's hash
    conn = store.connect(settings.db_path)
    assert check_index(conn).ok
    text_of = {r[0]: r[1:] for r in conn.execute("SELECT hash, title, text, speaker, ts, reply_to FROM chunks")}
    stored = conn.execute("SELECT e.hash, v.embedding FROM embeddings e JOIN vec_chunks v ON v.rowid = e.id").fetchall()
    from indexer.base.chunktext import embed_input

    assert stored and all(vector == model._vector(embed_input(*text_of[h])) for h, vector in stored if h in text_of)
    assert index(settings, embedder=model).chunks_pending == 0  # the next run embeds what the swap left pending


def test_warm_server_vectors_follow_a_rebuild_that_renumbers_them(sample_home, fake):
    """A rebuild renumbers the embeddings: the same highest id can then name other vectors. The warm server's
    in-memory vectors must be reloaded all the same, or it answers from the old index's vectors."""
    from search_engine.serve.server import Server

    settings = resolve_settings(sample_home)
    index(settings, embedder=fake)
    server = Server(settings)
    server.embedder = fake
    query = "pelican migration schedule"

    def served():
        answer = server.handle({"op": "search", "query": query, "mode": "vector", "k": 5})
        return [h["id"] for h in answer["result"]["hits"]]

    served()  # the server now holds the old vectors in memory
    conn = store.connect(settings.db_path)
    top = conn.execute("SELECT max(id) FROM embeddings").fetchone()[0]
    memory = sample_home / "MEMORY.md"
    memory.write_text(memory.read_text().replace("Dana", "The pelican migration schedule of Dana", 1))
    rebuild(settings, embedder=fake)
    assert conn.execute("SELECT max(id) FROM embeddings").fetchone()[0] == top  # same highest id, other vectors
    expected = [h.id for h in search(settings, query, mode="vector", k=5, embedder=fake).hits]
    assert served() == expected


def test_server_indexes_a_captured_prompt_right_after_its_answer(sample_home, monkeypatch):
    from indexer.eventlog import Event, append
    from search_engine.serve.server import Server

    monkeypatch.setenv("MEMSEARCH_MODEL", "none")
    settings = resolve_settings(sample_home)
    index(settings, embedder=None)
    server = Server(settings)
    server.load()
    captured = append(sample_home, Event(type="prompt", content="where do the flamingos nest", session_id="s9"))
    answer = server.handle({"op": "search", "query": "flamingos nest", "mode": "bm25", "k": 5,
                            "filters": {"exclude_session": "s9"}, "ingest": [str(captured)]})
    assert answer["ok"] and not answer["result"]["hits"]  # its own session never answers it
    chunks_before = answer["result"]["health"]["chunks"]
    server.reply_sent()  # what the server does once the answer is on the wire
    again = server.handle({"op": "search", "query": "flamingos nest", "mode": "bm25", "k": 5})
    assert [h["session_id"] for h in again["result"]["hits"]] == ["s9"]
    assert again["result"]["health"]["chunks"] == chunks_before + 1
    refused = server.handle({"op": "ingest", "paths": ["/etc/passwd"]})
    assert refused == {"ok": True, "ingested": False} and server.after_reply
    server.reply_sent()
    assert server.after_reply == []


def test_a_busy_index_is_not_reported_as_damaged(sample_home, settings, fake):
    """FTS5's integrity check writes, so another writer holding the file past the busy timeout made it fail, and
    ``maintain`` told the user to delete a sound index. Now a file still busy after the busy timeout is a
    one-line error that changes nothing, and the check passes once the writer is done."""
    index(settings, embedder=fake)
    checker = store.connect(settings.db_path)
    checker.set_busy_timeout(20)
    writer = store.connect(settings.db_path)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(MemsearchError, match="stayed busy") as caught:
            check_index(checker)
        assert "delete" not in str(caught.value)
    finally:
        writer.execute("ROLLBACK")
    assert check_index(checker).ok
