"""Running the viewer: a socket on 127.0.0.1 only, fresh secrets per launch, uvicorn, an idle timeout.

The socket is bound here, before uvicorn starts, so the printed URL has the real port (``--port 0``, the
default, lets the system pick a free one) and a port in use is a one-line error instead of a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import socket
import threading
import time
import webbrowser
from collections.abc import Callable

import uvicorn

from indexer.base.errors import MemsearchError
from indexer.base.settings import Settings
from search_engine.viewer.app import create_app

HOST = "127.0.0.1"


def _duration(seconds: float) -> str:
    """``300`` -> ``5 minutes``, ``5`` -> ``5 seconds``, ``90`` -> ``90 seconds``.

    >>> _duration(300), _duration(5), _duration(90), _duration(60)
    ('5 minutes', '5 seconds', '90 seconds', '1 minute')
    """
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} second{'s' if seconds != 1 else ''}"

def bind(port: int) -> socket.socket:
    """A listening TCP socket on the loopback address (never on another interface)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise MemsearchError(f"cannot listen on {HOST}:{port}: {exc.strerror}; choose another --port "
                             "(0 picks a free one)") from None
    sock.listen(64)
    return sock


def run(settings: Settings, *, port: int = 0, open_browser: bool = True, idle_timeout: float = 3600.0,
        echo: Callable[[str], None] = lambda text: print(text, flush=True)) -> int:
    """Serve until Ctrl-C or ``idle_timeout`` seconds without a signed-in request; returns the exit code."""
    if idle_timeout <= 0:
        raise MemsearchError("--idle-timeout must be more than 0 seconds")
    sock = bind(port)
    port = sock.getsockname()[1]
    token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    guard = create_app(settings, token=token, csrf=csrf, port=port)
    config = uvicorn.Config(guard, log_level="warning", access_log=False, lifespan="off", server_header=False,
                            proxy_headers=False)
    server = _Server(config)
    url = f"http://{HOST}:{port}/?token={token}"
    stop = _on_signals(server)
    try:
        echo(f"memsearch ui for {settings.home}\n  {url}\n"
             f"(this address holds the key for this launch: share it with no one; Ctrl-C stops, and so does "
             f"{_duration(idle_timeout)} without use)")
        if open_browser:
            once = f"http://{HOST}:{port}/?token={guard.ticket()}"
            threading.Thread(target=webbrowser.open, args=(once,), daemon=True).start()
        reason = asyncio.run(_serve(server, sock, guard, idle_timeout))
    finally:
        stop()
    echo(f"memsearch ui stopped ({reason})")
    return 0


class _Server(uvicorn.Server):
    """uvicorn's server without its own signal handling: :func:`_on_signals` covers the whole launch, so a
    Ctrl-C that comes before uvicorn is listening stops it just as cleanly."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


def _on_signals(server: uvicorn.Server) -> Callable[[], None]:
    """SIGINT and SIGTERM ask the server to finish (a second Ctrl-C forces it); returns the undo."""
    def handle(signum, frame) -> None:
        server.force_exit = server.should_exit and signum == signal.SIGINT
        server.should_exit = True

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}

    def undo() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return undo


async def _serve(server, sock: socket.socket, guard, idle_timeout: float) -> str:
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not task.done():
        await asyncio.wait({task}, timeout=min(1.0, idle_timeout))
        if not server.should_exit and time.monotonic() - guard.last_request > idle_timeout:
            server.should_exit = True
            await task
            return "idle timeout"
    await task
    return "interrupted"
