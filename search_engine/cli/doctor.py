"""``memsearch doctor``: every moving part checked, each failure with the command that fixes it; the command
exits 1 when any check fails. ``info`` rows are findings that are not failures (no server outside a Claude Code
session: the next session or prompt starts it; no weekly cron line; a memory root that never synced). The team
database is checked only when ``db_url`` is set (optional, like the MCP server: none is no finding)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from indexer.base import lost
from indexer.base.dburl import mask_url
from indexer.base.embedder import resolve_model
from indexer.base.errors import IndexCorrupt, MemsearchError
from indexer.base.paths import EVENTS_DIR, LOST_EVENTS
from indexer.base.settings import Settings, root_problem
from indexer.store import sqlite as store
from indexer.store.local import SqliteStore
from search_engine.cli.install import (
    SCOPES,
    command_home,
    command_program,
    installed_commands,
    registered_mcp,
)
from search_engine.serve.client import is_running, server_pid


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    info: bool = False


def _root_used(named: str | Path | None) -> Path:
    """The memory root a hook or the MCP server uses: the one its command or ``env`` names, else
    ``MEMSEARCH_HOME`` in this environment, else the default."""
    from indexer.base.settings import default_home

    return Path(named or os.environ.get("MEMSEARCH_HOME") or default_home()).expanduser()


def hook_checks(settings: Settings) -> list[Check]:
    """Each installed hook command: its program exists and runs (``MEMSEARCH_DISABLE=1``: it starts, reads
    nothing and exits 0, touching no memory); and each scope's hooks record into this memory root (the root their
    command names, else the one in this environment, else the default)."""
    out: list[Check] = []
    found = {scope: installed_commands(scope) for scope in SCOPES}
    if not any(found.values()):
        return [Check("hooks", False, "not installed", "run `memsearch install`")]
    scopes = [scope for scope, commands in found.items() if commands]
    if len(scopes) > 1:  # Claude Code runs each scope's hooks: every event would be recorded once per scope
        out.append(Check("hooks (scopes)", False, f"installed in {' and '.join(scopes)}: each event is recorded "
                         f"{len(scopes)} times", f"keep one: `memsearch uninstall --scope {scopes[-1]}`"))
    for scope in scopes:
        roots = {_root_used(command_home(command)) for command in found[scope].values()}
        other = sorted(str(root) for root in roots if root.absolute() != settings.home.absolute())
        if other:
            fix = (f"set MEMSEARCH_HOME={settings.home} in .claude/settings.local.json's \"env\"" if scope == "project"
                   else f"run `memsearch install --scope {scope} --home {settings.home}`")
            out.append(Check(f"hooks root ({scope})", False, f"record into {', '.join(other)}, not {settings.home}",
                             fix))
    tried: dict[str, Check] = {}
    for scope, commands in found.items():
        for event, command in commands.items():
            program = command_program(command)
            path = shutil.which(program) if program else None
            if path is None:
                out.append(Check(f"hook {event} ({scope})", False, f"{program or command!r} not found",
                                 f"run `memsearch install --scope {scope}` again from the environment memsearch is in"))
                continue
            if path not in tried:
                try:
                    proc = subprocess.run([path, "prompt"], stdin=subprocess.DEVNULL, capture_output=True, timeout=20,
                                          env={**os.environ, "MEMSEARCH_DISABLE": "1"})
                    ok, detail = proc.returncode == 0, f"{path} runs" if proc.returncode == 0 else (
                        f"{path} exits {proc.returncode}")
                except (OSError, subprocess.SubprocessError) as exc:
                    ok, detail = False, f"{path} does not run: {exc}"
                tried[path] = Check("", ok, detail, None if ok else "run `make install` (or reinstall memsearch)")
            c = tried[path]
            out.append(Check(f"hook {event} ({scope})", c.ok, c.detail, c.fix))
    return out


def mcp_checks(settings: Settings) -> list[Check]:
    """Each MCP registration (optional, so none is no finding): its program exists, and it searches this memory
    root (its ``env``'s ``MEMSEARCH_HOME``, else the one in this environment, else the default)."""
    out = []
    for scope in SCOPES:
        entry = registered_mcp(scope)
        if entry is None:
            continue
        name, fix = f"mcp ({scope})", f"run `memsearch install --mcp --scope {scope} --home {settings.home}`"
        if scope == "project":  # shared: memsearch by name, no root; both come from this machine's environment
            fix = (f"put `memsearch` on PATH and set MEMSEARCH_HOME={settings.home} in .claude/settings.local.json's "
                   "\"env\"")
        program = shutil.which(str(entry.get("command")))
        env = entry.get("env")
        env = env if isinstance(env, dict) else {}
        root = _root_used(env.get("MEMSEARCH_HOME"))
        if program is None:
            out.append(Check(name, False, f"{entry.get('command')!r} not found", fix))
        elif root.absolute() != settings.home.absolute():
            out.append(Check(name, False, f"searches {root}, not {settings.home}", fix))
        else:
            out.append(Check(name, True, f"{program} mcp, memory root {root}"))
    return out


def _sqlite_checks() -> list[Check]:
    probe = store.probe_engine()
    out = [Check("sqlite-vec", True, f"{probe.vec_version} loads") if probe.vec_version
           else Check("sqlite-vec", False, probe.vec_error, "run `make install` (pip install sqlite-vec)")]
    if probe.fts5_error is None:
        out.append(Check("fts5", True, f"SQLite {probe.sqlite_version} with FTS5 and porter"))
    else:
        out.append(Check("fts5", False, probe.fts5_error, "install an apsw build with FTS5 (pip install -U apsw)"))
    return out


def _index_check(settings: Settings) -> Check:
    """The index opens, passes ``quick_check`` and counts its chunks; a damaged one is a failed check, not a stop."""
    fix = "`memsearch index` rebuilds it from your sources (it is derived data)"
    read_only = False
    try:
        try:
            index = SqliteStore.open(settings.db_path)
        except MemsearchError:
            # a read-only root: searches read the index read-only, and so does this check, when that is safe
            conn = None if os.access(settings.db_path.parent, os.W_OK) else store.connect_read_only(settings.db_path)
            if conn is None:
                raise
            index, read_only = SqliteStore(conn, settings.db_path), True
        with index, store.damage_guard(settings.db_path):
            problems = index.quick_check()
            chunks = index.chunk_count()
    except IndexCorrupt as exc:
        return Check("index", False, f"{settings.db_path} is damaged ({exc.cause})", fix)
    except MemsearchError as exc:
        return Check("index", False, str(exc), "make the memory root writable, with space left")
    if problems != ["ok"]:
        if not read_only:
            store.mark_damaged(settings.db_path)
        shown = "; ".join(problems[:3]) + (f"; … {len(problems) - 3} more" if len(problems) > 3 else "")
        return Check("index", False, f"{settings.db_path}: {chunks} chunks, quick_check: {shown}", fix)
    if read_only:
        return Check("index", False, f"{settings.db_path}: {chunks} chunks, quick_check ok, readable (searches work); "
                     f"not writable: {settings.db_path.parent} is on a read-only file system or another user's "
                     "folder, so nothing new is indexed", "make the memory root writable")
    return Check("index", True, f"{settings.db_path}: {chunks} chunks, quick_check ok")


def _capture_check(settings: Settings) -> Check:
    """Events the hooks could not record (a full disk, a read-only root, an oversized payload), and whether the
    hooks can write now."""
    gone = lost.summary(settings.state_dir)
    problem = root_problem(settings.home)
    if problem:
        return Check("capture", False, f"{settings.home} {problem}: the hooks cannot record events",
                     "give the memory root as a folder (--home or MEMSEARCH_HOME)")
    events = settings.home / EVENTS_DIR
    folder = events if events.is_dir() else settings.home
    while not folder.exists() and folder.parent != folder:  # not made yet: the first hook creates it
        folder = folder.parent
    writable = os.access(folder, os.W_OK)
    if gone:
        clear = f"delete {settings.state_dir / LOST_EVENTS} to clear this notice"
        if "payload over" in str(gone.get("reason")) and writable:  # the last loss was an oversized event
            return Check("capture", False, lost.describe(gone),
                         f"nothing to repair: a hook's payload over the size memsearch reads is not recorded (a "
                         f"tool's huge output, say); {clear}")
        return Check("capture", False, lost.describe(gone),
                     f"{'make ' + str(folder) + ' writable and ' if not writable else ''}keep space free on its disk; "
                     f"once that is done, {clear}")
    if not writable:
        return Check("capture", False, f"{folder} is not writable: the hooks cannot record events",
                     "make the memory root writable (a read-only mount or another user's folder?)")
    if not settings.home.exists():
        return Check("capture", True, f"no event lost; {settings.home} does not exist yet (the first hook creates it)")
    return Check("capture", True, "no event lost")


TEAM_EXTRA = ("psycopg", "psycopg_pool", "pgvector")


def team_checks(settings: Settings) -> list[Check]:
    """With ``db_url``: the team extra installed; the database answering (within
    :data:`~indexer.store.pg_admin.PROBE_TIMEOUT` seconds); its schema the version this memsearch needs; the role
    a member that may read and write its own rows (read-only: nothing is written); when this memory root last
    synced there; forgets still waiting to reach it. Nothing without ``db_url``."""
    if settings.db_url is None:
        return []
    url = mask_url(settings.db_url)
    from indexer.team import last_synced, pending_forgets

    pending = pending_forgets(settings)
    out, held = _team_database_checks(settings.db_url, url, pending)
    last = last_synced(settings)
    out.append(Check("team sync", True, f"this memory root last synced to {url} at {last}") if last else
               Check("team sync", True, f"this memory root has never synced to {url}", "run `memsearch sync`",
                     info=True))
    out.append(_forgets_check(len(pending), held))
    return out


def _forgets_check(pending: int, held: int | None) -> Check:
    """The ``team forgets`` line: ``pending`` ids a forget could not remove from the team database yet, of which
    the database (when it could be asked) still holds ``held``. Another memory root of the same member may have
    removed them there since (the user's list it emptied is not this root's): then they are not still there."""
    if not pending:
        return Check("team forgets", True, "none waiting to reach the team database")
    if held == 0:
        return Check("team forgets", True, f"none waiting: the {pending} forgotten chunk(s) listed here are no "
                     "longer on the team database (another memory root of yours removed them there); the next "
                     "connection clears the list")
    return Check("team forgets", False, f"{held if held is not None else pending} forgotten chunk(s) are still on "
                 "the team database (it could not be reached when you forgot them)",
                 "run `memsearch sync` (it removes them there first)")


def _team_database_checks(db_url: str, url: str, pending: list[str]) -> tuple[list[Check], int | None]:
    import importlib
    from importlib.metadata import PackageNotFoundError, version

    for module in TEAM_EXTRA:
        try:
            importlib.import_module(module)
        except ImportError:
            return [Check("team extra", False, f"{module} is not installed, and db_url is set ({url})",
                          "pip install 'memsearch-hybrid[team]' (or unset db_url to use the local index only)")], None
    try:
        shown = ", ".join(f"{name} {version(name)}" for name in ("psycopg", "psycopg-pool", "pgvector"))
    except PackageNotFoundError:
        shown = ", ".join(TEAM_EXTRA)
    out = [Check("team extra", True, shown)]
    from indexer.store.pg_admin import probe_member
    from indexer.store.pg_schema import MEMBER_ROLE, SCHEMA_VERSION
    from indexer.store.postgres import StoreUnavailable

    try:
        access = probe_member(db_url, pending=pending)
    except StoreUnavailable as exc:
        return [*out, Check("team database", False, str(exc),
                            "start the server, or check db_url's host, port, user and password; searches and hooks "
                            "read the local index meanwhile")], None
    out.append(Check("team database", True, f"{url} answers as {access.role} ({access.connect_ms} ms to connect)"))
    admin_fix = f"the administrator runs `memsearch team init --apply --member {access.role}`"
    if access.schema_version == 0:
        return [*out, Check("team schema", False, f"{url} holds no memsearch schema", admin_fix)], None
    if access.schema_version is None:
        pass  # the role may not read the schema: what it lacks is the finding (below)
    elif access.schema_version != SCHEMA_VERSION:
        newer = access.schema_version > SCHEMA_VERSION
        out.append(Check("team schema", False, f"version {access.schema_version}, this memsearch needs "
                         f"{SCHEMA_VERSION}", "upgrade memsearch on this machine (pip install -U "
                         "'memsearch-hybrid[team]')" if newer else "the administrator runs `memsearch team init "
                         "--apply`"))
    else:
        out.append(Check("team schema", True, f"version {access.schema_version}, as this memsearch needs"))
    if access.bypasses_rls:
        out.append(Check("team access", False, f"{access.role} is a {access.bypasses_rls} role: row-level security "
                         "does not apply to it, so it sees every member's private rows",
                         f"connect as a member's role ({admin_fix.replace(access.role, 'NAME')}, then that role in "
                         "db_url)"))
    elif access.missing or access.read_error:
        what = ", ".join(access.missing) or f"cannot read its own rows ({access.read_error})"
        out.append(Check("team access", False, f"{access.role} lacks {what}" if access.missing else
                         f"{access.role} {what}", admin_fix + f" (it grants {MEMBER_ROLE})"))
    else:
        out.append(Check("team access", True, f"{access.role} reads and writes its own rows under row-level "
                         f"security ({access.own_sources} sources, {access.own_meta} meta keys of its own)"))
    return out, access.pending_held


def run_checks(settings: Settings, load_model: bool = True) -> list[Check]:
    checks = _sqlite_checks()
    choice = resolve_model(settings)
    if not choice.available:
        checks.append(Check("model", False, choice.reason or "unavailable",
                            "run `make install` or `memsearch model install`"))
    elif load_model:
        from indexer.base.embedder import load_embedder

        try:
            dim = len(load_embedder(settings).embed_query("doctor")) // 4
            checks.append(Check("model", True, f"{choice.model_id} loads, {dim} dimensions"))
        except Exception as exc:  # a model that fails to load is the finding itself
            checks.append(Check("model", False, f"{choice.model_id} fails to load: {exc}", "run `memsearch model install`"))
    else:
        checks.append(Check("model", True, f"{choice.model_id} ({choice.source})"))
    if settings.db_path.exists():
        checks.append(_index_check(settings))
    else:
        checks.append(Check("index", False, f"{settings.db_path} does not exist", "run `memsearch index`"))
    checks.append(_capture_check(settings))
    checks += team_checks(settings)
    pid = server_pid(settings)
    if pid is not None:
        server = is_running(settings, timeout=2.0) or {}
        checks.append(Check("server", True, f"pid {pid}, model {server.get('model') or 'none'}"))
    elif os.environ.get("CLAUDECODE") == "1":  # inside a Claude Code session the hooks should have started it
        checks.append(Check("server", False, "not running inside a Claude Code session",
                            "see <root>/.memsearch/logs/serve.log; or run `memsearch serve --detach`"))
    else:
        checks.append(Check("server", True, "not running (the next Claude Code session or prompt starts it)",
                            info=True))
    checks += hook_checks(settings)
    checks += mcp_checks(settings)
    crontab = shutil.which("crontab")
    line = None
    if crontab:
        proc = subprocess.run([crontab, "-l"], capture_output=True, text=True, timeout=5)
        line = next((x for x in proc.stdout.splitlines() if "memsearch" in x and not x.startswith("#")), None)
    fix = None if line else "run `memsearch cron install` (weekly `memsearch maintain`)" if crontab else (
        "install cron, then run `memsearch cron install`; or schedule the line `memsearch cron status` prints "
        "with your own scheduler")
    checks.append(Check("cron", True, line or ("no crontab command" if not crontab else "no weekly entry"), fix,
                        info=line is None))
    return checks
