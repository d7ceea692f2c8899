"""What every ``memsearch`` command writes: the settings' warnings, then JSON or text (shared by the Typer app and
the console script's server path, :mod:`search_engine.cli.console`)."""

from __future__ import annotations

import sys

from indexer.base.settings import Settings, refusals
from indexer.base.types import to_json


def warn_refused(settings: Settings) -> None:
    """One ``Warning:`` line per setting refused (a project file naming what only the user may set)."""
    for refused in refusals(settings):
        sys.stderr.write(f"Warning: {refused}\n")


def emit(data: object, as_json: bool, text: str | None = None) -> None:
    if as_json:  # JSON is UTF-8 whatever encoding Python chose for stdout (PYTHONIOENCODING=latin-1)
        out = getattr(sys.stdout, "buffer", None)
        if out is None:
            sys.stdout.write(to_json(data) + "\n")
        else:
            sys.stdout.flush()
            out.write((to_json(data) + "\n").encode("utf-8"))
            out.flush()
    else:
        sys.stdout.write((text or "") + "\n")
