"""Domain errors. The CLI turns each into one ``Error: …`` line on stderr and its exit code."""

import errno


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


def one_line(exc: BaseException) -> str:
    """The first line of an error's message, which names its cause (a driver's error, say: libpq never echoes a
    password); the exception's class name when the message is empty.

    >>> one_line(ValueError("bad value\\ndetails below")), one_line(KeyError())
    ('bad value', 'KeyError')
    """
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def shown_id(ident: str) -> str:
    """An id as an error or a page shows it back: a pasted blob is cut at 40 characters.

    >>> shown_id("deadbeef0000"), len(shown_id("a" * 100_000))
    ('deadbeef0000', 41)
    """
    return ident if len(ident) <= 40 else ident[:40] + "…"


def unknown_id(ident: str, also: str | None = None) -> NotFound:
    """The one wording of "no such memory" for ``show``, ``timeline`` and ``forget`` (an id over 40 characters is
    cut: a pasted blob is not echoed back); ``also``: what else the user should know, on the same line.

    >>> str(unknown_id("deadbeef0000"))
    'no memory with id deadbeef0000: ids change when their source changes; find it again with `memsearch search` or `memsearch recent`'
    """
    return NotFound(f"no memory with id {shown_id(ident)}: ids change when their source changes; find it again with "
                    "`memsearch search` or `memsearch recent`" + (f"; {also}" if also else ""))


def forgotten_id(ident: str, day: str) -> NotFound:
    """What ``show``, ``timeline``, ``get`` and ``forget`` say of an id ``memsearch forget`` took (on ``day``), in
    place of :func:`unknown_id`'s advice to find it again: it will not be found again.

    >>> str(forgotten_id("deadbeef0000", "2026-11-25"))
    'memory deadbeef0000 was forgotten on 2026-11-25 (`memsearch forget`): it is gone for good'
    """
    return NotFound(f"memory {shown_id(ident)} was forgotten on {day} (`memsearch forget`): it is gone for good")


#: The fewest characters of an id that select a memory by prefix (``show 3c67``).
MIN_PREFIX = 4
#: :func:`id_problem` of a hexadecimal id shorter than that.
SHORT_ID = f"an id prefix needs at least {MIN_PREFIX} characters"


def id_problem(ident: str) -> str | None:
    """Why ``ident`` cannot name a chunk (a whole id or a prefix of one: 4 to 32 hexadecimal digits, any case), in
    the words of an error after ``invalid id '…': ``; None when it can.

    >>> id_problem("3c67c1338155"), id_problem("3c6"), id_problem("../etc/passwd")
    (None, 'an id prefix needs at least 4 characters', 'ids are hexadecimal, as printed by `memsearch search`')
    """
    ident = ident.strip().lower()
    if not ident or not all(c in "0123456789abcdef" for c in ident) or len(ident) > 32:
        return "ids are hexadecimal, as printed by `memsearch search`"
    if len(ident) < MIN_PREFIX:
        return SHORT_ID
    return None


class ConfigError(MemsearchError):
    """The config file cannot be read or holds a bad value."""


class IndexCorrupt(MemsearchError):
    """The index file is damaged. It is derived data: ``memsearch index`` rebuilds it from the sources."""

    def __init__(self, message: str, cause: str = "") -> None:
        super().__init__(message)
        self.cause = cause or message


def os_error_text(exc: OSError) -> str:
    """One line for a failed file operation: what, where, and what to do.

    >>> os_error_text(OSError(errno.EROFS, "Read-only file system", "/m/.memsearch/index.lock"))
    'cannot write /m/.memsearch/index.lock: Read-only file system; memsearch needs to write under its memory root'
    """
    where = f" {exc.filename}" if exc.filename else ""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"cannot write{where}: {reason}; free some space and try again"
    if exc.errno == errno.EROFS:
        return f"cannot write{where}: {reason}; memsearch needs to write under its memory root"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"cannot use{where}: {reason}; memsearch needs to read and write under its memory root"
    if exc.errno == errno.ENOTDIR:
        return f"cannot use{where}: {reason}; a part of that path is a file, not a folder (check --home)"
    return f"cannot use{where}: {reason}"
