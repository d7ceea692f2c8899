"""The hooks' own log and the signal that they are switched off, shared by the entry point and the handlers."""

from __future__ import annotations

import time


class Disabled(Exception):
    """The ``disable`` setting is on: the hook does nothing."""


def log(message: str) -> None:
    """Append one line to the hooks log; never raises."""
    try:
        from indexer.base.paths import HOOKS_LOG
        from indexer.base.private import append_line
        from indexer.base.settings import resolve_settings

        log_path = resolve_settings(strict=False).log_dir / HOOKS_LOG
        append_line(log_path, f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}")
    except Exception:
        pass
