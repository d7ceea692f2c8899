"""Registering memsearch's hooks (and optionally its MCP server) in Claude Code settings, and taking them out.

``install`` adds one handler per event, each a command that runs ``memsearch-hook <event>``; it is idempotent
(installing twice leaves one copy), keeps a timestamped backup of the settings file, and never touches other
hooks. ``uninstall`` removes exactly the handlers whose command runs memsearch-hook, and the groups and events it
leaves empty.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from indexer.errors import MemsearchError, UsageError

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


def claude_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path("~/.claude").expanduser())


def settings_path(scope: str, project_dir: Path | None = None) -> Path:
    if scope == "user":
        return claude_dir() / "settings.json"
    if scope == "project":
        return (project_dir or Path.cwd()) / ".claude" / "settings.json"
    raise UsageError(f"invalid scope {scope!r}: use user or project")


def hook_command(event_arg: str) -> str:
    """The shell command for one hook: this installation's memsearch-hook, by absolute path."""
    script = Path(sys.executable).with_name(MARKER)
    return f'"{script}" {event_arg}'


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


def _save(path: Path, data: dict[str, Any]) -> str | None:
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists():
        backup = str(path.with_name(f"{path.name}.memsearch-backup-{time.strftime('%Y%m%d-%H%M%S')}"))
        shutil.copy2(path, backup)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    os.replace(tmp, path)
    return backup


def _is_ours(handler: Any) -> bool:
    return isinstance(handler, dict) and MARKER in str(handler.get("command", ""))


def _strip(data: dict[str, Any]) -> list[str]:
    """Remove our handlers in place; returns the events they were under."""
    removed = []
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


def install(scope: str = "user", project_dir: Path | None = None, with_mcp: bool = False) -> InstallReport:
    path = settings_path(scope, project_dir)
    data = _load(path)
    before = orjson.dumps(data)
    _strip(data)
    hooks = data.setdefault("hooks", {})
    added = []
    for event, (arg, matcher, timeout, is_async) in HOOKS.items():
        handler: dict[str, Any] = {"type": "command", "command": hook_command(arg), "timeout": timeout}
        if is_async:
            handler["async"] = True
        group: dict[str, Any] = {"hooks": [handler]}
        if matcher:
            group = {"matcher": matcher, **group}
        hooks.setdefault(event, []).append(group)
        added.append(event)
    backup = _save(path, data) if orjson.dumps(data) != before else None
    mcp = _install_mcp(scope, project_dir) if with_mcp else None
    return InstallReport(str(path), backup, tuple(added), (), mcp)


def uninstall(scope: str = "user", project_dir: Path | None = None) -> InstallReport:
    path = settings_path(scope, project_dir)
    data = _load(path)
    removed = _strip(data)
    backup = _save(path, data) if removed else None
    mcp = _uninstall_mcp(scope, project_dir)
    return InstallReport(str(path), backup, (), tuple(dict.fromkeys(removed)), mcp)


def _mcp_path(scope: str, project_dir: Path | None) -> Path:
    if scope == "project":
        return (project_dir or Path.cwd()) / ".mcp.json"
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path("~").expanduser()) / ".claude.json"


def _mcp_entry() -> dict[str, Any]:
    return {"type": "stdio", "command": str(Path(sys.executable).with_name("memsearch")), "args": ["mcp"]}


def _install_mcp(scope: str, project_dir: Path | None) -> str:
    path = _mcp_path(scope, project_dir)
    data = _load(path)
    servers = data.setdefault("mcpServers", {})
    if servers.get("memsearch") != _mcp_entry():
        servers["memsearch"] = _mcp_entry()
        _save(path, data)
    return str(path)


def _uninstall_mcp(scope: str, project_dir: Path | None) -> str | None:
    path = _mcp_path(scope, project_dir)
    if not path.exists():
        return None
    data = _load(path)
    servers = data.get("mcpServers")
    entry = servers.get("memsearch") if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or "memsearch" not in str(entry.get("command", "")):
        return None
    del servers["memsearch"]
    _save(path, data)
    return str(path)


def installed_events(scope: str, project_dir: Path | None = None) -> list[str]:
    data = _load(settings_path(scope, project_dir))
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    return [event for event, groups in hooks.items() if isinstance(groups, list) and any(
        isinstance(g, dict) and any(_is_ours(h) for h in g.get("hooks", []) or []) for g in groups)]
