"""Registering memsearch's hooks (and optionally its MCP server) in Claude Code settings, and taking them out.

``install`` adds one handler per event, each a command that runs ``memsearch-hook <event>``; it is idempotent
(installing twice leaves one copy), keeps a timestamped backup of the settings file, and never touches other
hooks. ``uninstall`` removes exactly the handlers whose command runs memsearch-hook, and the groups and events it
leaves empty, and the file itself when nothing else is left in it.

Scopes: ``user`` (``~/.claude/settings.json``), ``project`` (``.claude/settings.json``, the file a team commits:
its command names ``memsearch-hook`` without this machine's path, found on each member's PATH) and ``local``
(``.claude/settings.local.json``, this machine only). Backups of a project's files go to the memory root
(``.memsearch/backups/``; ``~/.claude/memsearch-backups/`` when that cannot be made), never into the repository.
A memory root other than the default is written into each command (``MEMSEARCH_HOME=… memsearch-hook …``) and
into the MCP server's ``env``, so hooks and MCP use it whatever the environment Claude Code has; except in the
project scope, whose files are shared and hold no local path (the report then says in one line which root the
hooks will use).

The MCP server goes where Claude Code keeps each scope's servers: ``user`` in ``.claude.json``'s ``mcpServers``,
``local`` in its ``projects[<project dir>].mcpServers`` (this machine only), ``project`` in the project's
``.mcp.json`` (shared: ``memsearch`` by name, no ``env``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from indexer.base.errors import MemsearchError, UsageError
from indexer.base.paths import BACKUPS

MARKER = "memsearch-hook"
#: In Claude Code's folder: backups of a project's settings when the memory root cannot hold them.
FALLBACK_BACKUPS = "memsearch-backups"
#: event -> (hook argument, matcher or None, timeout seconds, async)
HOOKS: dict[str, tuple[str, str | None, int, bool]] = {
    "SessionStart": ("session-start", None, 10, False),
    "UserPromptSubmit": ("prompt", None, 10, False),
    "PostToolUse": ("tool", "*", 30, True),
    "PostToolUseFailure": ("tool", "*", 30, True),
    "Stop": ("stop", None, 30, True),
    "SessionEnd": ("session-end", None, 5, False),
}


@dataclass(frozen=True)
class InstallReport:
    settings_path: str
    backup: str | None
    added: tuple[str, ...]
    removed: tuple[str, ...]
    mcp: str | None = None
    note: str | None = None


def claude_dir(home: Path | None = None) -> Path:
    """Claude Code's folder: the ``claude_dir`` setting (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``)."""
    from indexer.base.settings import resolve_settings

    return resolve_settings(home, strict=False).claude_dir


SCOPES = ("user", "project", "local")


def settings_path(scope: str, project_dir: Path | None = None, home: Path | None = None) -> Path:
    if scope == "user":
        return claude_dir(home) / "settings.json"
    if scope == "project":
        return (project_dir or Path.cwd()) / ".claude" / "settings.json"
    if scope == "local":
        return (project_dir or Path.cwd()) / ".claude" / "settings.local.json"
    raise UsageError(f"invalid scope {scope!r}: use user, project or local")


def hook_command(event_arg: str, scope: str = "user", home: Path | None = None) -> str:
    """The shell command for one hook: this installation's memsearch-hook by absolute path (by name in a
    project's shared settings), with the memory root when it is not the default.

    >>> hook_command("prompt", "local", Path("/data/mem")).startswith("MEMSEARCH_HOME=/data/mem ")
    True
    >>> hook_command("prompt", "project", Path("/data/mem"))
    'memsearch-hook prompt'
    """
    if scope == "project":  # shared: no path of this machine
        return f"{MARKER} {event_arg}"
    script = f'"{Path(sys.executable).with_name(MARKER)}"'
    prefix = f"MEMSEARCH_HOME={shlex.quote(str(home))} " if home is not None else ""
    return f"{prefix}{script} {event_arg}"


