"""Whether memsearch captures and injects here: a project's opt-out, and the user's excluded tools and paths.

In order (the first that applies wins, and ``memsearch status`` says which):

1. a marker file ``.memsearch-ignore`` in the project directory or a folder above it, up to the repository root
   (the first folder holding ``.git``): for repositories that should never be captured. Capture and injection off;
2. ``capture = false`` in the project's ``.memsearch.toml`` (or, for every project, in the memory root's
   ``memsearch.toml`` or ``MEMSEARCH_CAPTURE=0``): capture and injection off;
3. the project directory matching one of the user's ``exclude_paths`` globs: nothing captured (memories of
   other projects are still injected).

Tools named in ``exclude_tools`` (globs) and tool calls whose file path matches ``exclude_paths`` are never
recorded. Cheap to import: the hooks call it first thing.
"""

from __future__ import annotations

import os
from fnmatch import fnmatchcase
from pathlib import Path

from indexer.base.paths import CONFIG_NAME, PROJECT_CONFIG_NAME
from indexer.base.settings import Settings, project_dir

MARKER = ".memsearch-ignore"


class Gate:
    """What may happen in a project: ``capture`` (record events), ``inject`` (add memories to prompts), and why
    not when one is off."""

    __slots__ = ("capture", "inject", "reason")

    def __init__(self, capture: bool, inject: bool, reason: str | None = None) -> None:
        self.capture, self.inject, self.reason = capture, inject, reason

    def as_dict(self) -> dict:
        return {"capture": self.capture, "inject": self.inject, "reason": self.reason}


def marker_for(project: Path) -> Path | None:
    """The opt-out marker that covers ``project``, if any (searched up to the repository root)."""
    for folder in (project, *project.parents):
        candidate = folder / MARKER
        if candidate.exists():
            return candidate
        if (folder / ".git").exists():
            return None
    return None


def _matches(path: str, globs: tuple[str, ...]) -> str | None:
    for glob in globs:
        pattern = os.path.expanduser(glob)
        if fnmatchcase(path, pattern) or fnmatchcase(path, pattern.rstrip("/") + "/*"):
            return glob
    return None


def gate(settings: Settings, project: Path | str | None = None) -> Gate:
    """The gate for ``project`` (default: ``$CLAUDE_PROJECT_DIR``, else the working directory)."""
    where = Path(project or project_dir()).absolute()
    marker = marker_for(where)
    if marker is not None:
        return Gate(False, False, f"opted out by {marker}")
    if not settings.capture:
        origin = settings.origins.get("capture", "default")
        source = {"project": f"{where / PROJECT_CONFIG_NAME}", "config": f"{CONFIG_NAME} in the memory root",
                  "env": "MEMSEARCH_CAPTURE", "flag": "a flag"}.get(origin, origin)
        return Gate(False, False, f"capture = false in {source}")
    glob = _matches(str(where), settings.exclude_paths)
    if glob is not None:
        return Gate(False, True, f"{where} matches exclude_paths {glob!r}")
    return Gate(True, True)


def tool_excluded(settings: Settings, name: str, path: str | None = None) -> bool:
    """Whether a call of tool ``name`` (on file ``path``) must not be recorded."""
    if any(fnmatchcase(name, glob) for glob in settings.exclude_tools):
        return True
    if not path:
        return False
    return _matches(str(Path(os.path.expanduser(path)).absolute()), settings.exclude_paths) is not None
