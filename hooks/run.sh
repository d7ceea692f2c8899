#!/bin/sh
# Plugin entry for every hook and for the MCP server: run memsearch with the plugin's own virtualenv when it has
# one (`make install` in the plugin folder), else an installed memsearch-hook. Never fails the user's turn.
# A hook runs the memsearch-hook script itself (as `memsearch install` writes it): `python -m hooks.entry` would
# cost every prompt ~3 ms more, for runpy.
root="${CLAUDE_PLUGIN_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
if [ -x "$root/.venv/bin/memsearch-hook" ]; then
  bin="$root/.venv/bin"
elif command -v memsearch-hook >/dev/null 2>&1; then
  bin="$(dirname "$(command -v memsearch-hook)")"
else
  exit 0
fi
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
if [ "$1" = "mcp" ]; then
  exec "$bin/python" -m search_engine.cli mcp
fi
exec "$bin/memsearch-hook" "$@"
