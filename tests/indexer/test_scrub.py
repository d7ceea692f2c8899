"""`memsearch scrub`: a memory captured with an older, weaker filter is filtered again, on disk and in the index."""

import gzip
import json
import subprocess

import pytest

from conftest import MEMSEARCH, write
from indexer import sources
from indexer.base.paths import PRIVACY_STATE
from indexer.maintain import maintain
from indexer.pipeline import index
from indexer.privacy import FILTER_VERSION, Redacted
from indexer.scrub import scrub_memory, stored_filter_version
from search_engine.search import search

CANARIES = ("qzleak1k9", "qzleak2k9", "qzleak3k9", "qzleak4k9", "qzleak5k9")


def _old_memory(home, monkeypatch, fake, settings):
    """Event logs, an archive and a session summary holding what an older filter let through, indexed by a
    filter that masks nothing."""
    events = [
        {"id": "e1", "ts": "2026-11-20T10:00:00+00:00", "session_id": "s1", "type": "prompt",
         "content": f"deploy the billing service with DB_PASSWORD={CANARIES[0]} tonight"},
        {"id": "e2", "ts": "2026-11-20T10:01:00+00:00", "session_id": "s1", "type": "tool", "tool_name": "Bash",
         "content": f"Bash: curl -u admin:{CANARIES[1]} https://ci.example.com",
         "metadata": {"command": f"curl -u admin:{CANARIES[1]} https://ci.example.com"}},
        {"id": "e3", "ts": "2026-11-20T10:02:00+00:00", "session_id": "s1", "type": "response",
         "content": f"the billing deploy is done < private>{CANARIES[2]}</ private> ok"},
    ]
    write(home / "events" / "2026-11-20.jsonl", "".join(json.dumps(e) + "\n" for e in events) + '{"torn')
    archived = {"id": "a1", "ts": "2026-01-02T10:00:00+00:00", "type": "prompt",
                "content": f"export AWS_SECRET_ACCESS_KEY={CANARIES[3]}"}
    (home / "archive" / "events").mkdir(parents=True)
    (home / "archive" / "events" / "2026-01-02.jsonl.gz").write_bytes(gzip.compress(
        (json.dumps(archived) + "\n").encode()))
    write(home / "sessions" / "s1.md", f"# Session s1\n\n## Prompts\n- mysql -u root -p{CANARIES[4]} shop\n")
    write(home / "notes" / "ops.md", "# Ops\n\nThe billing service deploys on Tuesdays.\n")
    with monkeypatch.context() as patch:  # only this patch: undo() would also drop the isolated MEMSEARCH_HOME
        patch.setattr(sources, "redact", lambda text: Redacted(text))
        index(settings, None, embedder=fake)


def _files_with_canaries(home):
    found = {}
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".gz":
                data = gzip.decompress(data)
            hits = [c for c in CANARIES if c.encode() in data.lower()]
            if hits:
                found[str(path.relative_to(home))] = hits
    return found


def test_dry_run_counts_and_writes_nothing_then_scrub_removes_every_old_leak(home, settings, fake, monkeypatch):
    _old_memory(home, monkeypatch, fake, settings)
    (settings.state_dir / "rebuild-999.db-wal").write_bytes(f"stale {CANARIES[0]}".encode())
    before = _files_with_canaries(home)
    assert ".memsearch/index.db" in before or ".memsearch/index.db-wal" in before
    snapshot = {p: p.read_bytes() for p in home.rglob("*") if p.is_file() and "index.db" not in p.name}

    dry = scrub_memory(settings, dry_run=True)
    assert dry.dry_run and dry.files_changed == {"archives": 1, "event logs": 1, "session summaries": 1}
    assert dry.events_changed == 4 and dry.chunks_changed >= 4 and dry.stale_builds == 1
    assert dry.redactions == {"password": 4, "private": 1, "secret": 1}  # curl: in the content and the metadata
    assert {p: p.read_bytes() for p in snapshot} == snapshot  # nothing written

    report = scrub_memory(settings)
    assert report.index_rebuilt and report.problems == () and report.database == "vacuumed; WAL truncated"
    assert _files_with_canaries(home) == {}
    assert not list(settings.state_dir.glob("rebuild-*"))
    assert stored_filter_version(settings) == FILTER_VERSION
    assert (home / "events" / "2026-11-20.jsonl").read_bytes().endswith(b'{"torn')  # a torn line is kept
    hits = search(settings, "billing deploy", mode="bm25", embedder=None).hits
    assert {h.event_id for h in hits} >= {"e1", "e3"}
    assert "[REDACTED:password]" in next(h for h in hits if h.event_id == "e1").text

    again = scrub_memory(settings, dry_run=True)  # what scrub stores is a fixed point of the filter
    assert (again.files_changed, again.events_changed, again.chunks_changed) == ({}, 0, 0)


def test_scrub_reports_never_hold_the_secret(home, settings, fake, monkeypatch):
    _old_memory(home, monkeypatch, fake, settings)
    out = subprocess.run([MEMSEARCH, "scrub", "--dry-run"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr == ""
    assert "event logs 1" in out.stdout and "dry run" in out.stdout
    data = json.loads(subprocess.run([MEMSEARCH, "scrub", "--json"], capture_output=True, text=True).stdout)
    assert data["dry_run"] is False and data["index_rebuilt"] is True
    for text in (out.stdout, json.dumps(data)):
        assert not any(c in text for c in CANARIES)


@pytest.mark.parametrize("recorded", [None, FILTER_VERSION - 1])
def test_maintain_scrubs_when_the_filter_version_changed(home, settings, fake, monkeypatch, recorded):
    _old_memory(home, monkeypatch, fake, settings)
    if recorded is not None:
        write(settings.state_dir / PRIVACY_STATE, json.dumps({"filter_version": recorded}))
    report = maintain(settings, embedder=fake)
    assert report.scrubbed == {"archives": 1, "event logs": 1, "session summaries": 1}
    assert stored_filter_version(settings) == FILTER_VERSION
    assert _files_with_canaries(home) == {}
    assert maintain(settings, embedder=fake).scrubbed is None
