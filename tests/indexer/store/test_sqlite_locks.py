"""indexer.store.sqlite: opening the index again in a process that holds it open keeps SQLite's locks.

Closing any descriptor of a file drops every POSIX lock the process holds on it. The warm server holds the index
open while hooks make it ingest; a second ``connect()`` in it that read the ``-shm`` file with ``open()`` dropped
the server's read lock, and another process could then reset the shared memory under the server's map: a bus
error. The locks are read from ``/proc/locks``."""

import os
from pathlib import Path

import pytest

from indexer.store.sqlite import connect


def _locks_on(path: Path) -> list[str]:
    ino = os.stat(path).st_ino
    pid = str(os.getpid())
    with open("/proc/locks", encoding="ascii") as f:
        return [line for line in f if f":{ino} " in line and pid in line.split()]


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
def test_a_second_connection_in_the_process_that_holds_the_index_keeps_its_locks(tmp_path):
    db = tmp_path / "index.db"
    holder = connect(db)
    holder.execute("CREATE TABLE IF NOT EXISTS t(x)")
    holder.execute("INSERT INTO t VALUES (1)")
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM t").fetchall()  # a read transaction: a lock on the -shm file
    before = _locks_on(Path(f"{db}-shm"))
    assert before, "the open read transaction holds a lock on the -shm file"
    second = connect(db)
    try:
        assert _locks_on(Path(f"{db}-shm")) == before
    finally:
        second.close()
        holder.execute("COMMIT")
        holder.close()


def test_opening_the_index_while_another_thread_closes_a_connection_is_no_error(tmp_path, monkeypatch):
    """``connect()`` looks at the process's open connections; one that another thread closes between the listing and
    the look (a search ending beside a sync) holds nothing and is passed over, not raised (it was, about one run in
    ten of the team writers' test under load: "ConnectionClosedError: The connection has been closed")."""
    import apsw

    closed = apsw.Connection(str(tmp_path / "other.db"))
    closed.close()
    listed = apsw.connections

    def with_a_closed_one():
        return [closed, *listed()]

    monkeypatch.setattr(apsw, "connections", with_a_closed_one)
    conn = connect(tmp_path / "index.db")
    assert conn.execute("SELECT 1").fetchall() == [(1,)]
