"""Talking to ``memsearch serve``, and starting it detached. Cheap to import: the hook path uses it."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from typing import Any

from indexer.settings import Settings


def _socket_path(settings: Settings) -> str:
    return str(settings.state_dir / "serve.sock")


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


def is_running(settings: Settings, timeout: float = 0.3) -> dict[str, Any] | None:
    answer = request(settings, {"op": "ping"}, timeout)
    return answer if answer and answer.get("ok") else None


def start_detached(settings: Settings, idle_timeout: float | None = None) -> None:
    """Start the server in its own session, detached from the caller's stdio, so a hook can return at once."""
    args = [sys.executable, "-m", "search_engine.server", "--home", str(settings.home)]
    if idle_timeout is not None:
        args += ["--idle-timeout", str(idle_timeout)]
    import subprocess

    from indexer.private import open_private_log

    with open_private_log(settings.log_dir / "serve.log") as log:
        subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
            close_fds=True, cwd=str(settings.home), env={**os.environ, "PYTHONPATH": _pythonpath()},
        )


def _pythonpath() -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    existing = os.environ.get("PYTHONPATH")
    return f"{root}{os.pathsep}{existing}" if existing else root
