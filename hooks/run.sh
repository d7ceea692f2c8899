#!/bin/sh
# Plugin entry for every hook and for the MCP server: run memsearch with the plugin's own virtualenv when it has
# one (`make install` in the plugin folder), else an installed memsearch-hook. Never fails the user's turn.
root="${CLAUDE_PLUGIN_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
if [ -x "$root/.venv/bin/python" ]; then
  py="$root/.venv/bin/python"
elif command -v memsearch-hook >/dev/null 2>&1; then
  py="$(dirname "$(command -v memsearch-hook)")/python"
else
  exit 0
fi
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
if [ "$1" = "mcp" ]; then
  exec "$py" -m search_engine.cli mcp
fi
exec "$py" -m hooks.entry "$@"
