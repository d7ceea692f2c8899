"""Registering memsearch's hooks (and optionally its MCP server) in Claude Code settings, and taking them out.

``install`` adds one handler per event, each a command that runs ``memsearch-hook <event>``; it is idempotent
(installing twice leaves one copy), keeps a timestamped backup of the settings file, and never touches other
hooks. ``uninstall`` removes exactly the handlers whose command runs memsearch-hook, and the groups and events it
leaves empty, and the file itself when nothing else is left in it.

Scopes: ``user`` (``~/.claude/settings.json``), ``project`` (``.claude/settings.json``, the file a team commits:
its command names ``memsearch-hook`` without this machine's path, found on each member's PATH) and ``local``
(``.claude/settings.local.json``, this machine only). Backups of a project's files go to the memory root
(``.memsearch/backups/``), never into the repository. A memory root other than the default is written into each
command (``MEMSEARCH_HOME=… memsearch-hook …``), so the hooks use it whatever the environment Claude Code has.
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

    >>> hook_command("prompt", "project", Path("/data/mem"))
    'MEMSEARCH_HOME=/data/mem memsearch-hook prompt'
    """
    script = MARKER if scope == "project" else f'"{Path(sys.executable).with_name(MARKER)}"'
    prefix = f"MEMSEARCH_HOME={shlex.quote(str(home))} " if home is not None else ""
    return f"{prefix}{script} {event_arg}"


def command_program(command: str) -> str | None:
    """The program a hook command runs (past any ``NAME=value`` prefix), or None when it cannot be parsed."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    words = [w for w in words if not (("=" in w) and w.split("=", 1)[0].isidentifier())]
    return words[0] if words else None


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


def _save(path: Path, data: dict[str, Any], backups: Path | None = None) -> str | None:
    """Write ``data`` to ``path`` (removing the file when ``data`` is empty), after a backup beside it or, for a
    project's files, in ``backups``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists():
        name = f"{path.name}.memsearch-backup-{time.strftime('%Y%m%d-%H%M%S')}"
        if backups is not None:
            backups.mkdir(parents=True, exist_ok=True, mode=0o700)
            target = backups / f"{path.parent.parent.name}-{name}"
        else:
            target = path.with_name(name)
        n = 1
        while target.exists():  # two changes within a second keep both backups
            target, n = target.with_name(f"{target.name.rsplit('~', 1)[0]}~{n}"), n + 1
        backup = str(target)
        shutil.copy2(path, backup)
    if not data:
        path.unlink(missing_ok=True)
        return backup
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
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


def _backups(scope: str, home: Path | None) -> Path | None:
    if scope == "user":
        return None
    from indexer.base.settings import resolve_settings

    return resolve_settings(home).state_dir / BACKUPS


def install(scope: str = "user", project_dir: Path | None = None, with_mcp: bool = False,
            home: Path | None = None) -> InstallReport:
    """Register the hooks; ``home``: a memory root to write into each command (None: the default root)."""
    path = settings_path(scope, project_dir, home)
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
    return InstallReport(str(path), backup, tuple(added), (), mcp)


def uninstall(scope: str = "user", project_dir: Path | None = None, home: Path | None = None) -> InstallReport:
    path = settings_path(scope, project_dir, home)
    data = _load(path)
    removed = _strip(data)
    backup = _save(path, data, _backups(scope, home)) if removed else None
    mcp = _uninstall_mcp(scope, project_dir, home)
    return InstallReport(str(path), backup, (), tuple(dict.fromkeys(removed)), mcp)


def _mcp_path(scope: str, project_dir: Path | None, home: Path | None = None) -> Path:
    """Where Claude Code keeps user MCP servers: ``.claude.json`` in its folder when one is set (the
    ``claude_dir`` setting), else in the home directory, beside ``~/.claude``."""
    if scope in ("project", "local"):
        return (project_dir or Path.cwd()) / ".mcp.json"
    from indexer.base.settings import resolve_settings

    settings = resolve_settings(home, strict=False)
    base = settings.claude_dir if settings.origins.get("claude_dir") else Path("~").expanduser()
    return base / ".claude.json"


def _mcp_entry() -> dict[str, Any]:
    return {"type": "stdio", "command": str(Path(sys.executable).with_name("memsearch")), "args": ["mcp"]}


def _install_mcp(scope: str, project_dir: Path | None, home: Path | None = None) -> str:
    path = _mcp_path(scope, project_dir, home)
    data = _load(path)
    servers = data.setdefault("mcpServers", {})
    if servers.get("memsearch") != _mcp_entry():
        servers["memsearch"] = _mcp_entry()
        _save(path, data)
    return str(path)


def _uninstall_mcp(scope: str, project_dir: Path | None, home: Path | None = None) -> str | None:
    path = _mcp_path(scope, project_dir, home)
    if not path.exists():
        return None
    data = _load(path)
    servers = data.get("mcpServers")
    entry = servers.get("memsearch") if isinstance(servers, dict) else None
    if not isinstance(servers, dict) or not isinstance(entry, dict) or "memsearch" not in str(entry.get("command", "")):
        return None
    del servers["memsearch"]
    if not servers:
        del data["mcpServers"]
    _save(path, data, _backups(scope, home) if scope != "user" else None)
    return str(path)


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
