"""``memsearch forget`` with the real store: the text leaves every file memsearch wrote, the index and its file
bytes, stays gone through a rebuild and a warm server, and the user's own notes are hidden, never edited."""

from __future__ import annotations

import gzip
import json
import os
import string
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from conftest import MEMSEARCH, write
from indexer import tombstones
from indexer.base.errors import MemsearchError, NotFound, UsageError
from indexer.base.reports import ForgetSelector
from indexer.base.settings import resolve_settings
from indexer.eventlog import Event, append
from indexer.forget import apply_forget, plan_forget, was_forgotten
from indexer.pipeline import index
from indexer.rebuild import rebuild
from indexer.summaries import build_summary, summary_path
from indexer.transcripts import import_transcripts
from search_engine.filters import Filters
from search_engine.lookup import matching
from search_engine.search import search
from search_engine.serve.server import Server


def _plan(settings, selector: ForgetSelector):
    """What `memsearch forget` plans: a --match selector takes the chunks holding every word of it."""
    return plan_forget(settings, selector, matching(settings, selector))


def _log(home: Path, *events: Event) -> None:
    for e in events:
        append(home, e)


def _event(content: str, session: str = "s1", ts: str = "2026-11-20T10:00:00+00:00", kind: str = "prompt",
           project: str = "shop") -> Event:
    return Event(type=kind, content=content, session_id=session, project=project, ts=ts)


def _files_holding(home: Path, needle: str) -> list[str]:
    """Every file under the memory root (gzip archives decompressed) whose bytes hold ``needle``."""
    found = []
    raw = needle.encode()
    for path in home.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        if raw in data:
            found.append(str(path.relative_to(home)))
    return found


def _texts(result) -> str:
    return " ".join(f"{h.title} {h.text}" for h in result.hits)


def _cli(*args, stdin=None):
    return subprocess.run([MEMSEARCH, *args], capture_output=True, text=True, timeout=120, input=stdin,
                          env={**os.environ, "MEMSEARCH_MODEL": "none"})


@pytest.fixture
def captured(home):
    """Two sessions of events, a user note and a generated session summary, indexed for BM25."""
    _log(home,
         _event("configure the zanzibar cache eviction", "s1", "2026-11-18T09:00:00+00:00"),
         _event("zanzibar eviction uses LRU with 512 entries", "s1", "2026-11-18T09:01:00+00:00", "response"),
         _event("rotate the kestrel signing certificate", "s2", "2026-11-20T09:00:00+00:00"),
         _event("we decided kestrel certs renew monthly.", "s2", "2026-11-20T09:05:00+00:00", "response"))
    write(home / "daily" / "2026-11-19.md", "# Notes\n\nThe zanzibar host is in rack 12.\n\n## Other\n\nPlain "
                                             "unrelated line about tea.\n")
    settings = resolve_settings(home, model="none")
    index(settings, embedder=None)
    path = summary_path(settings, "s2")
    write(path, build_summary(settings, "s2"))
    index(settings, [path], embedder=None)
    return settings


def test_dry_run_lists_and_changes_nothing(captured, home):
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file() and ".memsearch" not in p.parts}
    plan = _plan(captured, ForgetSelector(match="zanzibar"))
    assert {i.action for i in plan.items} == {"rewrite", "tombstone"}
    assert any("rack 12" in i.snippet for i in plan.items)
    assert plan.notes == (str(home / "daily" / "2026-11-19.md"),)
    assert {p: p.read_bytes() for p in before} == before
    assert search(captured, "zanzibar", mode="bm25").hits


def test_forget_events_removes_the_text_and_keeps_other_ids(captured, home):
    others = {h.id for h in search(captured, "kestrel", mode="bm25").hits}
    log = next((home / "events").glob("*.jsonl"))
    size = log.stat().st_size
    plan = _plan(captured, ForgetSelector(session="s1"))
    assert len(plan.items) == 2 and {i.action for i in plan.items} == {"rewrite"}
    report = apply_forget(captured, plan)
    assert report.events_removed == 2 and report.chunks_removed == 2
    assert log.stat().st_size == size  # lines blanked to the same length: offsets and ids of the rest hold
    assert _files_holding(home, "zanzibar eviction") == []
    assert _files_holding(home, "LRU with 512") == []
    assert "LRU" not in _texts(search(captured, "zanzibar eviction LRU", mode="bm25"))
    assert {h.id for h in search(captured, "kestrel", mode="bm25").hits} == others
    index(captured, embedder=None)
    rebuild(captured, embedder=None)
    assert "LRU" not in _texts(search(captured, "zanzibar eviction LRU", mode="bm25"))
    assert {h.id for h in search(captured, "kestrel", mode="bm25").hits} == others
    log_text = (home / ".memsearch" / "logs" / "forget.log").read_text()
    assert "events=2" in log_text and "zanzibar" not in log_text


def test_the_forget_log_tells_a_forgotten_id_from_one_never_known(captured):
    plan = _plan(captured, ForgetSelector(session="s1"))
    kept = _plan(captured, ForgetSelector(session="s2")).items[0].id
    assert not any(was_forgotten(captured, i.id) for i in plan.items)
    apply_forget(captured, plan)
    assert all(was_forgotten(captured, i.id) and was_forgotten(captured, i.id.upper()) for i in plan.items)
    assert not was_forgotten(captured, kept) and not was_forgotten(captured, "deadbeef0000")
    assert not was_forgotten(captured, plan.items[0].id[:6])  # a whole id, not a prefix of one


