"""``memsearch serve``: a warm local search server on a Unix socket in the memory root.

It holds the embedding model and the database open so the prompt hook gets hybrid results in milliseconds. It
listens only on ``<root>/.memsearch/serve.sock`` (mode 0600, no TCP), accepts only connections from its own user
(checked with SO_PEERCRED), runs as one instance per memory root (a lock file), picks up new sources and embeds
pending chunks while idle, and exits by itself after ``idle_timeout`` seconds without a request.

With ``db_url`` set it also keeps the team store open for its lifetime (:class:`~indexer.store.postgres.PgStore`,
a psycopg pool) and searches it, the local index answering whenever it cannot; and it pushes to it what was written
to the local index (its own ingests of the hooks' events, new sources, summaries, vectors): :data:`PUSH_AFTER`
seconds after the first change, in a background thread (:func:`indexer.sync.sync`), so a burst of events goes in one
sync and no answer waits for one.

Protocol: one JSON object per line, one request per connection. ``{"op": "ping"}``, ``{"op": "search", "query":
…, "mode": …, "k": …, "filters": {…}}`` (with ``"render": {"project": …, "max_items": …, "token_budget": …}``:
the prompt hook's injected block instead of the hits), ``{"op": "ingest", "paths": […]}`` and ``{"op": "stop"}``;
the answer is ``{"ok": true, …}`` or ``{"ok": false, "error": "…"}``.
"""

from __future__ import annotations

import argparse
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import orjson

from indexer.base.dburl import fingerprint
from indexer.base.embedder import Embedder
from indexer.base.errors import MemsearchError
from indexer.base.locks import LockTimeout, file_lock
from indexer.base.paths import SERVE_LOCK, SERVE_LOG, SERVE_PID, SERVE_SOCK, SERVE_STARTING
from indexer.base.private import append_line, private_dirs, write_private
from indexer.base.settings import Settings, resolve_settings, with_tuning
from indexer.base.types import plain
from indexer.pipeline import embed_pending, ingest, pending_count, pending_estimate, source_roots
from indexer.store import sqlite as store
from indexer.store.local import SqliteStore
from indexer.team import TEAM_RETRY
from search_engine.context import format_context
from search_engine.embedding import QueryEmbedder
from search_engine.filters import Filters
from search_engine.query import ParsedQuery
from search_engine.reading import open_team_for_search
from search_engine.search import model_choice, result_health, search

IDLE_TIMEOUT = 30 * 60
IDLE_WORK_AFTER = 2.0  # seconds without a request before background work starts
RESCAN_EVERY = 30.0
WARM_SLICE = 0.05  # seconds of reading BM25 postings at a time while idle: a request waits at most that long
#: Seconds of embedding at a time while idle: a prompt that comes meanwhile waits at most about that long, well
#: inside the hook's 0.6 s wait for the server. The batch is sized from the model's measured time per chunk
#: (:func:`idle_batch`): the bundled MiniLM embeds ~60 short turns a second, multilingual-e5-small ~7, and a long
#: CJK paragraph alone can take most of a second.
IDLE_EMBED_SECONDS = 0.25
IDLE_EMBED_MAX = 32
MAX_REQUEST = 1 << 20
#: Seconds from the first change of the local index to its push to the team store (a burst goes in one sync).
PUSH_AFTER = 3.0
#: Connections of the team store's pool: a hybrid search's two lists run at once, and a push beside them.
TEAM_POOL = 4


def idle_batch(seconds_per_chunk: float | None) -> int:
    """How many pending chunks one idle moment embeds: as many as fit in :data:`IDLE_EMBED_SECONDS` at the rate
    measured so far (one at first), between 1 and :data:`IDLE_EMBED_MAX`.

    >>> idle_batch(None), idle_batch(0.004), idle_batch(0.14), idle_batch(2.0)
    (1, 32, 1, 1)
    >>> idle_batch(0.02)
    12
    """
    if seconds_per_chunk is None:
        return 1
    if seconds_per_chunk <= 0:
        return IDLE_EMBED_MAX
    return max(1, min(IDLE_EMBED_MAX, int(IDLE_EMBED_SECONDS / seconds_per_chunk)))


