"""Talking to ``memsearch serve``, and starting it detached. Cheap to import: the hook path uses it.

Whether a server runs is decided by its lock, not by a ping: the server holds ``serve.lock`` for its whole life
(the kernel releases it when the process dies) and writes its pid to ``serve.pid``. A busy server that answers a
ping late is still running; a dead one never holds the lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from typing import Any

from indexer.base.paths import SERVE_LOCK, SERVE_LOG, SERVE_PID, SERVE_SOCK, SERVE_STARTING
from indexer.base.settings import Settings


def _socket_path(settings: Settings) -> str:
    return str(settings.state_dir / SERVE_SOCK)


def request(settings: Settings, payload: dict[str, Any], timeout: float = 0.5) -> dict[str, Any] | None:
    """Send one request; the answer, or None when no server answers within ``timeout`` seconds."""
    path = _socket_path(settings)
    if not os.path.exists(path):
        return None
    deadline = time.monotonic() + timeout
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            line = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            sock.sendall(line.encode("utf-8", "replace") + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                sock.settimeout(remaining)
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
        answer = json.loads(data)
        return answer if isinstance(answer, dict) else None
    except (OSError, ValueError):
        return None


def tuning(settings: Settings) -> dict[str, Any]:
    """The caller's search-tuning settings (those a project may set), sent with each search so the server ranks
    exactly as the caller would."""
    from indexer.base.settings import PROJECT_KEYS

    return {key: getattr(settings, key) for key in sorted(PROJECT_KEYS)}


def remote_search(settings: Settings, query: str, *, mode: str, k: int, filters: Any, raw: bool = False,
                  explain: bool = False, timeout: float = 10.0):
    """The search answered by the running server with the caller's settings, or None when no server runs for
    this memory root, it serves another index or model, or it does not answer in time (then search here)."""
    if server_pid(settings) is None:
        return None
    from indexer.base.dburl import fingerprint

    answer = request(settings, {"op": "search", "query": query, "mode": mode, "k": k, "raw": raw, "explain": explain,
                                "filters": filters._asdict(), "settings": tuning(settings),
                                "db": str(settings.db_path), "model": settings.model,
                                "model_dir": str(settings.model_dir) if settings.model_dir else None,
                                "team": fingerprint(settings.db_url) or ""}, timeout)
    if not answer or not answer.get("ok"):
        return None
    from indexer.base.types import SearchResult

    return SearchResult.from_dict(answer["result"])


def is_running(settings: Settings, timeout: float = 0.3) -> dict[str, Any] | None:
    answer = request(settings, {"op": "ping"}, timeout)
    return answer if answer and answer.get("ok") else None


#: A start claimed this recently (``serve.starting``) is not repeated: ten hooks at once start one server.
START_GRACE = 15.0


def server_pid(settings: Settings) -> int | None:
    """The running server's pid (0 while it is still starting), or None when no server holds the lock."""
    try:
        fd = os.open(settings.state_dir / SERVE_LOCK, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return int((settings.state_dir / SERVE_PID).read_text().strip() or 0)
            except (OSError, ValueError):
                return 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def stop_server(settings: Settings, timeout: float = 10.0) -> bool:
    """Stop the running server: SIGTERM to the pid its lock vouches for, then wait for the lock to be released.
    True when a server was running and is gone."""
    import signal

    pid = server_pid(settings)
    if pid is None:
        return False
    if pid > 0:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    else:  # still starting (no pid yet): ask over the socket once it listens
        request(settings, {"op": "stop"}, timeout=2.0)
    deadline = time.monotonic() + timeout
    while server_pid(settings) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def ensure_server(settings: Settings) -> bool:
    """Start the server detached when none runs and none is being started; never waits for it. True when this
    call started one. The ``no_server`` setting (``MEMSEARCH_NO_SERVER=1``) turns this off."""
    if settings.no_server or server_pid(settings) is not None:
        return False
    if not claim_start(settings, SERVE_STARTING):
        return False
    if server_pid(settings) is not None:
        # a server took the lock between the first look and the claim (it clears the claim once it holds the
        # lock, so a claim won after that finds it here): starting another would only see it lose the lock
        (settings.state_dir / SERVE_STARTING).unlink(missing_ok=True)
        return False
    start_detached(settings)
    return True


def claim_start(settings: Settings, name: str) -> bool:
    """Create the marker ``name`` in the state folder exclusively (or take over one older than START_GRACE): of
    many hooks starting the same background process at once, one wins."""
    marker = settings.state_dir / name
    try:
        from indexer.base.private import private_dirs

        private_dirs(settings.state_dir)
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        try:
            if time.time() - marker.stat().st_mtime < START_GRACE:
                return False
            os.utime(marker)
            return True
        except OSError:
            return False
    except OSError:
        return False


def start_detached(settings: Settings, idle_timeout: float | None = None) -> None:
    """Start the server in its own session, detached from the caller's stdio, so a hook can return at once."""
    args = [sys.executable, "-m", "search_engine.serve.server", "--home", str(settings.home)]
    if idle_timeout is not None:
        args += ["--idle-timeout", str(idle_timeout)]
    import subprocess

    from indexer.base.private import open_private_log

    with open_private_log(settings.log_dir / SERVE_LOG) as log:
        subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
            close_fds=True, cwd=str(settings.home), env={**os.environ, "PYTHONPATH": _pythonpath()},
        )


def _pythonpath() -> str:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    existing = os.environ.get("PYTHONPATH")
    return f"{root}{os.pathsep}{existing}" if existing else root