def test_forgetting_an_event_rebuilds_its_session_summary(captured, home):
    summary = summary_path(captured, "s2")
    assert "kestrel signing" in summary.read_text()
    plan = _plan(captured, ForgetSelector(match="rotate kestrel signing certificate", limit=1))
    assert [i.category for i in plan.items] == ["prompt"]
    assert plan.summaries == (str(summary),)
    report = apply_forget(captured, plan)
    assert report.summaries_rewritten == 1
    assert "kestrel signing" not in summary.read_text()
    assert "renew monthly" in summary.read_text()  # the decision that remains stays in the summary
    assert _files_holding(home, "kestrel signing") == []
    rebuild(captured, embedder=None)
    assert "signing" not in _texts(search(captured, "kestrel signing certificate", mode="bm25"))


def test_words_that_also_take_the_summary_rebuild_it_without_them_and_keep_the_rest(captured, home):
    """--match takes the prompt and the summary's own chunk, which quotes it: the summary is rebuilt from the
    events that remain (the decision stays), not deleted with everything else it held."""
    summary = summary_path(captured, "s2")
    plan = _plan(captured, ForgetSelector(match="rotate kestrel signing certificate"))
    assert {i.action for i in plan.items} == {"rewrite", "summary"}
    report = apply_forget(captured, plan)
    assert (report.summaries_rewritten, report.summaries_deleted) == (1, 0)
    assert "renew monthly" in summary.read_text() and "signing" not in summary.read_text()
    assert _files_holding(home, "kestrel signing") == []
    rebuild(captured, embedder=None)
    assert "signing" not in _texts(search(captured, "kestrel signing certificate", mode="bm25"))
    assert "renew monthly" in _texts(search(captured, "kestrel renew monthly", mode="bm25"))


def test_a_summary_named_by_id_is_deleted_not_rebuilt(captured, home):
    summary = summary_path(captured, "s2")
    chunk = next(i.id for i in _plan(captured, ForgetSelector(match="kestrel renew monthly")).items
                 if i.action == "summary")
    report = apply_forget(captured, _plan(captured, ForgetSelector(ids=(chunk,))))
    assert (report.summaries_rewritten, report.summaries_deleted) == (0, 1) and not summary.exists()
    assert search(captured, "kestrel renew monthly", mode="bm25").hits  # the events it came from stay


def test_a_summary_forgotten_by_one_chunk_id_goes_whole_and_its_next_session_end_does_not_write_it_again(
        captured, home):
    """Named by the id of one of its sections, the summary is deleted whole: the dry run lists every chunk that
    leaves and the report counts them. When the session resumes and ends again, its summary is not written back
    with the same text and ids: it sums up only what happened since."""
    from indexer.summaries import write_session_summary

    summary = summary_path(captured, "s2")
    sections = [i for i in _plan(captured, ForgetSelector(session="s2")).items if i.action == "summary"]
    assert len(sections) > 1
    plan = _plan(captured, ForgetSelector(ids=(sections[-1].id,)))
    assert sorted(i.id for i in plan.items) == sorted(i.id for i in sections)
    dry = _cli("forget", sections[-1].id, "--dry-run")
    assert dry.stdout.startswith(f"Would forget {len(sections)} indexed item(s):"), dry
    report = apply_forget(captured, plan)
    assert report.chunks_removed == len(sections) and report.summaries_deleted == 1 and not summary.exists()
    assert write_session_summary(captured, "s2") is None and not summary.exists()  # SessionEnd, nothing new
    _log(home, _event("resumed: add the heron cache warmup", "s2", "2026-11-21T09:00:00+00:00"))
    assert write_session_summary(captured, "s2") == summary
    text = summary.read_text()
    assert "heron cache warmup" in text and "kestrel" not in text and "renew monthly" not in text
    ids = {i.id for i in _plan(captured, ForgetSelector(session="s2")).items if i.action == "summary"}
    assert ids and not ids & {i.id for i in sections}
    assert search(captured, "kestrel renew monthly", mode="bm25").hits  # the events it came from stay
    assert b"kestrel" not in (home / ".memsearch" / "forgotten.json").read_bytes()


def test_forgetting_a_whole_session_deletes_its_summary(captured, home):
    apply_forget(captured, _plan(captured, ForgetSelector(session="s2")))
    assert not summary_path(captured, "s2").exists()
    assert _files_holding(home, "kestrel") == []
    rebuild(captured, embedder=None)
    assert not search(captured, "kestrel", mode="bm25").hits


def test_a_user_note_gets_a_tombstone_until_it_changes(captured, home):
    note = home / "daily" / "2026-11-19.md"
    original = note.read_bytes()
    plan = _plan(captured, ForgetSelector(match="zanzibar rack"))
    items = [i for i in plan.items if i.action == "tombstone"]
    assert len(items) == 1
    report = apply_forget(captured, plan)
    assert note.read_bytes() == original  # never edited behind the user's back
    assert [(n.path, n.line_start) for n in report.notes_to_edit] == [("daily/2026-11-19.md", 1)]
    assert report.tombstones_added == 1
    assert "rack 12" not in _texts(search(captured, "zanzibar rack", mode="bm25"))
    assert "tea" in _texts(search(captured, "unrelated tea", mode="bm25"))  # the rest of the note stays
    os.utime(note, (time.time() + 5, time.time() + 5))  # touched, not changed: still hidden
    index(captured, embedder=None)
    rebuild(captured, embedder=None)
    assert "rack 12" not in _texts(search(captured, "zanzibar rack", mode="bm25"))
    assert b"rack 12" not in (home / ".memsearch" / "forgotten.json").read_bytes()
    note.write_text(original.decode() + "\nedited by the user\n")  # the file changed: the tombstone lapses
    index(captured, embedder=None)
    assert "rack 12" in _texts(search(captured, "zanzibar rack", mode="bm25"))
    assert tombstones.load(captured.state_dir, captured.home).count == 0


