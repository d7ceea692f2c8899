"""``memsearch cron install|uninstall|status``: one weekly line in the user's crontab that runs the maintenance.

The line runs ``scripts/weekly-reindex.sh`` (which takes a lock, logs to ``<root>/.memsearch/logs/`` and fails
with one clear line) with this installation's ``memsearch`` and this memory root, by absolute paths, because
cron's environment has neither. It ends with a marker comment, and lines are recognised by that marker and their
memory root, so installing twice leaves one line, each memory root has its own, and the user's other lines are
written back exactly as they were. Where there is no ``crontab`` command the line is returned for the user to
add to whatever scheduler they have.

>>> from indexer.base.settings import resolve_settings
>>> cron_line(resolve_settings("/tmp/mem"), "sun", "03:00", script=Path("/x/weekly.sh"), binary="/v/memsearch")
'0 3 * * 0 MEMSEARCH_HOME=/tmp/mem MEMSEARCH_BIN=/v/memsearch /bin/sh /x/weekly.sh # memsearch weekly maintenance'
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import cast

from indexer.base.errors import MemsearchError, UsageError
from indexer.base.paths import WEEKLY_LOG
from indexer.base.reports import CronReport
from indexer.base.settings import Settings

MARKER = "# memsearch weekly maintenance"
DAYS = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
_TIME_RE = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
_AUTO = object()


def script_path() -> Path | None:
    """``scripts/weekly-reindex.sh`` of this checkout, or None (an installed wheel does not ship it)."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "weekly-reindex.sh"
    return path if path.is_file() else None


def memsearch_binary() -> str:
    beside = Path(sys.executable).with_name("memsearch")
    found = str(beside) if beside.exists() else shutil.which("memsearch")
    if not found:
        raise MemsearchError("cannot find the memsearch command to schedule; install memsearch first")
    return found


def _schedule(day: str, at: str) -> str:
    key = day.strip().lower()[:3]
    if key.isdigit() and 0 <= int(key) <= 6:
        weekday = int(key)
    elif key in DAYS:
        weekday = DAYS[key]
    else:
        raise UsageError(f"invalid --day {day!r}: use sun, mon, … sat (or 0-6, 0 is Sunday)")
    m = _TIME_RE.match(at.strip())
    if not m:
        raise UsageError(f"invalid --time {at!r}: use HH:MM, e.g. 03:00")
    return f"{int(m.group(2))} {int(m.group(1))} * * {weekday}"


def _q(value: str | Path) -> str:
    """Shell-quoted, with cron's ``%`` (a newline in crontab commands) escaped."""
    return shlex.quote(str(value)).replace("%", "\\%")


def cron_line(settings: Settings, day: str = "sun", at: str = "03:00", *, script: Path | None | object = _AUTO,
              binary: str | None = None) -> str:
    """The crontab line for this memory root (default: Sundays at 03:00)."""
    home, binary = _q(settings.home), _q(binary or memsearch_binary())
    script = script_path() if script is _AUTO else cast("Path | None", script)
    if script is not None:
        command = f"MEMSEARCH_HOME={home} MEMSEARCH_BIN={binary} /bin/sh {_q(script)}"
    else:
        log = _q(settings.log_dir / WEEKLY_LOG)
        command = f"MEMSEARCH_HOME={home} {binary} maintain >> {log} 2>&1"
    return f"{_schedule(day, at)} {command} {MARKER}"


def _ours(line: str, settings: Settings) -> bool:
    return MARKER in line and not line.lstrip().startswith("#") and f"MEMSEARCH_HOME={_q(settings.home)} " in line


def _crontab(crontab) -> str | None:
    return shutil.which("crontab") if crontab is _AUTO else crontab


def read_crontab(crontab: str) -> list[str]:
    """The current crontab's lines (none when the user has no crontab yet)."""
    proc = subprocess.run([crontab, "-l"], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        if "no crontab" in proc.stderr.lower():
            return []
        raise MemsearchError(f"`crontab -l` failed: {proc.stderr.strip() or f'exit {proc.returncode}'}")
    return proc.stdout.splitlines()


def write_crontab(crontab: str, lines: list[str]) -> None:
    with tempfile.NamedTemporaryFile("w", prefix="memsearch-cron-", suffix=".txt", delete=False) as f:
        f.write("".join(line + "\n" for line in lines))
        path = f.name
    try:
        proc = subprocess.run([crontab, path], capture_output=True, text=True, timeout=30)
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise MemsearchError(f"`crontab` refused the new table: {proc.stderr.strip() or f'exit {proc.returncode}'}")


NO_CRONTAB = "there is no crontab command here (install cron, or use your own scheduler)"


def _no_crontab(line: str, action: str) -> CronReport:
    notes = {"install": f"{NO_CRONTAB}: nothing installed; the line to schedule is",
             "uninstall": f"{NO_CRONTAB}: no crontab, so no memsearch line to remove; a line added to another "
                          "scheduler is removed there, it reads",
             "status": f"{NO_CRONTAB}: not installed; the line to schedule is"}
    return CronReport(line, False, False, None, note=notes[action])


def install(settings: Settings, day: str = "sun", at: str = "03:00", *, crontab=_AUTO) -> CronReport:
    """Add (or update) this memory root's weekly line; other lines are kept exactly. Idempotent."""
    line = cron_line(settings, day, at)
    crontab = _crontab(crontab)
    if crontab is None:
        return _no_crontab(line, "install")
    current = read_crontab(crontab)
    others = [x for x in current if not _ours(x, settings)]
    if current == [*others, line]:
        return CronReport(line, True, False, crontab)
    write_crontab(crontab, [*others, line])
    return CronReport(line, True, True, crontab)


def uninstall(settings: Settings, *, crontab=_AUTO) -> CronReport:
    """Remove this memory root's weekly line, and nothing else."""
    crontab = _crontab(crontab)
    if crontab is None:
        return _no_crontab(cron_line(settings), "uninstall")
    current = read_crontab(crontab)
    ours = [x for x in current if _ours(x, settings)]
    if ours:
        write_crontab(crontab, [x for x in current if not _ours(x, settings)])
    return CronReport(ours[0] if ours else cron_line(settings), False, bool(ours), crontab)


def status(settings: Settings, *, crontab=_AUTO) -> CronReport:
    """Whether this memory root's weekly line is installed (and the line, or the one install would add)."""
    crontab = _crontab(crontab)
    if crontab is None:
        return _no_crontab(cron_line(settings), "status")
    ours = [x for x in read_crontab(crontab) if _ours(x, settings)]
    return CronReport(ours[0] if ours else cron_line(settings), bool(ours), False, crontab)

