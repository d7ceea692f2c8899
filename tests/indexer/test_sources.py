"""indexer.sources: malformed sources (bad bytes, sparse giants, unreadable files) are reported, skipped, and lose nothing already indexed."""

import json
import os
import subprocess
from pathlib import Path

import orjson

from conftest import MEMSEARCH, event_line, indexed_text, write
from indexer.base.settings import resolve_settings
from indexer.pipeline import index
from indexer.store import sqlite as store


def _sparse(path: Path, size: int, head: bytes = b"", tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
        f.seek(0, os.SEEK_END)
        f.write(tail)
    return path


def _index_json(env=None) -> dict:
    proc = subprocess.run([MEMSEARCH, "index", "--json"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MEMSEARCH_MODEL": "none", **(env or {})})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return json.loads(proc.stdout)


def test_malformed_sources_are_reported_skipped_and_lose_nothing(home, tmp_path):
    # First the good versions, indexed.
    write(home / "decisions" / "record.json", json.dumps({"title": "Queue", "decision": "use a durable kumquat queue"}))
    write(home / "areas" / "projects" / "p" / "facts.json", json.dumps({"facts": [{"id": 1, "fact": "the quince rule"}]}))
    write(home / "notes" / "latin.md", "# Latin\n\nthe loquat paragraph\n")
    write(home / "notes" / "plain.md", "# Plain\n\nthe persimmon note stays readable\n")
    first = _index_json()
    assert first["skipped"] == []
    assert all(word in indexed_text(home) for word in ("kumquat", "quince", "loquat", "persimmon"))

    # Then every kind of bad input at once.
    write(home / "decisions" / "record.json", '{"title": "Queue", "decision": ')  # invalid JSON
    write(home / "areas" / "projects" / "p" / "facts.json", b"\xff\xfe not utf-8")  # invalid UTF-8
    write(home / "notes" / "latin.md", "caf\xe9 ol\xe9".encode("latin-1"))  # invalid UTF-8
    write(home / "notes" / "binary.md", b"\x7fELF\x02\x01\x00\x00" + os.urandom(4000))  # binary
    write(home / "decisions" / "deep.json", "[" * 100_000 + "]" * 100_000)  # nested past the parser's limit
    write(home / "decisions" / "nested.json", json.dumps({"title": "deep", "x": json.loads("[" * 80 + "]" * 80)}))
    _sparse(home / "notes" / "huge.md", 100 * 1024 * 1024)  # a 100 MB file
    ten_mb = orjson.dumps({"id": "big", "type": "prompt", "content": "z" * (10 * 1024 * 1024)}) + b"\n"
    write(home / "events" / "2026-11-20.jsonl",
          event_line("a", "apricot before the bad lines") + b"{not json\n" + b'{"id": "u", "content": "\xff"}\n'
          + ten_mb + event_line("two", "y" * (2 * 1024 * 1024))
          + event_line("deep", "x")[:-1].replace(b'"x"', b"[" * 100 + b"]" * 100) + b"\n"
          + b"[1, 2]\n" + event_line("b", "blueberry after the bad lines"))
    _sparse(home / "events" / "2026-11-21.jsonl", 100 * 1024 * 1024,  # 100 MB of one unterminated NUL line
            head=event_line("c", "cherry at the start"), tail=b"\n" + event_line("d", "damson at the end"))
    (home / "notes" / "loop-a.md").symlink_to(home / "notes" / "loop-b.md")
    (home / "notes" / "loop-b.md").symlink_to(home / "notes" / "loop-a.md")
    (home / "notes" / "dangling.md").symlink_to(home / "notes" / "missing.md")
    (home / "notes" / "cycle").symlink_to(home)  # a directory loop

    report = _index_json()
    reasons = {}
    for s in report["skipped"]:
        reasons.setdefault(s["path"], []).append(s["reason"])
    expected = {
        "decisions/record.json": "invalid JSON",
        "areas/projects/p/facts.json": "not valid UTF-8",
        "notes/latin.md": "not valid UTF-8",
        "notes/binary.md": "binary",
        "decisions/deep.json": "invalid JSON: depth limit exceeded",
        "decisions/nested.json": "nested deeper than 64 levels",
        "notes/huge.md": "too large",
        "notes/loop-a.md": "cannot read",
        "notes/loop-b.md": "cannot read",
        "notes/dangling.md": "cannot read",
    }
    for path, reason in expected.items():
        assert any(reason in r for r in reasons.get(path, [])), (path, reasons.get(path))
    event_reasons = " | ".join(reasons["events/2026-11-20.jsonl"])
    for reason in ("invalid JSON", "not valid UTF-8", "longer than 8 MiB", "longer than 1024 KiB", "nested deeper",
                   "not a JSON object"):
        assert reason in event_reasons
    assert "longer than 8 MiB" in " ".join(reasons["events/2026-11-21.jsonl"])
    assert not any("cycle" in p for p in reasons)

    texts = indexed_text(home)
    for word in ("kumquat", "quince", "loquat", "persimmon",  # indexed before the files went bad: still there
                 "apricot", "blueberry", "cherry at the start", "damson at the end"):
        assert word in texts, word
    assert "zzzzzzzzzz" not in texts and "yyyyyyyyyy" not in texts
    # Text output too: one line per skipped source, no traceback.
    proc = subprocess.run([MEMSEARCH, "index", "--full"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MEMSEARCH_MODEL": "none"})
    assert proc.returncode == 0 and proc.stderr == "" and "Traceback" not in proc.stdout
    assert "skipped: notes/huge.md: too large" in proc.stdout
    assert all(word in indexed_text(home) for word in ("apricot", "blueberry", "damson at the end"))


def test_a_nul_written_by_an_older_version_or_by_hand_is_never_indexed(home):
    """Event logs an older version wrote, a note with a NUL past the binary check's first 8 KB, a facts file: the
    index holds their text without it (a store such as PostgreSQL cannot hold one)."""
    write(home / "events" / "2026-11-20.jsonl", event_line("e1", "paste: abc\x00def, the wombat dump"))
    write(home / "notes" / "long.md", "# Long\n\n" + "padding words here. " * 500 + "\nthe numbat\x00 note\n")
    write(home / "areas" / "projects" / "p" / "facts.json",
          json.dumps({"facts": [{"id": 1, "fact": "the quoll\u0000 rule"}]}))
    report = index(resolve_settings(home, model="none"), embedder=None)
    assert report.skipped == () and report.files_changed == 3
    stored = indexed_text(home)
    assert "\x00" not in stored
    assert all(text in stored for text in ("abcdef, the wombat dump", "the numbat note", "the quoll rule"))


def test_symlinks_out_of_the_memory_root_are_never_indexed(linked_home, outside):
    proc = subprocess.run([MEMSEARCH, "index", "--json"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MEMSEARCH_MODEL": "none"})
    assert proc.returncode == 0 and proc.stderr == ""
    skipped = {s["path"]: s["reason"] for s in json.loads(proc.stdout)["skipped"]}
    for path in ("notes/leak.md", "decisions/leak.json", "events/2026-11-20.jsonl"):
        assert skipped[path] == "symlink to a file outside the memory root and extra sources, skipped"
    assert skipped["linked-docs"] == "symlink to a folder outside the memory root and extra sources, skipped"
    text = indexed_text(linked_home)
    assert "swordfish" not in text and str(outside) not in text
    assert "notes/alias.md" in text and "marmalade" in text
    found = subprocess.run([MEMSEARCH, "search", "swordfish launch code", "--mode", "bm25", "--json"],
                           capture_output=True, text=True, timeout=60, env={**os.environ, "MEMSEARCH_MODEL": "none"})
    assert json.loads(found.stdout)["hits"] == []


def test_a_source_that_becomes_an_outside_symlink_leaves_the_index(home, outside):
    write(home / "notes" / "n.md", "# N\n\nharmless at first\n")
    settings = resolve_settings(home, model="none")
    index(settings, embedder=None)
    (home / "notes" / "n.md").unlink()
    (home / "notes" / "n.md").symlink_to(outside / "secret.md")
    report = index(settings, embedder=None)
    assert report.files_deleted == 1 and "harmless" not in indexed_text(home) and "swordfish" not in indexed_text(home)


def test_extra_sources_are_the_allowed_outside(home, outside):
    write(home / "memsearch.toml", f'extra_sources = ["{outside / "docs"}"]\n')
    (home / "via-link.md").symlink_to(outside / "docs" / "more.md")  # points into an allowed root
    (home / "leak.md").symlink_to(outside / "secret.md")  # still outside every allowed root
    settings = resolve_settings(home, model="none")
    report = index(settings, embedder=None)
    assert [s.path for s in report.skipped] == ["leak.md"]
    paths = {r[0] for r in store.connect(settings.db_path).execute("SELECT DISTINCT path FROM chunks")}
    assert paths == {"via-link.md", str(outside / "docs" / "more.md")}


def test_a_folder_symlink_leading_outside_is_said_like_a_file_symlink(home, outside):
    """A folder symlink is never followed; one leading out of the root was skipped without a word, while a file
    symlink there gets a `skipped:` line. One leading inside the root is not said: its files are indexed where
    they are."""
    write(home / "notes" / "real.md", "# Real\n\nthe marmalade recipe lives here\n")
    (home / "notes" / "dirlink").symlink_to(outside / "docs")
    (home / "notes" / "link-out.md").symlink_to(outside / "secret.md")
    (home / "alias-notes").symlink_to(home / "notes")
    proc = subprocess.run([MEMSEARCH, "index"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MEMSEARCH_MODEL": "none"})
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stdout.splitlines() if "symlink" in line]
    assert any("notes/dirlink" in line and "symlink to a folder outside" in line for line in said), proc.stdout
    assert any("notes/link-out.md" in line for line in said) and not any("alias-notes" in line for line in said)
    text = indexed_text(home)
    assert "swordfish" not in text and "marmalade" in text and "alias-notes" not in text