@pytest.mark.parametrize("shape", ["[]", "{}", '{"notes": [], "events": []}', '{"notes": {}}', "null"])
def test_a_forgotten_json_of_another_shape_is_refused_as_a_parse_error_is(captured, home, shape):
    """Valid JSON that is not what forget writes holds no tombstone: read as none, it would bring the forgotten
    note back. Refused in one line, exit 1, as garbage is, and the note stays hidden."""
    apply_forget(captured, _plan(captured, ForgetSelector(match="zanzibar rack")))
    stones = home / ".memsearch" / "forgotten.json"
    kept = stones.read_bytes()
    for broken in (shape, '{"version": 1, "notes": {'):
        stones.write_text(broken)
        done = _cli("index")
        assert done.returncode == 1 and done.stdout == "", done
        assert done.stderr.startswith(f"Error: cannot read {stones} (") and done.stderr.count("\n") == 1
        assert done.stderr.endswith("it keeps forgotten notes hidden: restore or fix it\n")
        with pytest.raises(MemsearchError):
            tombstones.load(captured.state_dir, home)
    stones.write_bytes(kept)
    index(captured, embedder=None)
    assert "rack 12" not in _texts(search(captured, "zanzibar rack", mode="bm25"))


def test_tombstones_restored_from_a_backup_hide_their_chunks_at_the_next_incremental_index(captured, home):
    apply_forget(captured, _plan(captured, ForgetSelector(match="zanzibar rack")))
    stones = home / ".memsearch" / "forgotten.json"
    backup = stones.read_bytes()
    stones.unlink()  # lost: a rebuild reads every note as it is and the chunk is back
    rebuild(captured, embedder=None)
    assert "rack 12" in _texts(search(captured, "zanzibar rack", mode="bm25"))
    stones.write_bytes(backup)  # restored: the note itself did not change
    report = index(captured, embedder=None)
    assert "rack 12" not in _texts(search(captured, "zanzibar rack", mode="bm25"))
    assert "tea" in _texts(search(captured, "unrelated tea", mode="bm25"))  # the rest of the note stays
    assert report.files_changed == 1  # that note read again, nothing else
    assert index(captured, embedder=None).files_changed == 0  # and only once


def _forget_quokka(root: Path):
    """A note under ``root`` with its quokka chunk forgotten (a tombstone), indexed for BM25."""
    write(root / "daily" / "2026-01-02.md", "# Animals\n\n## Quokka\n\nThe quokka smiles at tourists on "
                                            "Rottnest.\n\n## Wombat\n\nWombats dig burrows.\n")
    settings = resolve_settings(root, model="none")
    index(settings, embedder=None)
    report = apply_forget(settings, _plan(settings, ForgetSelector(match="quokka")))
    assert report.tombstones_added == 1
    return settings


def _finds(root: Path, word: str) -> bool:
    return word in _texts(search(resolve_settings(root, model="none"), word, mode="bm25")).lower()


def test_moving_the_memory_root_keeps_forgotten_note_chunks_hidden(tmp_path):
    """The tombstone names the note relative to the root: an index run at the root's new place (or back at the
    old one) keeps the chunk hidden, and forgotten.json keeps it."""
    _forget_quokka(tmp_path / "mv1")
    os.rename(tmp_path / "mv1", tmp_path / "mv2")
    moved = resolve_settings(tmp_path / "mv2", model="none")
    index(moved, embedder=None)
    index(moved, embedder=None, full=True)
    rebuild(moved, embedder=None)
    assert not _finds(tmp_path / "mv2", "quokka") and _finds(tmp_path / "mv2", "wombats")
    assert list(tombstones.load(moved.state_dir, moved.home).notes) == ["daily/2026-01-02.md"]
    os.rename(tmp_path / "mv2", tmp_path / "mv1")
    index(resolve_settings(tmp_path / "mv1", model="none"), embedder=None)
    assert not _finds(tmp_path / "mv1", "quokka") and _finds(tmp_path / "mv1", "wombats")


def test_tombstones_written_with_absolute_paths_are_read_and_kept(tmp_path):
    """forgotten.json from before relative keys: an entry under the root is read as relative; one of the place the
    root left (moved before upgrading) still hides the note with those bytes there, and takes it over; one that
    names nothing here is kept, never dropped unseen."""
    settings = _forget_quokka(tmp_path / "mv1")
    stones = json.loads((settings.state_dir / "forgotten.json").read_bytes())
    entry = stones["notes"]["daily/2026-01-02.md"]
    foreign = {"file_hash": "0" * 32, "chunks": ["1" * 32], "ranges": [[1, 2]]}
    old_form = {str(settings.home / "daily" / "2026-01-02.md"): entry, "/elsewhere/notes/x.md": foreign}
    (settings.state_dir / "forgotten.json").write_bytes(json.dumps({**stones, "notes": old_form}).encode())
    index(settings, embedder=None, full=True)
    assert not _finds(settings.home, "quokka") and _finds(settings.home, "wombats")
    saved = json.loads((settings.state_dir / "forgotten.json").read_bytes())["notes"]
    assert saved == {"daily/2026-01-02.md": entry, "/elsewhere/notes/x.md": foreign}

    left = {"/old/place/mv1/daily/2026-01-02.md": entry, "/elsewhere/notes/x.md": foreign}
    (settings.state_dir / "forgotten.json").write_bytes(json.dumps({**stones, "notes": left}).encode())
    os.rename(tmp_path / "mv1", tmp_path / "mv2")
    moved = resolve_settings(tmp_path / "mv2", model="none")
    index(moved, embedder=None)
    assert not _finds(moved.home, "quokka") and _finds(moved.home, "wombats")
    saved = json.loads((moved.state_dir / "forgotten.json").read_bytes())["notes"]
    assert saved == {"daily/2026-01-02.md": entry, "/elsewhere/notes/x.md": foreign}
    write(moved.home / "daily" / "2026-01-02.md", "# Animals\n\n## Quokka\n\nThe quokka was edited.\n")
    report = index(moved, embedder=None)  # the user edited the note: its tombstone lapses, and the report says so
    assert _finds(moved.home, "quokka") and "1 note(s) changed or gone" in (report.model_note or "")
    assert json.loads((moved.state_dir / "forgotten.json").read_bytes())["notes"] == {"/elsewhere/notes/x.md": foreign}


