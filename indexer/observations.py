"""Turning a tool call into a compact, searchable observation (used by the PostToolUse hook and by transcript
import, so both record the same text)."""

from __future__ import annotations

import json
from typing import Any

from indexer.privacy import cut_head, cut_tail, scrub

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


#: File and search tools: their observation is built from the structured input (and the response's counts),
#: never from the response itself, which repeats the file (Read), the patch (Edit) or JSON bookkeeping.
STRUCTURED = ("Edit", "MultiEdit", "Write", "Read", "Grep", "Glob", "NotebookEdit")


def describe_tool(name: str, tool_input: Any, output: str, ok: bool, response: Any = None) -> tuple[str, dict[str, Any]]:
    """``(content, metadata)`` of a tool observation: a first line ``Tool: key input``, then what matters of it.

    >>> describe_tool("Edit", {"file_path": "/r/a.py", "old_string": "x = 1", "new_string": "x = 2"}, "", True)[0]
    'Edit: /r/a.py\\nold: x = 1\\nnew: x = 2'
    >>> describe_tool("Grep", {"pattern": "TODO", "path": "/r", "glob": "*.py"}, "", True,
    ...               {"numFiles": 2, "filenames": ["/r/a.py", "/r/b.py"]})[0]
    'Grep: TODO in /r (*.py)\\n2 files: /r/a.py, /r/b.py'
    """
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    field = KEY_FIELDS.get(name)
    key = tool_input.get(field) if field else None
    if key is None:
        for candidate in ("file_path", "command", "pattern", "url", "query", "path", "description"):
            if isinstance(tool_input.get(candidate), str):
                field, key = candidate, tool_input[candidate]
                break
    key = scrub(str(key)) if key is not None else ""
    head = f"{name}{': ' + key if key else ''}"
    if name in ("Grep", "Glob") and isinstance(tool_input.get("path"), str):
        head += f" in {tool_input['path']}"
    if name == "Grep" and isinstance(tool_input.get("glob"), str):
        head += f" ({tool_input['glob']})"
    if name == "Read" and isinstance(tool_input.get("offset"), int):
        limit = tool_input.get("limit")
        head += f" (lines {tool_input['offset']}-{tool_input['offset'] + limit if isinstance(limit, int) else ''})"
    lines = [head + ("" if ok else " (failed)")]
    if name in STRUCTURED:
        extra = _structured(name, tool_input, response if isinstance(response, dict) else {})
        if not extra and name in ("Grep", "Glob") and output and ok:  # a transcript's text result: the file list
            extra = [truncate_middle(output.strip(), 400, 100)]
        lines += extra
        if not ok and output:
            lines.append(truncate_middle(output.strip(), 400, 100))
    elif output:
        lines.append(truncate_middle(output.strip()))
    metadata: dict[str, Any] = {"success": ok}
    if field and key:
        metadata[field] = cut_head(key, 1000)
    return "\n".join(lines), metadata


def _short(text: str, head: int = 400, tail: int = 100) -> str:
    return truncate_middle(text.strip(), head, tail)


def _structured(name: str, tool_input: dict[str, Any], response: dict[str, Any]) -> list[str]:
    """The lines after the first of a file or search tool's observation."""
    out: list[str] = []
    if name == "Edit":
        for label, field in (("old", "old_string"), ("new", "new_string")):
            if isinstance(tool_input.get(field), str):
                out.append(f"{label}: " + _short(tool_input[field]))
        if tool_input.get("replace_all") is True:
            out.append("(every occurrence)")
    elif name == "MultiEdit":
        edits = [e for e in tool_input.get("edits") or [] if isinstance(e, dict)]
        out.append(f"{len(edits)} edits")
        for e in edits[:5]:
            if isinstance(e.get("new_string"), str):
                out.append("new: " + _short(e["new_string"], 200, 50))
    elif name == "Write" and isinstance(tool_input.get("content"), str):
        content = tool_input["content"]
        out.append(f"wrote {content.count(chr(10)) + 1} lines")
        out.append(_short(content, 300, 0))
    elif name == "NotebookEdit" and isinstance(tool_input.get("new_source"), str):
        out.append("new: " + _short(tool_input["new_source"]))
    elif name == "Read":
        raw_file = response.get("file")
        file = raw_file if isinstance(raw_file, dict) else {}
        if isinstance(file.get("numLines"), int):
            out.append(f"{file['numLines']} lines read")
    elif name in ("Grep", "Glob"):
        names = [str(f) for f in response.get("filenames") or [] if isinstance(f, str)]
        count = response.get("numFiles") if isinstance(response.get("numFiles"), int) else len(names)
        if names or count:
            shown = ", ".join(names[:10]) + (f", … {len(names) - 10} more" if len(names) > 10 else "")
            out.append(f"{count} files" + (f": {shown}" if shown else ""))
        if isinstance(response.get("content"), str) and response["content"].strip():
            out.append(_short(response["content"]))
    return [line for line in out if line]