def socket_path(settings: Settings) -> Path:
    return settings.state_dir / SERVE_SOCK


def _log(settings: Settings, message: str) -> None:
    append_line(settings.log_dir / SERVE_LOG, f"{time.strftime('%Y-%m-%dT%H:%M:%S')} pid={os.getpid()} {message}")


def _peer_uid(conn: socket.socket) -> int | None:
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[2]
    except OSError:
        return None


def _hung_up(conn: socket.socket) -> bool:
    """Whether the peer has closed its end (a request waiting in the backlog whose hook already timed out).
    Clients send one line and keep the connection open for the answer; they never half-close."""
    timeout = conn.gettimeout()
    conn.setblocking(False)  # a socket with a timeout would wait that long for the peek
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True
    finally:
        conn.settimeout(timeout)


def _ident(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


class Server:
    def __init__(self, settings: Settings, idle_timeout: float = IDLE_TIMEOUT):
        self.settings = settings
        self.idle_timeout = idle_timeout
        self.running = True
        self.last_request = time.monotonic()
        self.last_scan = 0.0
        self.embedder: Embedder | None = None
        self.model_reason: str | None = None
        self.conn: apsw.Connection | None = None
        self.index: SqliteStore | None = None  # the same connection, as the store search reads
        self.db_ident: tuple[int, int] | None = None
        self.wal_ident: tuple[int, int] | None = None
        self.after_reply: list = []
        self.team: Any = None  # the team store (db_url), kept open; None until it answers
        self.pushed: tuple[int, int] | None = None  # the local index's state_version() the last push started from
        self.push_due: float | None = None
        self.pusher: threading.Thread | None = None
        self.embed_rate: float | None = None  # seconds per chunk of the idle embedding so far (a moving average)
        self.embedding_due = False  # the last idle batch was full: more chunks may wait, so come back at once
        # what makes this server the one of its memory root: the root, its state folder and the lock as they were
        # when it started, and the socket it bound (see :meth:`orphaned`)
        self.anchors = {path: _ident(path) for path in (settings.home, settings.state_dir,
                                                        settings.state_dir / SERVE_LOCK)}

    # -- lifecycle --------------------------------------------------------------------------------------------
    def load(self) -> None:
        embedding = QueryEmbedder.resolve(self.settings)
        if embedding.choice.available:
            try:
                self.embedder = embedding.load()
                self.embedder.embed_query("warm up")
            except MemsearchError as exc:
                self.embedder, self.model_reason = None, str(exc)
        else:
            self.model_reason = embedding.choice.reason
        self.connection()
        self.vectors()  # loaded before the first request, which must not wait for it
        self.team_store()

    def team_store(self) -> Any:
        """The team store of ``db_url``, opened once and kept (None without db_url, or while it cannot be reached:
        :func:`~search_engine.reading.open_team_for_search` then says why, and is not retried for a while)."""
        if self.settings.db_url is None:
            return None
        if self.team is None:
            self.team, reason = open_team_for_search(self.settings, max_size=TEAM_POOL)
            if reason is not None:
                _log(self.settings, f"team store unavailable: {reason}")
        return self.team

    def drop_team(self, reason: str) -> None:
        """Let go of the team store after it failed (its connections are likely dead): reopened at the next use."""
        _log(self.settings, f"team store dropped: {reason}")
        team, self.team = self.team, None
        if team is not None:
            team.close()

    def orphaned(self) -> str | None:
        """Why this server no longer serves its memory root, or None: the root, its state folder, the lock it
        holds or its socket was deleted or replaced (a root deleted mid-session and made again by the next hook).
        Such a server exits: it would recreate the root's state, run next to the new root's server (its lock is
        another file) and be seen by neither ``serve --status`` nor ``serve --stop``."""
        for path, ident in self.anchors.items():
            if _ident(path) != ident:
                return f"{path} was deleted or replaced"
        return None

    def close(self) -> None:
        if self.pusher is not None:
            self.pusher.join(timeout=30)
        if self.team is not None:
            self.team.close()
            self.team = None

    # -- pushing to the team store ------------------------------------------------------------------------------
    def push_if_due(self) -> None:
        """Start a push to the team store when the local index changed since the last one and :data:`PUSH_AFTER`
        seconds have passed since that change was first seen; one push at a time, in a thread."""
        if self.settings.db_url is None or self.index is None or (self.pusher is not None and self.pusher.is_alive()):
            return
        now = time.monotonic()
        version = self.index.state_version()
        if version == self.pushed:
            self.push_due = None
            return
        if self.push_due is None:
            self.push_due = now + PUSH_AFTER
        if now < self.push_due:
            return
        team = self.team_store()
        if team is None:
            self.push_due = now + TEAM_RETRY
            return
        self.push_due = None
        self.pusher = threading.Thread(target=self._push, args=(team, version), name="memsearch-push", daemon=True)
        self.pusher.start()

    def _push(self, team: Any, version: tuple[int, int]) -> None:
        from indexer.sync import sync

        try:
            report = sync(self.settings, team=team)
        except Exception as exc:  # the database went away, say: logged, tried again later; never the server's end
            _log(self.settings, f"push to the team store failed: {type(exc).__name__}: {exc}")
            self.push_due = time.monotonic() + TEAM_RETRY
            return
        self.pushed = version
        for line in report.skipped:
            _log(self.settings, f"not pushed to the team store: {line}")
        if report.sources_sent or report.sources_deleted or report.vectors_sent:
            _log(self.settings, f"pushed to the team store: {report.sources_sent} sources ({report.chunks_added} "
                                f"chunks added, {report.chunks_removed} removed), {report.vectors_sent} vectors")

    def connection(self):
        """The index connection, reopened when the file at ``db_path`` is no longer the one it holds (deleted and
        rebuilt by hand, say), or when its ``-wal`` file was deleted or replaced; None while there is no index file.

        Why the WAL: while this connection stays open, the shared ``-shm`` index keeps pointing at frames of the
        WAL it wrote. Delete that file and every other process that opens the index reads those frames from the new,
        empty ``-wal``: "disk I/O error", until this connection closes. Closing it (SQLite checkpoints what it
        still holds of the old WAL, then lets the files go) makes the index openable again.
        """
        ident = _ident(self.settings.db_path)
        if self.conn is not None and self.wal_ident is not None and _ident(self._wal) != self.wal_ident:
            _log(self.settings, f"{self._wal} was deleted or replaced: closing and reopening the index")
            self.conn.close()
            self.conn = self.index = None
        if ident != self.db_ident or (ident is not None and self.conn is None):
            if self.conn is not None:
                self.conn.close()
            self.conn = store.connect(self.settings.db_path) if ident is not None else None
            # a new store: the vectors it keeps in memory belong to the file that was replaced
            self.index = SqliteStore(self.conn, self.settings.db_path) if self.conn is not None else None
            self.db_ident = ident
            self.wal_ident = _ident(self._wal) if self.conn is not None else None
        if self.conn is None:
            self.index = None
        return self.conn

    @property
    def _wal(self) -> Path:
        return Path(f"{self.settings.db_path}-wal")

    def handle(self, request: dict) -> dict:
        op = request.get("op")
        if op in ("ingest", "search"):
            self.connection()  # first: it lets go of a deleted -wal, which the ingest's own connection would trip on
        if op == "ping":
            lexicon = self.index.lexicon if self.index is not None else None
            return {"ok": True, "pid": os.getpid(), "model": getattr(self.embedder, "model_id", None),
                    "model_reason": self.model_reason, "home": str(self.settings.home),
                    "lexicon": lexicon.describe() if lexicon is not None else None}
        if op == "stop":
            self.running = False
            return {"ok": True}
        if op == "ingest":
            chosen = self._inside_home(request.get("paths"))
            self.after_reply.append(lambda: self._ingest(chosen))
            return {"ok": True, "ingested": bool(chosen)}
        if op == "search":
            if request.get("ingest"):
                # the captured prompt is indexed once the answer is sent: its own session is excluded from the
                # search anyway, and the hook is not kept waiting for the write
                chosen = self._inside_home(request["ingest"])
                self.after_reply.append(lambda: self._ingest(chosen))
            settings = self.request_settings(request)
            if settings is None:
                return {"ok": False, "error": "this server runs for another index or model"}
            filters = Filters(**{k: v for k, v in (request.get("filters") or {}).items()
                                 if k in Filters._fields})
            self.vectors()
            team = self.team_store()
            result = search(
                settings, str(request.get("query", "")), mode=request.get("mode", "hybrid"),
                k=int(request.get("k", 10)), filters=filters, raw=bool(request.get("raw")),
                explain=bool(request.get("explain")), embedder=self.embedder,
                store=self.index if settings.db_url is None else None,  # None: the team store, local if unreachable
                team=team,
            )
            if team is not None and result.health.store_reason is not None:
                self.drop_team(result.health.store_reason)
            render = request.get("render")
            if render is not None:
                return self.rendered(result.hits, str(request.get("query", "")), render, result.similarity_model)
            return {"ok": True, "result": plain(result)}
        return {"ok": False, "error": f"unknown op {op!r}"}

    @staticmethod
    def rendered(hits, query: str, render, model: str | None = None) -> dict:
        """The prompt hook's answer: the block to inject, through the same gate and format as its own cold path,
        so the hook rebuilds no hits (``render`` = the hook's ``project``, ``max_items`` and ``token_budget``;
        ``model``: the one whose similarities the hits carry, which chooses the gate)."""
        given = render if isinstance(render, dict) else {}
        project, max_items, budget = given.get("project"), given.get("max_items"), given.get("token_budget")
        if not (project is None or isinstance(project, str)) or not (
                type(max_items) is int and type(budget) is int and max_items >= 0 and budget >= 0):
            return {"ok": False, "error": "render needs project (a string or null), max_items and token_budget "
                                          "(integers >= 0)"}
        block, _ = format_context(ParsedQuery.parse(query), hits, max_items=max_items, project=project,
                                  token_budget=budget, model=model)
        return {"ok": True, "block": block}

    def request_settings(self, request: dict) -> Settings | None:
        """The settings to rank a request with: the server's, with the caller's search tuning (the keys a project
        may set, each checked as that setting is; a bad value is an error answer). None when the caller names
        another index or model."""
        s = self.settings
        if request.get("db") not in (None, str(s.db_path)) or request.get("model") not in (None, s.model) or (
                request.get("model_dir") not in (None, str(s.model_dir) if s.model_dir else None)) or (
                request.get("team") not in (None, fingerprint(s.db_url) or "")):
            return None
        tuning = request.get("settings")
        return with_tuning(s, tuning) if isinstance(tuning, dict) and tuning else s

    def vectors(self):
        """The in-memory vector matrix the index's store keeps, reloaded when the embeddings table changed (new
        vectors, a rebuild)."""
        self.connection()
        if self.index is None or self.embedder is None:
            return None
        try:
            return self.index.keep_vectors_in_memory(self.embedder.model_id)
        except apsw.Error as exc:
            _log(self.settings, f"vector matrix unavailable: {exc}")
            return None

    def _inside_home(self, paths) -> list[Path]:
        """The captured sources a request names that are files inside the memory root; anything else is refused."""
        home = self.settings.home.resolve()
        chosen = []
        for p in paths if isinstance(paths, list) else []:
            path = Path(str(p)).resolve()
            if path.is_relative_to(home) and path.is_file():
                chosen.append(path)
        return chosen

    def _ingest(self, chosen: list[Path]) -> bool:
        """Index captured sources for BM25 (a hook's event log, just appended)."""
        return bool(chosen) and ingest(self.settings, chosen, lock_timeout=0.2)

    def reply_sent(self) -> None:
        """Work a request left for after its answer: the captured events' indexing, then the health counts of
        the index as it now is, so the next search finds them computed (they cost ~15 ms at 100k chunks)."""
        work, self.after_reply = self.after_reply, []
        for job in work:
            job()
        self.connection()
        if work and self.index is not None:
            result_health(self.index, model_choice(self.settings, self.embedder))

    def idle_work(self) -> None:
        """Write queued session summaries, pick up new sources now and then, and embed a small batch of pending
        chunks."""
        from indexer.summaries import drain_queue, queued

        if queued(self.settings):
            drain_queue(self.settings, embedder=self.embedder)
            self.vectors()
        now = time.monotonic()
        self.connection()
        scanned = now - self.last_scan >= RESCAN_EVERY
        if scanned:
            self.last_scan = now
            ingest(self.settings, source_roots(self.settings), lock_timeout=0, vanished=True)
        conn = self.connection()
        # the kept counts' estimate at each idle moment; the exact count (a scan: ~130 ms at 100k chunks) with each
        # rescan, for content the estimate misses while orphan vectors are left
        self.embedding_due = False
        if conn is not None and self.embedder is not None and (
                pending_estimate(conn, self.embedder.model_id)
                or scanned and pending_count(conn, self.embedder.model_id)):
            size = idle_batch(self.embed_rate)
            started = time.monotonic()
            done, _ = embed_pending(conn, self.embedder, batch=size, limit=size)
            self.embedding_due = done >= size
            if done:
                rate = (time.monotonic() - started) / done
                self.embed_rate = rate if self.embed_rate is None else 0.7 * self.embed_rate + 0.3 * rate
            self.vectors()  # refresh the in-memory copy now, while idle, not in the next request
        self.lexicon_warm()

    def lexicon_warm(self) -> None:
        """Read BM25 postings into the lexicon for a moment (:meth:`indexer.store.lexicon.Lexicon.warm`); the
        serving loop asks its ``warming`` whether to come back at once."""
        if self.index is None:
            return
        try:
            self.index.keep_lexicon_in_memory().warm(self.index.conn, WARM_SLICE)
        except apsw.Error as exc:
            _log(self.settings, f"lexicon not warmed: {exc}")

    def serve(self, listener: socket.socket) -> None:
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ)
        busy_until_idle = True
        while self.running:
            orphaned = self.orphaned()
            if orphaned is not None:
                if self.settings.state_dir.is_dir() and _ident(self.settings.home) == self.anchors[self.settings.home]:
                    _log(self.settings, f"{orphaned}: exiting")  # never a log that would make a deleted root again
                break
            idle = time.monotonic() - self.last_request
            if idle >= self.idle_timeout:
                _log(self.settings, f"idle for {idle:.0f}s, exiting")
                break
            timeout = 0.5 if idle >= IDLE_WORK_AFTER else min(0.5, max(0.05, IDLE_WORK_AFTER - idle))
            if idle >= IDLE_WORK_AFTER and (self.embedding_due or self.index is not None and (
                    self.index.lexicon is not None and self.index.lexicon.warming)):
                timeout = 0.0  # chunks to embed or postings to read: slice after slice while nothing else is asked
            if selector.select(timeout=timeout):
                conn, _ = listener.accept()
                before, self.last_request = self.last_request, time.monotonic()
                with conn:
                    if self._answer(conn) == "ping":  # `serve --status` is not use: idle time goes on
                        self.last_request = before
                busy_until_idle = True
                self._push_if_due()
                continue
            self._push_if_due()
            try:
                self.connection()  # let go of a deleted -wal at once: other processes cannot open the index until then
            except MemsearchError as exc:
                _log(self.settings, f"cannot reopen the index: {exc}")
            if idle >= IDLE_WORK_AFTER:
                try:
                    self.idle_work()
                except Exception as exc:  # background work must never take the server down
                    _log(self.settings, f"idle work failed: {type(exc).__name__}: {exc}")
                    if busy_until_idle:
                        busy_until_idle = False

    def _push_if_due(self) -> None:
        try:
            self.push_if_due()
        except Exception as exc:  # a push must never take the server down
            _log(self.settings, f"push not started: {type(exc).__name__}: {exc}")

    def _answer(self, conn: socket.socket) -> str | None:
        """Answer one request; its op (None when refused or unreadable)."""
        if _peer_uid(conn) not in (os.getuid(), None):
            conn.sendall(b'{"ok": false, "error": "refused: not the owner"}\n')
            return None
        conn.settimeout(2.0)
        data = b""
        request: object = None
        try:
            while b"\n" not in data and len(data) < MAX_REQUEST:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            if b"\n" in data and _hung_up(conn):
                return None  # the client (a hook past its deadline) gave up waiting: the work would be wasted
            request = orjson.loads(data.split(b"\n", 1)[0] or b"{}")
            answer = self.handle(request if isinstance(request, dict) else {})
        except (orjson.JSONDecodeError, OSError) as exc:
            answer = {"ok": False, "error": f"bad request: {exc}"}
        except MemsearchError as exc:
            answer = {"ok": False, "error": str(exc)}
        except Exception as exc:  # one bad request must not take the server down
            _log(self.settings, f"request failed: {type(exc).__name__}: {exc}")
            answer = {"ok": False, "error": f"internal error: {type(exc).__name__}"}
        try:
            conn.sendall(orjson.dumps(answer) + b"\n")
        except OSError:
            pass
        try:
            self.reply_sent()
        except Exception as exc:  # the answer is out; a failure here must not take the server down either
            _log(self.settings, f"work after a reply failed: {type(exc).__name__}: {exc}")
            self.after_reply = []
        op = request.get("op") if isinstance(request, dict) else None
        return op if isinstance(op, str) else None