def test_a_tombstone_in_an_extra_source_outside_the_root_keeps_its_path_and_lapses_when_it_changes(home, tmp_path):
    rules = write(tmp_path / "code" / "CLAUDE.md", "# Rules\n\n## Ocelot\n\nthe ocelot deploy key rule\n\n"
                                                  "## Lint\n\nalways lint\n")
    write(home / "memsearch.toml", f'extra_sources = ["{rules}"]\n')
    settings = resolve_settings(home, model="none")
    index(settings, embedder=None)
    apply_forget(settings, _plan(settings, ForgetSelector(match="ocelot")))
    assert list(tombstones.load(settings.state_dir, home).notes) == [str(rules)]
    index(settings, embedder=None, full=True)
    assert not _finds(home, "ocelot") and _finds(home, "lint")
    rules.write_text(rules.read_text() + "\nedited\n")
    assert "1 note(s) changed or gone" in (index(settings, embedder=None).model_note or "")
    assert _finds(home, "ocelot") and tombstones.load(settings.state_dir, home).notes == {}


def test_archives_lose_the_matching_lines(captured, home):
    folder = home / "archive" / "events"
    folder.mkdir(parents=True)
    lines = [json.dumps({"id": "a1", "ts": "2026-08-01T10:00:00", "session_id": "old", "type": "prompt",
                         "content": "archived walrus secret plan"}),
             json.dumps({"id": "a2", "ts": "2026-08-01T10:01:00", "session_id": "other", "type": "prompt",
                         "content": "archived keeper line"})]
    (folder / "2026-08-01.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    plan = _plan(captured, ForgetSelector(session="old"))
    assert plan.archived_events == 1 and not plan.items
    report = apply_forget(captured, plan)
    assert report.archived_events_removed == 1
    assert _files_holding(home, "walrus") == []
    assert _files_holding(home, "keeper line") == ["archive/events/2026-08-01.jsonl.gz"]


def test_match_reads_the_archived_logs_too_and_rewrites_them_without_those_events(captured, home):
    """Archives are not indexed, but --match reads their words as BM25 does (stemmed: "lives" for "live"), within
    the other criteria and -k, and the forget drops those lines: never "Nothing matches" while they hold the words."""
    folder = home / "archive" / "events"
    folder.mkdir(parents=True)
    lines = [json.dumps({"id": "a1", "ts": "2026-06-01T10:00:00", "session_id": "old-1", "type": "prompt",
                         "project": "shop", "content": "Mr Pemberton lives at 12 Elm Street"}),
             json.dumps({"id": "a2", "ts": "2026-06-01T10:01:00", "session_id": "old-2", "type": "response",
                         "project": "blog", "content": "Pemberton's parcel: leave it with the neighbour who lives at 14"}),
             json.dumps({"id": "a3", "ts": "2026-06-01T10:02:00", "session_id": "old-1", "type": "prompt",
                         "content": "a keeper line about Pemberton alone"})]
    (folder / "2026-06-01.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    dry = _cli("forget", "--match", "Pemberton live", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith("Would forget 0 indexed item(s) and 2 archived event(s)"), dry
    assert _plan(captured, ForgetSelector(match="Pemberton live", project="shop")).archived_events == 1
    assert _plan(captured, ForgetSelector(match="Pemberton live", limit=1)).archived_events == 1
    assert _plan(captured, ForgetSelector(match="Pemberton live", session="nobody")).archived_events == 0
    plan = _plan(captured, ForgetSelector(match="Pemberton live"))
    assert (plan.archived_events, plan.archived_ids, plan.items) == (2, ("a1", "a2"), ())
    report = apply_forget(captured, plan)
    assert (report.archived_events_removed, report.archives_rewritten) == (2, 1)
    assert _files_holding(home, "Elm Street") == [] and _files_holding(home, "neighbour") == []
    assert _files_holding(home, "keeper line") == ["archive/events/2026-06-01.jsonl.gz"]
    assert _cli("forget", "--match", "Pemberton live", "--dry-run").stdout.startswith("Nothing matches")


def test_dates_ids_and_projects_select(captured):
    assert {i.session_id for i in _plan(captured, ForgetSelector(before="2026-11-19T00:00:00")).items
            if i.kind == "event"} == {"s1"}
    assert {i.session_id for i in _plan(captured, ForgetSelector(since="2026-11-20T00:00:00")).items
            if i.kind == "event"} == {"s2"}
    hit = search(captured, "kestrel signing", mode="bm25", filters=Filters(kind="event")).hits[0]
    assert [i.id for i in _plan(captured, ForgetSelector(ids=(hit.id[:6],))).items] == [hit.id]
    assert [i.id for i in _plan(captured, ForgetSelector(ids=(hit.event_id,))).items] == [hit.id]
    by_project = _plan(captured, ForgetSelector(project="shop")).items
    assert sum(i.action == "rewrite" for i in by_project) == 4  # and the project's session summary
    assert {i.action for i in by_project} == {"rewrite", "summary"}
    with pytest.raises(NotFound):
        _plan(captured, ForgetSelector(ids=("ffffffffffff",)))
    with pytest.raises(UsageError):
        _plan(captured, ForgetSelector())


def test_the_bytes_do_not_survive_in_the_database_file(captured, home):
    apply_forget(captured, _plan(captured, ForgetSelector(session="s1")))
    db = b"".join(p.read_bytes() for p in (home / ".memsearch").glob("index.db*"))
    assert b"zanzibar eviction" not in db and b"512 entries" not in db
    assert b"kestrel" in db  # what was not forgotten is still there


def test_cli_dry_run_confirmation_and_json(captured, home):
    dry = _cli("forget", "--session", "s1", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    shape = json.loads(dry.stdout)
    assert set(shape) == {"selector", "items", "event_logs", "archives", "archived_events", "summaries", "notes",
                          "archived_ids"}
    assert len(shape["items"]) == 2
    refused = _cli("forget", "--session", "s1")  # not a terminal, no --yes
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: forget needs a confirmation") and refused.stderr.count("\n") == 1
    assert search(captured, "zanzibar eviction", mode="bm25").hits
    done = _cli("forget", "--session", "s1", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["events_removed"] == 2 and "zanzibar" not in done.stdout
    nothing = _cli("forget")
    assert nothing.returncode == 2 and nothing.stderr.startswith("Error: say what to forget")
    again = _cli("forget", "--session", "s1", "--yes")
    assert again.returncode == 0 and again.stdout.startswith("Nothing matches")


def _on_a_terminal(*args: str, answer: str) -> subprocess.CompletedProcess:
    """``memsearch ARGS`` with a terminal for its input (so it asks), answering ``answer``."""
    import pty

    master, slave = pty.openpty()
    with subprocess.Popen([MEMSEARCH, *args], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env={**os.environ, "MEMSEARCH_MODEL": "none"}) as proc:
        os.close(slave)
        os.write(master, answer.encode() + b"\n")
        out, err = proc.communicate(timeout=120)
    os.close(master)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_forget_on_a_terminal_asks_without_a_dry_run_line_and_a_no_changes_nothing(captured):
    declined = _on_a_terminal("forget", "--match", "zanzibar rack", answer="n")
    assert declined.returncode == 0 and declined.stdout.strip() == "", declined  # click echoes a space there
    assert declined.stderr.startswith("Would forget 1 indexed item(s):") and "dry run" not in declined.stderr
    assert declined.stderr.endswith("Forget these 1 item(s)? [y/N]:Cancelled: nothing forgotten.\n")
    assert "rack 12" in _texts(search(captured, "zanzibar rack", mode="bm25"))
    accepted = _on_a_terminal("forget", "--match", "zanzibar rack", answer="y")
    assert accepted.returncode == 0 and accepted.stdout.lstrip().startswith("forgotten: 1 chunks"), accepted
    assert "rack 12" not in _texts(search(captured, "zanzibar rack", mode="bm25"))


def test_match_takes_only_what_holds_every_word_never_the_nearest(sample_home, settings):
    """A search fills its hits with whatever is nearest; forget --match takes only the chunks whose own text holds
    every content word (stemmed), whatever their status, and says so when nothing does."""
    write(sample_home / "daily" / "2026-11-21.md", "# 2026-11-21\n## Secrets\nThe staging passwords rotate on "
          "Mondays.\n\n## Lunch\nTried the new ramen place.\n")
    _log(sample_home, _event("what is the staging password again?", session="s9", ts="2026-11-21T10:00:00"),
         _event("It is kept in the vault, not in memory.", session="s9", ts="2026-11-21T10:00:05", kind="response"))
    index(settings, embedder=None)
    plan = _plan(settings, ForgetSelector(match="staging password"))
    assert sorted((i.path, i.title) for i in plan.items) == [
        ("daily/2026-11-21.md", "2026-11-21 > Secrets"), ("events/2026-11-21.jsonl", "prompt")]
    # the reply after the prompt holds neither word (only its context does), MEMORY.md says "staging database"
    assert not any("vault" in i.snippet or "PostgreSQL" in i.snippet for i in plan.items)
    assert len(_plan(settings, ForgetSelector(match="staging password", limit=1)).items) == 1
    assert _plan(settings, ForgetSelector(match="staging password zebra")).items == ()
    with pytest.raises(UsageError, match="only common words"):
        _plan(settings, ForgetSelector(match="who are they"))


@pytest.mark.model
def test_cli_match_with_the_model_takes_the_one_matching_chunk(sample_home, model_cache):
    """The new user's report: with vectors, the default hybrid search filled -k with the nearest chunks, so
    `forget --match "staging password"` would have taken 10 of the demo memory's chunks."""
    write(sample_home / "daily" / "2026-11-21.md", "# 2026-11-21\n## Secrets\nThe staging password is hunter2.\n")
    env = {**os.environ, "MEMSEARCH_CACHE_DIR": str(model_cache)}
    subprocess.run([MEMSEARCH, "index"], env=env, check=True, capture_output=True, timeout=300)
    dry = subprocess.run([MEMSEARCH, "forget", "--match", "staging password", "--dry-run", "--json"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert [i["path"] for i in json.loads(dry.stdout)["items"]] == ["daily/2026-11-21.md"]
    gone = subprocess.run([MEMSEARCH, "forget", "--match", "staging password", "--mode", "vector"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert gone.returncode == 2 and "--mode" in gone.stderr


@pytest.mark.model
def test_a_running_warm_server_never_returns_a_forgotten_item(home, real_embedder):
    """A real `memsearch serve` process, with the real model, kept running through the forget."""
    from search_engine.serve.client import is_running, request

    _log(home, _event("the narwhal migration plan moves orders to shard seven", "s1"),
         _event("an unrelated note on coffee beans and grinders", "s2"))
    settings = resolve_settings(home)
    index(settings, embedder=real_embedder)
    server = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "120"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        for _ in range(300):
            if is_running(settings):
                break
            time.sleep(0.1)
        query = {"op": "search", "query": "narwhal migration to shard seven", "k": 5, "mode": "hybrid"}
        answer = request(settings, query, timeout=20)
        assert answer["ok"] and answer["result"]["mode_used"] == "hybrid"
        assert "narwhal" in json.dumps(answer["result"]["hits"])
        apply_forget(settings, _plan(settings, ForgetSelector(session="s1")))
        for mode in ("hybrid", "vector", "bm25"):
            answer = request(settings, {**query, "mode": mode}, timeout=20)
            assert answer["ok"], answer
            assert "narwhal" not in json.dumps(answer["result"]["hits"]), mode
    finally:
        request(settings, {"op": "stop"}, timeout=2)
        server.wait(timeout=30)


WORD = st.text(alphabet=string.ascii_lowercase, min_size=6, max_size=10)


@pytest.mark.model
@hsettings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(WORD, min_size=4, max_size=8, unique=True),
    forget_mask=st.lists(st.booleans(), min_size=8, max_size=8),
    as_note=st.lists(st.booleans(), min_size=8, max_size=8),
    how=st.sampled_from(["ids", "session", "match"]),
)
def test_after_forget_nothing_shows_the_forgotten_text(real_embedder, words, forget_mask, as_note, how):
    """Property: whatever mix of events and notes, after forget no file under the memory root and no search
    (BM25, vector, hybrid, and a warm server's) shows a forgotten item's text, before and after a rebuild."""
    with tempfile.TemporaryDirectory() as tmp:  # a fresh memory root for every example
        home = Path(tmp) / "memory"
        home.mkdir()
        settings = resolve_settings(home)
        items = []
        for i, word in enumerate(words):
            token = f"zq{word}"
            text = f"memory item {i} about {token} and its details"
            if as_note[i]:
                write(home / "notes" / f"note-{i}.md", f"# Note {i}\n\n{text}\n")
            else:
                append(home, _event(text, session=f"s{i}", ts=f"2026-11-2{i % 10}T10:00:00+00:00"))
            items.append((token, as_note[i], forget_mask[i] or i == 0))
        index(settings, embedder=real_embedder)
        server = Server(settings)
        server.embedder = real_embedder
        server.connection()
        server.vectors()
        chosen = [(tok, note) for tok, note, go in items if go]
        ids = []
        for tok, _ in chosen:
            hit = search(settings, tok, mode="bm25", k=1).hits[0]
            assert tok in hit.text
            ids.append(hit.id)
        if how == "ids":
            selectors = [ForgetSelector(ids=tuple(ids))]
        elif how == "session":
            selectors = [ForgetSelector(ids=(i,)) if note else ForgetSelector(session=f"s{words.index(tok[2:])}")
                         for i, (tok, note) in zip(ids, chosen)]
        else:
            selectors = [ForgetSelector(match=tok, limit=1) for tok, _ in chosen]
        for selector in selectors:
            apply_forget(settings, _plan(settings, selector))
        kept = [tok for tok, _, go in items if not go]

        def check() -> None:
            for tok, note in chosen:
                holding = _files_holding(home, tok)
                if note:  # the user's own note is never edited: only the file itself may still hold it
                    assert all(p.startswith("notes/") for p in holding), holding
                else:
                    assert holding == [], holding
                query = f"memory item about {tok} and its details"
                for mode in ("bm25", "vector", "hybrid"):
                    result = search(settings, query, mode=mode, k=20, embedder=real_embedder)
                    assert tok not in _texts(result), (mode, tok)
                served = server.handle({"op": "search", "query": query, "k": 20, "mode": "hybrid"})
                assert served["ok"] and tok not in json.dumps(served["result"]["hits"])
            for tok in kept:
                assert tok in _texts(search(settings, tok, mode="bm25", k=5))

        check()
        rebuild(settings, embedder=real_embedder)
        check()
        if server.conn is not None:
            server.conn.close()


def test_a_transcript_import_does_not_bring_forgotten_events_back(home, tmp_path):
    lines = [{"type": "user", "uuid": "u1", "sessionId": "T", "cwd": "/w/app", "timestamp": "2026-06-15T10:00:01Z",
              "message": {"role": "user", "content": "the ocelot rollout needs a feature flag"}},
             {"type": "user", "uuid": "u2", "sessionId": "T", "cwd": "/w/app", "timestamp": "2026-06-15T10:02:01Z",
              "message": {"role": "user", "content": "and the heron dashboard stays"}}]
    transcript = write(tmp_path / "projects" / "-w-app" / "T.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    settings = resolve_settings(home, model="none")
    assert import_transcripts(settings, [transcript]).events_imported == 2
    apply_forget(settings, _plan(settings, ForgetSelector(match="ocelot", limit=1)))
    (settings.state_dir / "imports.json").unlink()  # as if the import state were lost: it reads from the start
    again = import_transcripts(settings, [transcript])
    assert again.events_imported == 0
    assert _files_holding(home, "ocelot") == []
    assert not search(settings, "ocelot", mode="bm25").hits and search(settings, "heron", mode="bm25").hits


def test_turns_the_hooks_captured_and_forget_took_never_come_back_through_a_transcript_import(home, tmp_path):
    """The hooks log their own ids; Claude Code's transcript holds the same prompt, tool call and reply under its
    ids. Forgotten (here by --match), none comes back through `memsearch import transcripts`: not the prompt, not
    the tool call, not a one-line reply nor one the Stop hook read from the transcript as several lines joined."""
    from hookrun import hook, prompt_payload, tool_payload

    s, cwd = "f-sess-1", "/w/shop-api"
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": s, "cwd": cwd, "timestamp": "2026-11-20T10:00:01.000Z",
         "message": {"role": "user", "content": "also note that my kid Tommy has a dentist appointment Friday 3pm"}},
        {"type": "assistant", "uuid": "a1", "sessionId": s, "cwd": cwd, "timestamp": "2026-11-20T10:00:02.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_7", "name": "Bash",
              "input": {"command": "echo 'Tommy dentist Friday 3pm' >> calendar.txt"}}]}},
        {"type": "user", "uuid": "r1", "sessionId": s, "cwd": cwd, "timestamp": "2026-11-20T10:00:03.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_7", "content": ""}]}},
        {"type": "assistant", "uuid": "a2", "sessionId": s, "cwd": cwd, "timestamp": "2026-11-20T10:00:04.000Z",
         "message": {"role": "assistant", "content": "Noted: Tommy dentist appointment Friday 3pm."}},
        {"type": "user", "uuid": "u2", "sessionId": s, "cwd": cwd, "timestamp": "2026-11-20T10:01:00.000Z",
         "message": {"role": "user", "content": "and Tommy's dentist wants the insurance card"}},
        {"type": "assistant", "uuid": "a3", "sessionId": s, "cwd": cwd, "timestamp": "2026-11-20T10:01:01.000Z",
         "message": {"role": "assistant", "content": "I will put the insurance card in the Tommy dentist note."}},
        {"type": "assistant", "uuid": "a4", "sessionId": s, "cwd": cwd, "timestamp": "2026-11-20T10:01:02.000Z",
         "message": {"role": "assistant", "content": "Done: the dentist note now lists the card for Tommy."}},
        {"type": "user", "uuid": "u3", "sessionId": s, "cwd": cwd, "timestamp": "2026-11-20T10:02:00.000Z",
         "message": {"role": "user", "content": "which queue library do we use for retries?"}},
    ]
    transcript = write(tmp_path / "projects" / "-w-shop-api" / f"{s}.jsonl",
                       "\n".join(json.dumps(x) for x in lines) + "\n")
    first, second = tmp_path / "first-turn.jsonl", tmp_path / "second-turn.jsonl"
    write(first, "\n".join(json.dumps(x) for x in lines[:4]) + "\n")
    write(second, "\n".join(json.dumps(x) for x in lines[:7]) + "\n")
    hook("prompt", prompt_payload(lines[0]["message"]["content"], session=s, cwd=cwd))
    hook("tool", {**tool_payload("Bash", lines[1]["message"]["content"][0]["input"], {"stdout": ""}, session=s),
                  "tool_use_id": "toolu_7"})
    hook("stop", {"session_id": s, "hook_event_name": "Stop", "cwd": cwd, "transcript_path": str(first),
                  "last_assistant_message": "Noted: Tommy dentist appointment Friday 3pm."})
    hook("prompt", prompt_payload(lines[4]["message"]["content"], session=s, cwd=cwd))
    hook("stop", {"session_id": s, "hook_event_name": "Stop", "cwd": cwd, "transcript_path": str(second)})
    settings = resolve_settings(home, model="none")
    index(settings, embedder=None)
    report = apply_forget(settings, _plan(settings, ForgetSelector(match="Tommy dentist")))
    assert report.events_removed == 5
    stones = (settings.state_dir / "forgotten.json").read_bytes()
    assert b"Tommy" not in stones and b"dentist" not in stones  # hashes only
    imported = import_transcripts(settings, [transcript])
    assert imported.events_imported == 1, imported  # the queue question, which the hooks never saw
    assert _files_holding(home, "Tommy") == [] and _files_holding(home, "dentist") == []
    assert not search(settings, "Tommy dentist", mode="bm25").hits
    assert search(settings, "queue library retries", mode="bm25").hits