def project_root_note(home: Path | None) -> str | None:
    """For the project scope, which names no memory root: one line when ``home`` is not the root its hooks use."""
    from indexer.base.settings import default_home

    if home is None or home == default_home():
        return None
    return (f"the shared project settings name no memory root: the hooks use MEMSEARCH_HOME from Claude Code's "
            f"environment, else {default_home()}; for {home}, set MEMSEARCH_HOME in .claude/settings.local.json's "
            f"\"env\" or in your shell")


def _split(command: str) -> tuple[dict[str, str], list[str]] | None:
    """A hook command as its ``NAME=value`` prefix and the words after it (None: it cannot be parsed)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    env: dict[str, str] = {}
    while words and (name := words[0].partition("=")[0]).isidentifier() and "=" in words[0]:
        env[name] = words.pop(0).partition("=")[2]
    return env, words


def command_home(command: str) -> Path | None:
    """The memory root a hook command names (its ``MEMSEARCH_HOME=…`` prefix), or None when it names none.

    >>> command_home(hook_command("prompt", "local", Path("/data/my mem")))
    PosixPath('/data/my mem')
    """
    split = _split(command)
    home = split[0].get("MEMSEARCH_HOME") if split else None
    return Path(home).expanduser() if home else None


def command_program(command: str) -> str | None:
    """The program a hook command runs (past any ``NAME=value`` prefix), or None when it cannot be parsed."""
    split = _split(command)
    return split[1][0] if split and split[1] else None


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = orjson.loads(path.read_bytes() or b"{}")
    except orjson.JSONDecodeError as exc:
        raise MemsearchError(f"{path} is not valid JSON ({exc}); fix it, then run the command again") from None
    if not isinstance(data, dict):
        raise MemsearchError(f"{path} does not hold a JSON object; fix it, then run the command again")
    return data


def _save(path: Path, data: dict[str, Any], backups: list[Path] | None = None) -> str | None:
    """Write ``data`` to ``path`` (removing the file when ``data`` is empty), after a backup beside it or, for a
    project's files, in the first folder of ``backups`` that can be made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists():
        name = f"{path.name}.memsearch-backup-{time.strftime('%Y%m%d-%H%M%S')}"
        if backups:
            target = _folder(backups) / f"{path.parent.parent.name}-{name}"
        else:
            target = path.with_name(name)
        n = 1
        while target.exists():  # two changes within a second keep both backups
            target, n = target.with_name(f"{target.name.rsplit('~', 1)[0]}~{n}"), n + 1
        backup = str(target)
        shutil.copy2(path, backup)
        if backups is not None:
            os.chmod(backup, 0o600)  # under the memory root, as every file memsearch writes there
    if not data:
        path.unlink(missing_ok=True)
        return backup
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666 if mode is None else mode)
    with open(fd, "wb") as out:
        if mode is not None:
            os.fchmod(fd, mode)  # the file keeps its mode (~/.claude.json is its user's alone), a leftover tmp's too
        out.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    os.replace(tmp, path)
    return backup


def _is_ours(handler: Any) -> bool:
    return isinstance(handler, dict) and MARKER in str(handler.get("command", ""))


def _strip(data: dict[str, Any]) -> list[str]:
    """Remove our handlers in place; returns the events they were under."""
    removed: list[str] = []
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return removed
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            kept = [h for h in group["hooks"] if not _is_ours(h)]
            if len(kept) != len(group["hooks"]):
                removed.append(event)
            if kept:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del data["hooks"]
    return removed


def _backups(scope: str, home: Path | None) -> list[Path] | None:
    """Where a project's settings files are backed up (None: beside the file, for the user's own): the memory
    root's ``.memsearch/backups``, else, when that cannot be made (the root is a file, or read-only),
    ``memsearch-backups`` in Claude Code's folder, so that an uninstall never depends on the memory root."""
    if scope == "user":
        return None
    from indexer.base.settings import resolve_settings

    settings = resolve_settings(home, strict=False)
    return [settings.state_dir / BACKUPS, settings.claude_dir / FALLBACK_BACKUPS]


