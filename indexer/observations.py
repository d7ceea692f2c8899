"""Turning a tool call into a compact, searchable observation (used by the PostToolUse hook and by transcript
import, so both record the same text)."""

from __future__ import annotations

import json
from typing import Any

from .privacy import cut_head, cut_tail, scrub

#: The input field that says what a tool call was about.
KEY_FIELDS = {
    "Bash": "command", "PowerShell": "command", "Write": "file_path", "Edit": "file_path",
    "MultiEdit": "file_path", "Read": "file_path", "NotebookEdit": "notebook_path", "NotebookRead": "notebook_path",
    "Glob": "pattern", "Grep": "pattern", "WebFetch": "url", "WebSearch": "query", "Agent": "description",
    "Task": "description", "LS": "path",
}
#: Tools whose calls say nothing worth remembering.
SKIP_TOOLS = {
    "TodoWrite", "TodoRead", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "ExitPlanMode", "EnterPlanMode",
    "AskUserQuestion", "ListMcpResourcesTool", "ReadMcpResourceTool",
}
HEAD_CHARS = 1500
TAIL_CHARS = 500


def skip_tool(name: str) -> bool:
    return name in SKIP_TOOLS or (name.startswith("mcp__") and "memsearch" in name)


def truncate_middle(text: str, head: int = HEAD_CHARS, tail: int = TAIL_CHARS) -> str:
    """A bounded head and tail of a long output, with how much was cut in between. The text is privacy-filtered
    whole before it is cut (a private span or key block whose end falls in the cut is still found), and the cut
    never splits a redaction marker."""
    text = scrub(text)
    if len(text) <= head + tail + 40:
        return text
    first, last = cut_head(text, head), cut_tail(text, tail)
    return f"{first}\n[… {len(text) - len(first) - len(last)} characters cut …]\n{last}"


def response_text(response: Any) -> str:
    """The readable part of a tool response (Bash stdout/stderr, file results, MCP text blocks)."""
    if response is None:
        return ""
    if isinstance(response, str):
        return response
    if isinstance(response, list):
        return "\n".join(response_text(x) for x in response)
    if isinstance(response, dict):
        parts = []
        for key in ("stdout", "stderr", "output", "result", "content", "text", "error", "message"):
            value = response.get(key)
            if isinstance(value, (str, list)) and value:
                parts.append(response_text(value))
        if parts:
            return "\n".join(parts)
        # stdlib json: orjson refuses integers above 64 bits (TypeError, not passed to ``default``) and the
        # whole event was lost. Each string is filtered before the dump (JSON escapes such as \n and \" would
        # hide a secret's boundaries), the whole dump again before its cut.
        try:
            dumped = json.dumps(_scrub_strings(response), default=str, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            dumped = str(response)
        return cut_head(scrub(dumped), HEAD_CHARS)
    return str(response)


def _scrub_strings(value: Any) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _scrub_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_strings(v) for v in value]
    return value


def succeeded(response: Any, error: Any = None) -> bool:
    if error:
        return False
    if isinstance(response, dict):
        if response.get("success") is False or response.get("is_error") or response.get("interrupted"):
            return False
        code = response.get("exit_code", response.get("exitCode", response.get("returncode")))
        if isinstance(code, int) and code != 0:
            return False
    return True


def describe_tool(name: str, tool_input: Any, output: str, ok: bool) -> tuple[str, dict[str, Any]]:
    """``(content, metadata)`` of a tool observation."""
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    field = KEY_FIELDS.get(name)
    key = tool_input.get(field) if field else None
    if key is None:
        for candidate in ("file_path", "command", "pattern", "url", "query", "path", "description"):
            if isinstance(tool_input.get(candidate), str):
                field, key = candidate, tool_input[candidate]
                break
    key = scrub(str(key)) if key is not None else ""
    lines = [f"{name}{': ' + key if key else ''}{'' if ok else ' (failed)'}"]
    if name in ("Edit", "MultiEdit") and isinstance(tool_input.get("new_string"), str):
        lines.append("new: " + truncate_middle(tool_input["new_string"], 400, 100))
    elif name == "Write" and isinstance(tool_input.get("content"), str):
        lines.append(f"wrote {tool_input['content'].count(chr(10)) + 1} lines")
    if output and name not in ("Write", "Read"):
        lines.append(truncate_middle(output.strip()))
    metadata: dict[str, Any] = {"success": ok}
    if field and key:
        metadata[field] = cut_head(key, 1000)
    return "\n".join(lines), metadata