def run(settings: Settings, idle_timeout: float = IDLE_TIMEOUT) -> int:
    """Run the server in the foreground until idle, stopped or signalled. Returns an exit code."""
    private_dirs(settings.state_dir)
    pid_path = settings.state_dir / SERVE_PID
    try:
        # a short wait, not none: a hook probing whether the lock is held holds it for a few microseconds
        with file_lock(settings.state_dir / SERVE_LOCK, 0.5):
            write_private(pid_path, f"{os.getpid()}\n".encode())
            _started(settings)
            try:
                return _run_locked(settings, idle_timeout)
            finally:
                _unlink_own_pid(pid_path)
    except LockTimeout:
        _started(settings)
        print("memsearch serve is already running for this memory root", file=sys.stderr)
        return 1


def _unlink_own_pid(pid_path: Path) -> None:
    """Remove the pid file if it is still this process's (a server that found its root replaced must not remove
    the new server's)."""
    try:
        if pid_path.read_bytes().strip() == str(os.getpid()).encode():
            pid_path.unlink()
    except OSError:
        pass


def _started(settings: Settings) -> None:
    """Clear the claim a starting hook left (search_engine.serve.client.ensure_server)."""
    try:
        (settings.state_dir / SERVE_STARTING).unlink()
    except OSError:
        pass


def _run_locked(settings: Settings, idle_timeout: float) -> int:
    path = socket_path(settings)
    bound = None
    try:
        server = Server(settings, idle_timeout)
        server.load()
        if path.exists() or path.is_symlink():
            path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            listener.bind(str(path))
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        bound = server.anchors[path] = _ident(path)
        listener.listen(64)

        def stop(signum, frame):
            server.running = False

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        _log(settings, f"listening on {path}, model={getattr(server.embedder, 'model_id', None)}")
        with listener:
            try:
                server.serve(listener)
            finally:
                server.close()
        return 0
    finally:
        try:
            if bound is not None and _ident(path) == bound:  # not the socket of a server started since
                path.unlink()
        except OSError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m search_engine.serve.server")
    parser.add_argument("--home")
    parser.add_argument("--idle-timeout", type=float, default=IDLE_TIMEOUT)
    args = parser.parse_args(argv)
    settings = resolve_settings(args.home, strict=False)  # started by a hook: a bad value must not stop it either
    for problem in settings.problems:
        _log(settings, f"settings: {problem}")
    return run(settings, args.idle_timeout)


if __name__ == "__main__":
    sys.exit(main())