def test_vacuum_on_request_and_forget_without_an_index(home):
    settings = resolve_settings(home, model="none")
    plan = _plan(settings, ForgetSelector(session="nobody"))
    assert plan.items == () and apply_forget(settings, plan).chunks_removed == 0
    _log(home, *[_event(f"filler event number {i} " + "x" * 400, "s1") for i in range(200)],
         _event("the marmot secret", "s2"))
    index(settings, embedder=None)
    report = apply_forget(settings, _plan(settings, ForgetSelector(session="s1")), vacuum=True)
    assert report.vacuumed and report.chunks_removed == 200
    assert report.db_bytes_after < report.db_bytes_before
    assert search(settings, "marmot", mode="bm25").hits


@pytest.mark.parametrize("selector", [dict(match="zebra migration"), dict(session="s2"), dict(since="2020-01-01")])
def test_with_no_index_forget_indexes_the_sources_first_never_saying_nothing_matches(home, selector):
    """The index deleted (derived data) or never built (only the prompt hook ran): the logs and notes still hold
    the words, so a forget builds it (BM25) before it selects, in its dry run too."""
    _log(home, _event("plan the zebra migration for friday", "s2", "2026-11-20T09:00:00+00:00"),
         _event("the zebra migration moves the orders table", "s2", "2026-11-20T09:01:00+00:00", "response"))
    write(home / "notes" / "zebra.md", "# Zebra\n\nThe zebra migration runbook lives in ops/.\n")
    settings = resolve_settings(home, model="none")
    index(settings, embedder=None)
    (home / ".memsearch" / "index.db").unlink()
    dry = _cli("forget", *(f"--{k}={v}" for k, v in selector.items()), "--dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith("Would forget"), dry
    plan = _plan(settings, ForgetSelector(**selector))
    assert {i.category for i in plan.items} >= {"prompt", "response"}
    apply_forget(settings, plan)
    assert not [f for f in _files_holding(home, "zebra migration") if f.startswith("events/")]
    assert "zebra migration moves" not in _texts(search(settings, "zebra migration", mode="bm25"))


def test_a_forget_on_a_fresh_root_finds_the_prompts_only_the_prompt_hook_logged(home):
    _log(home, *[_event(f"forgetme number {i} in the payment worker", "s9") for i in range(5)])
    settings = resolve_settings(home, model="none")
    assert not settings.db_path.exists()
    report = apply_forget(settings, _plan(settings, ForgetSelector(match="forgetme")))
    assert report.events_removed == 5 and _files_holding(home, "forgetme") == []
    assert index(settings, embedder=None).chunks_added == 0


def test_hooks_appending_during_a_forget_lose_no_event(home):
    """Forget rewrites a log other processes append to: an append that waited for the lock lands in the new log."""
    from concurrent.futures import ThreadPoolExecutor

    settings = resolve_settings(home, model="none")
    ts = "2026-11-20T10:00:00+00:00"
    _log(home, *[_event(f"doomed lynx note {i}", "gone", ts) for i in range(30)])
    index(settings, embedder=None)

    def writer(n: int) -> None:
        for i in range(40):
            append(home, _event(f"kept event {n}-{i}", f"w{n}", ts))

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(writer, n) for n in range(3)]
        for _ in range(5):
            apply_forget(settings, _plan(settings, ForgetSelector(session="gone")))
        for f in futures:
            f.result()
    apply_forget(settings, _plan(settings, ForgetSelector(session="gone")))
    lines = [json.loads(x) for x in (home / "events" / "2026-11-20.jsonl").read_text().splitlines()]
    kept = sorted(e["content"] for e in lines if "content" in e)
    assert kept == sorted(f"kept event {n}-{i}" for n in range(3) for i in range(40))
    assert _files_holding(home, "doomed lynx") == []


