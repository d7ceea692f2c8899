"""Claude Code hook handlers."""
