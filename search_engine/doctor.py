"""``memsearch doctor``: every moving part checked, each failure with the command that fixes it."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

import apsw

from indexer import store
from indexer.embedder import resolve_model
from indexer.settings import Settings

from .client import is_running
from .install import installed_events


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None


def _sqlite_checks() -> list[Check]:
    conn = apsw.Connection(":memory:")
    out = []
    try:
        store._load_sqlite_vec(conn)
        version = conn.execute("SELECT vec_version()").fetchone()[0]
        out.append(Check("sqlite-vec", True, f"{version} loads"))
    except Exception as exc:  # any failure to load the extension is the finding itself
        out.append(Check("sqlite-vec", False, str(exc), "run `make install` (pip install sqlite-vec)"))
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
        out.append(Check("fts5", True, f"SQLite {apsw.sqlite_lib_version()} with FTS5 and porter"))
    except apsw.Error as exc:
        out.append(Check("fts5", False, str(exc), "install an apsw build with FTS5 (pip install -U apsw)"))
    return out


def run_checks(settings: Settings, load_model: bool = True) -> list[Check]:
    checks = _sqlite_checks()
    choice = resolve_model(settings)
    if not choice.available:
        checks.append(Check("model", False, choice.reason or "unavailable",
                            "run `make install` or `memsearch model install`"))
    elif load_model:
        from indexer.embedder import load_embedder

        try:
            dim = len(load_embedder(settings).embed_query("doctor")) // 4
            checks.append(Check("model", True, f"{choice.model_id} loads, {dim} dimensions"))
        except Exception as exc:  # a model that fails to load is the finding itself
            checks.append(Check("model", False, f"{choice.model_id} fails to load: {exc}", "run `memsearch model install`"))
    else:
        checks.append(Check("model", True, f"{choice.model_id} ({choice.source})"))
    if settings.db_path.exists():
        conn = store.connect(settings.db_path)
        try:
            result = conn.execute("PRAGMA quick_check").fetchone()[0]
            chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        finally:
            conn.close()
        checks.append(Check("index", result == "ok", f"{settings.db_path}: {chunks} chunks, quick_check {result}",
                            None if result == "ok" else "rebuild: `memsearch index --full`"))
    else:
        checks.append(Check("index", False, f"{settings.db_path} does not exist", "run `memsearch index`"))
    server = is_running(settings)
    checks.append(Check("server", server is not None,
                        f"pid {server['pid']}, model {server.get('model')}" if server else "not running",
                        None if server else "it starts with each Claude Code session; or run `memsearch serve &`"))
    events = sorted(set(installed_events("user")) | set(installed_events("project")))
    checks.append(Check("hooks", "UserPromptSubmit" in events,
                        f"installed for {', '.join(events)}" if events else "not installed",
                        None if "UserPromptSubmit" in events else "run `memsearch install`"))
    crontab = shutil.which("crontab")
    line = None
    if crontab:
        proc = subprocess.run([crontab, "-l"], capture_output=True, text=True, timeout=5)
        line = next((x for x in proc.stdout.splitlines() if "memsearch" in x and not x.startswith("#")), None)
    checks.append(Check("cron", line is not None, line or ("no crontab command" if not crontab else "no weekly entry"),
                        None if line else "run `memsearch cron install` (weekly `memsearch maintain`)"))
    return checks
