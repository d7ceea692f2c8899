"""Files and folders memsearch writes under the memory root are its user's alone: files 0600, folders 0700.

They hold what the user typed and what their tools printed (event logs, archives, session summaries, the import
state, logs), so their mode is set when they are created rather than left to the umask (022 on most systems, which
makes them world-readable). Standard library only: the hooks write through this module on every event.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dirs(folder: Path) -> Path:
    """Create ``folder`` and its missing parents with mode 0700 (a folder that exists is left as it is: it may be
    the user's). Returns ``folder``.

    >>> import tempfile; root = Path(tempfile.mkdtemp())
    >>> oct(private_dirs(root / "a" / "b").stat().st_mode & 0o777), oct((root / "a").stat().st_mode & 0o777)
    ('0o700', '0o700')
    """
    try:
        os.mkdir(folder, DIR_MODE)
    except FileExistsError:
        pass
    except FileNotFoundError:
        private_dirs(folder.parent)
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            pass
    return folder


def write_private(path: Path, data: bytes, *, durable: bool = False) -> Path:
    """Replace ``path`` atomically with ``data`` in a new 0600 file (``durable``: fsync before the rename)."""
    private_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # a leftover temporary file of a killed run keeps its old mode otherwise
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)
    return path


def append_line(path: Path, line: str) -> None:
    """Append one line to a 0600 log file (narrowed if an older version created it wider)."""
    private_dirs(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, FILE_MODE)
        os.write(fd, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))
    finally:
        os.close(fd)


def open_private_log(path: Path):
    """A 0600 log file opened for appending in binary mode (a child process's stderr)."""
    private_dirs(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    if os.fstat(fd).st_mode & 0o077:
        os.fchmod(fd, FILE_MODE)
    return os.fdopen(fd, "ab")