def _folder(candidates: list[Path]) -> Path:
    """The first of ``candidates`` that is, or can be made, a folder (0700)."""
    for i, folder in enumerate(candidates):
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            return folder
        except OSError:
            if i == len(candidates) - 1:
                raise
    raise ValueError("no folder to choose from")


def refuse_unusable_root(home: Path | None) -> None:
    """A :class:`MemsearchError` when the memory root the hooks would use exists but is not a folder: every
    event they capture would be lost."""
    from indexer.base.settings import resolve_settings, root_problem

    root = resolve_settings(home, strict=False).home
    problem = root_problem(root)
    if problem:
        raise MemsearchError(f"the memory root {root} {problem}: give a folder with --home or MEMSEARCH_HOME "
                             "(it is created if missing)")


def install(scope: str = "user", project_dir: Path | None = None, with_mcp: bool = False,
            home: Path | None = None) -> InstallReport:
    """Register the hooks; ``home``: a memory root to write into each command (None: the default root)."""
    path = settings_path(scope, project_dir, home)
    refuse_unusable_root(home)
    data = _load(path)
    before = orjson.dumps(data)
    _strip(data)
    hooks = data.setdefault("hooks", {})
    added = []
    for event, (arg, matcher, timeout, is_async) in HOOKS.items():
        handler: dict[str, Any] = {"type": "command", "command": hook_command(arg, scope, home),
                                   "timeout": timeout}
        if is_async:
            handler["async"] = True
        group: dict[str, Any] = {"hooks": [handler]}
        if matcher:
            group = {"matcher": matcher, **group}
        hooks.setdefault(event, []).append(group)
        added.append(event)
    backup = _save(path, data, _backups(scope, home)) if orjson.dumps(data) != before else None
    mcp = _install_mcp(scope, project_dir, home) if with_mcp else None
    notes = [project_root_note(home) if scope == "project" else None, twice_note(scope, project_dir)]
    return InstallReport(str(path), backup, tuple(added), (), mcp, "; ".join(n for n in notes if n) or None)


def twice_note(scope: str, project_dir: Path | None = None) -> str | None:
    """One line when memsearch's hooks are also in another scope: Claude Code runs the hooks of every scope, so
    each event would be recorded once for each."""
    others = [other for other in SCOPES if other != scope and installed_commands(other, project_dir)]
    if not others:
        return None
    return (f"memsearch's hooks are also in the {' and '.join(others)} scope: Claude Code runs every scope's hooks, "
            f"so each event is recorded {len(others) + 1} times; keep one (`memsearch uninstall --scope "
            f"{others[0]}`)")


def uninstall(scope: str = "user", project_dir: Path | None = None, home: Path | None = None) -> InstallReport:
    path = settings_path(scope, project_dir, home)
    data = _load(path)
    removed = _strip(data)
    backup = _save(path, data, _backups(scope, home)) if removed else None
    mcp = _uninstall_mcp(scope, project_dir, home)
    legacy = registered_mcp("project", project_dir) if scope == "local" else None
    if legacy is not None and legacy.get("command") != "memsearch":  # an older install put local's in .mcp.json
        mcp = _uninstall_mcp("project", project_dir, home) or mcp
    return InstallReport(str(path), backup, (), tuple(dict.fromkeys(removed)), mcp)


def _mcp_path(scope: str, project_dir: Path | None, home: Path | None = None) -> Path:
    """The file holding ``scope``'s MCP servers: the project's ``.mcp.json``, else ``.claude.json`` in Claude
    Code's folder when one is set (the ``claude_dir`` setting), else in the home directory, beside ``~/.claude``."""
    if scope == "project":
        return (project_dir or Path.cwd()) / ".mcp.json"
    from indexer.base.settings import resolve_settings

    settings = resolve_settings(home, strict=False)
    base = settings.claude_dir if settings.origins.get("claude_dir") else Path("~").expanduser()
    return base / ".claude.json"


