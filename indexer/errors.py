"""Domain errors. The CLI turns each into one ``Error: …`` line on stderr and its exit code."""


class MemsearchError(Exception):
    """Base class: the message says what went wrong and what to do."""

    exit_code = 1


class UsageError(MemsearchError):
    """The user asked for something malformed (a bad date, an invalid raw FTS5 query)."""

    exit_code = 2


class ModelUnavailable(MemsearchError):
    """An embedding model was required (``--mode vector``) but none can be loaded."""


class NotFound(MemsearchError):
    """An id or path that does not exist in the index."""


class ConfigError(MemsearchError):
    """The config file cannot be read or holds a bad value."""