def test_a_forgotten_note_chunk_stays_hidden_when_a_newer_filter_masks_more_of_it(home, monkeypatch):
    """A newer privacy filter changes the stored text of an unchanged note (so its tombstone key), not where the
    chunk stands: a rebuild after an upgrade must not bring the forgotten chunk back."""
    import indexer.sources as sources
    from indexer.privacy import redact as real_redact

    write(home / "notes" / "ops.md", "# Rack\nzanzibar rack 12 holds the ledger box; its pin is tangerine-42\n\n"
                                     "# Tea\nunrelated tea notes stay\n")
    settings = resolve_settings(home, model="none")
    index(settings, embedder=None)
    apply_forget(settings, _plan(settings, ForgetSelector(match="zanzibar rack", limit=1)))
    assert "rack 12" not in _texts(search(settings, "zanzibar rack", mode="bm25"))

    class Newer:  # the next filter version also masks the pin
        def __init__(self, result):
            self.text, self.warnings = result.text.replace("tangerine-42", "[REDACTED:password]"), result.warnings

    monkeypatch.setattr(sources, "redact", lambda text: Newer(real_redact(text)))
    rebuild(settings, embedder=None)
    index(settings, embedder=None, full=True)
    assert "rack 12" not in _texts(search(settings, "zanzibar rack", mode="bm25"))
    assert "tea" in _texts(search(settings, "unrelated tea", mode="bm25"))


