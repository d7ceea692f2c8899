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
