"""The entry point Claude Code runs for every hook: ``memsearch-hook <event>`` (or ``memsearch hook <event>``).

Rules it keeps whatever happens: it always exits 0; stdout holds nothing or exactly one JSON object; a traceback
never reaches stdout or stderr (errors go to ``<root>/.memsearch/logs/hooks.log``, without raw content); stdin is
read with a deadline, because hosts do not always close it. It imports nothing heavy: no Typer, no fastembed.
"""

from __future__ import annotations

import os
import select
import sys
import time

from hooks.log import Disabled, log

EVENTS = ("session-start", "prompt", "tool", "stop", "session-end", "summarize")
#: The events whose hooks Claude Code runs in the background (``"async": true`` in ``hooks/hooks.json`` and
#: ``memsearch install``): their output reaches Claude on the next turn, never the user, so they print nothing and
#: leave what the user must hear (a lost event) to the next prompt's hook.
ASYNC_EVENTS = ("tool", "stop")
MAX_STDIN = 8 * 1024 * 1024


#: ``MEMSEARCH_DISABLE`` values that switch the hooks off before anything is imported (``disable`` in the config
#: file does it once the settings are read).
_ON = ("1", "true", "yes", "on")


class PayloadTooLarge(Exception):
    """The event's JSON on stdin is larger than :data:`MAX_STDIN`: it is not read further, nor recorded."""


def read_stdin(deadline_s: float = 2.0) -> dict:
    """One JSON object from stdin, read incrementally until it parses, EOF, or the deadline; raises
    :class:`PayloadTooLarge` past :data:`MAX_STDIN` bytes."""
    import json

    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return {}
    buf = b""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and len(buf) < MAX_STDIN:
        try:
            ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        except (OSError, ValueError):
            break
        if not ready:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
        if not chunk.rstrip().endswith(b"}"):
            continue  # not the end of an object yet: parsing the whole buffer again each time is quadratic
        try:
            value = json.loads(buf)
            return value if isinstance(value, dict) else {}
        except ValueError:
            continue
    if len(buf) >= MAX_STDIN:
        raise PayloadTooLarge(len(buf))
    try:
        value = json.loads(buf.decode("utf-8", "replace")) if buf.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _with_notices(output: str | None) -> str | None:
    """The handler's output with what the user must hear (events that could not be recorded) as its
    ``systemMessage``, which Claude Code shows to the user."""
    handlers = sys.modules.get(f"{__package__}.handlers")
    notices = list(getattr(handlers, "NOTICES", None) or ())
    if handlers is None or not notices:
        return output
    handlers.NOTICES.clear()  # one hook run's: tests and `memsearch hook` run several in one process
    if not getattr(handlers, "ANNOUNCE", True):
        return output
    import json

    try:
        data = json.loads(output) if output else {}
    except ValueError:
        data = {}
    data["systemMessage"] = "\n".join(notices)
    return json.dumps(data, ensure_ascii=False)


def _print(name: str, output: str) -> None:
    """Write the JSON answer as UTF-8 bytes, whatever the encoding Python chose for stdout (``PYTHONIOENCODING``,
    a C locale): Claude Code reads UTF-8. A failure is logged, never raised."""
    try:
        data = output.encode("utf-8", "replace")
        out = getattr(sys.stdout, "buffer", None)
        if out is None:
            sys.stdout.write(output)
            sys.stdout.flush()
        else:
            sys.stdout.flush()
            out.write(data)
            out.flush()
    except Exception as exc:  # a closed or broken stdout: the hook must still exit 0
        log(f"{name}: cannot write the hook output: {type(exc).__name__}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    name = argv[0] if argv else ""
    started = time.perf_counter()
    output = None
    try:
        if os.environ.get("MEMSEARCH_DISABLE", "").strip().lower() in _ON or name not in EVENTS:
            return 0
        from hooks import handlers

        handlers.ANNOUNCE = name not in ASYNC_EVENTS
        if name == "summarize":
            handlers.summarize(argv[1:])
        else:
            try:
                payload = read_stdin()
            except PayloadTooLarge:
                handlers.too_large(name, MAX_STDIN)
                return 0
            output = getattr(handlers, name.replace("-", "_"))(payload)
    except BaseException as exc:  # a hook must never fail the user's turn, whatever went wrong
        if isinstance(exc, (KeyboardInterrupt, Disabled)):
            return 0
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        at = f" at {where[0].filename.rsplit('/', 1)[-1]}:{where[0].lineno}" if where else ""
        log(f"{name}: error {type(exc).__name__}{at}")
        output = None
    finally:
        elapsed = (time.perf_counter() - started) * 1000
        output = _with_notices(output)
        if output:
            _print(name, output)
        settings = getattr(sys.modules.get(f"{__package__}.handlers"), "SETTINGS", None)
        if name in EVENTS and settings is not None and settings.log_hook_times:
            log(f"{name}: {elapsed:.1f} ms")
    return 0


def run() -> None:
    """Console script: always exit 0, and skip the interpreter's clean-up. By then the event is recorded, the
    index closed and the output written; tearing down the modules a prompt imports would cost ~7 ms of CPU more
    (measured in a new process: a tenth of the cold hook), for nothing the next process needs."""
    main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more can be said there
            pass
    os._exit(0)


if __name__ == "__main__":
    run()