def _project_key(project_dir: Path | None) -> str:
    """A project's entry in ``.claude.json``'s ``projects``: its absolute path."""
    return str((project_dir or Path.cwd()).absolute())


def _our_server(entry: Any) -> bool:
    """An MCP server entry that runs memsearch (a hook handler is :func:`_is_ours`)."""
    return isinstance(entry, dict) and "memsearch" in str(entry.get("command", ""))


def _servers(data: dict[str, Any], scope: str, project_dir: Path | None, create: bool) -> dict[str, Any] | None:
    """The ``mcpServers`` object of ``scope`` in ``data`` (a local scope's sits under its project's entry)."""
    holder: Any = data
    if scope == "local":
        projects = data.setdefault("projects", {}) if create else data.get("projects")
        key = _project_key(project_dir)
        holder = projects.setdefault(key, {}) if create and isinstance(projects, dict) else (
            projects.get(key) if isinstance(projects, dict) else None)
    if not isinstance(holder, dict):
        return None
    servers = holder.setdefault("mcpServers", {}) if create else holder.get("mcpServers")
    return servers if isinstance(servers, dict) else None


def mcp_entry(scope: str, home: Path | None) -> dict[str, Any]:
    """The MCP server's registration: this installation's ``memsearch mcp`` with the memory root in its ``env``
    when that is not the default; in a project's shared ``.mcp.json``, ``memsearch`` by name and no root."""
    if scope == "project":
        return {"type": "stdio", "command": "memsearch", "args": ["mcp"]}
    entry: dict[str, Any] = {"type": "stdio", "command": str(Path(sys.executable).with_name("memsearch")),
                             "args": ["mcp"]}
    if home is not None:
        entry["env"] = {"MEMSEARCH_HOME": str(home)}
    return entry


def _install_mcp(scope: str, project_dir: Path | None, home: Path | None = None) -> str:
    path = _mcp_path(scope, project_dir, home)
    data = _load(path)
    servers = _servers(data, scope, project_dir, create=True)
    if servers is None:
        raise MemsearchError(f"{path} does not hold its MCP servers as a JSON object; fix it, then run the command "
                             "again")
    if servers.get("memsearch") != mcp_entry(scope, home):
        servers["memsearch"] = mcp_entry(scope, home)
        _save(path, data, _backups(scope, home) if scope == "project" else None)
    return str(path)


def _uninstall_mcp(scope: str, project_dir: Path | None, home: Path | None = None) -> str | None:
    path = _mcp_path(scope, project_dir, home)
    if not path.exists():
        return None
    data = _load(path)
    servers = _servers(data, scope, project_dir, create=False)
    if servers is None or not _our_server(servers.get("memsearch")):
        return None
    del servers["memsearch"]
    if not servers:
        holder = data if scope != "local" else data["projects"][_project_key(project_dir)]
        del holder["mcpServers"]
    _save(path, data, _backups(scope, home) if scope == "project" else None)
    return str(path)


def registered_mcp(scope: str, project_dir: Path | None = None) -> dict[str, Any] | None:
    """memsearch's MCP registration in ``scope``, or None."""
    path = _mcp_path(scope, project_dir)
    if not path.exists():
        return None
    servers = _servers(_load(path), scope, project_dir, create=False)
    entry = servers.get("memsearch") if servers is not None else None
    return entry if _our_server(entry) else None


def installed_commands(scope: str, project_dir: Path | None = None) -> dict[str, str]:
    """Our hook commands in ``scope``'s settings: event -> command."""
    data = _load(settings_path(scope, project_dir))
    raw_hooks = data.get("hooks")
    hooks = raw_hooks if isinstance(raw_hooks, dict) else {}
    found = {}
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            for handler in (group.get("hooks") or []) if isinstance(group, dict) else []:
                if _is_ours(handler):
                    found[event] = str(handler["command"])
    return found