def test_a_forgotten_turn_leaves_the_reply_of_the_turn_after_it(home):
    """The response was embedded with its prompt; once the prompt is forgotten, the response replies to the turn
    before it (here none: the assistant's earlier turn opened the session): its reply, hash and id change, the old vector goes, the next run embeds it anew."""
    from fake_embedder import FakeEmbedder
    from indexer.store.local import SqliteStore

    _log(home,
         _event("we ship on fridays", "s1", "2026-11-18T08:00:00+00:00", "response"),
         _event("is the quokka token rotated?", "s1", "2026-11-18T09:00:00+00:00"),
         _event("yes, every night", "s1", "2026-11-18T09:01:00+00:00", "response"))
    settings = resolve_settings(home, model="none")
    fake = FakeEmbedder(dim=16)
    index(settings, embedder=fake)

    def answer():
        store = SqliteStore.open(settings.db_path)
        try:
            [row] = [r for r in store.stored_chunks(kind="event") if r.text == "yes, every night"]
            return row, store.pending_count(fake.model_id), store.drop_orphan_vectors()
        finally:
            store.close()

    before, pending, _ = answer()
    assert before.reply_to == "is the quokka token rotated?" and pending == 0
    apply_forget(settings, _plan(settings, ForgetSelector(match="quokka token rotated", limit=1)))
    after, pending, orphans = answer()
    assert after.reply_to == ""  # a response after a response answers what that one did: nothing here
    assert (after.hash != before.hash, after.uid != before.uid, pending, orphans) == (True, True, 1, 0)
    assert _files_holding(home, "quokka") == []
    assert index(settings, embedder=fake).chunks_embedded == 1
    assert answer()[1] == 0
