"""Every file and folder memsearch keeps for itself, named once.

The memory root (``MEMSEARCH_HOME``) holds the user's sources and, in :data:`STATE_DIR`, what memsearch derives
and coordinates with: the index, locks, the warm server's socket and pid, queues and markers, and the logs (in
:data:`LOG_DIR`). A module that opens one of these files takes its name from here, so a reader (or ``doctor``,
``forget``, a backup script) finds every state file in one list. Names are relative: join them to
``settings.state_dir``, ``settings.log_dir`` or ``settings.home``.

>>> from pathlib import Path
>>> Path("/mem") / STATE_DIR / SERVE_SOCK
PosixPath('/mem/.memsearch/serve.sock')
"""

from __future__ import annotations

import os
from pathlib import Path

# -- in the memory root ------------------------------------------------------------------------------------------
#: Derived state, locks and logs (``settings.state_dir``).
STATE_DIR = ".memsearch"
#: The hooks' event logs, one ``YYYY-MM-DD.jsonl`` a day: a source, written by memsearch, owned by the user.
EVENTS_DIR = "events"

# -- in the state folder -----------------------------------------------------------------------------------------
#: The index (``db_path`` by default).
INDEX_DB = "index.db"
#: The logs folder (``settings.log_dir``).
LOG_DIR = "logs"
#: Held by whoever writes the index: ``index``, a hook's ingest, the server's idle scan, maintenance's swap.
WRITER_LOCK = "index.lock"
#: Held by ``maintain``, ``scrub`` and ``forget`` for their whole run: one maintenance at a time.
MAINTENANCE_LOCK = "maintain.lock"
#: A rebuild builds ``rebuild-<pid>.db`` beside the index, then swaps it in; leftovers are removed.
BUILD_PREFIX = "rebuild-"
#: The warm server: its Unix socket, the lock it holds for its whole life, and its pid.
SERVE_SOCK = "serve.sock"
SERVE_LOCK = "serve.lock"
SERVE_PID = "serve.pid"
#: Claimed by the hook that starts the server (or the summary worker), so ten hooks at once start one.
SERVE_STARTING = "serve.starting"
SUMMARIZE_STARTING = "summarize.starting"
#: Session ids waiting for their summary (one a line), the lock of the one writer draining it, and the glob of
#: a queue taken by that writer (``summary-queue.<pid>.work``).
SUMMARY_QUEUE = "summary-queue"
SUMMARY_LOCK = "summary.lock"
SUMMARY_QUEUE_WORK = "summary-queue.*.work"
#: The team database (``db_url``) that could not be reached lately, when, and why (JSON): searches read the local
#: index at once until the retry period is over, instead of each waiting out the connect timeout.
TEAM_UNREACHABLE = "team-unreachable.json"
#: Chunk ids ``forget`` removed locally but could not remove from the team database (JSON list): the next sync
#: removes them there first. Also kept per user (:data:`TEAM_FORGET_DIR`) for the user's other memory roots.
TEAM_FORGET = "team-forget.json"
#: The last sync whose vector step ran to its end (JSON): the team database (by ``database_id``), the model, the local
#: vectors then, and when; a sync that changes nothing skips looking for missing vectors while they still match.
TEAM_VECTORS = "team-vectors.json"
#: When this memory root last synced to the team database to its end (JSON: the database by ``database_id``, the
#: time): what ``status`` and ``doctor`` say, also when the database cannot be reached.
TEAM_SYNCED = "team-synced.json"
#: Events lost to a full disk or a read-only root (a count reserved in advance).
LOST_EVENTS = "lost-events"
#: Forgotten notes' tombstones (hashes and line ranges only).
TOMBSTONES = "forgotten.json"
#: The privacy filter version the stored text was last scrubbed with.
PRIVACY_STATE = "privacy.json"
#: Transcript imports done (per transcript: size and mtime).
IMPORTS = "imports.json"
#: Claude Code settings files replaced by ``install``/``uninstall`` (kept out of the project's repository).
BACKUPS = "backups"

# -- in the logs folder ------------------------------------------------------------------------------------------
HOOKS_LOG = "hooks.log"
SERVE_LOG = "serve.log"
FORGET_LOG = "forget.log"
UI_LOG = "ui.log"
WEEKLY_LOG = "weekly-reindex.log"

# -- the user's, beside every memory root (:func:`user_state_dir`) ----------------------------------------------
#: Chunk ids ``forget`` could not remove from a team database, one JSON list per database and role
#: (``team-forget/<database_id>.json``): what :data:`TEAM_FORGET` holds for one memory root, seen by every root of
#: the user on this machine that uses that database, so none of them shows the team copy meanwhile.
TEAM_FORGET_DIR = "team-forget"


def user_state_dir() -> Path:
    """The user's memsearch state on this machine, shared by all their memory roots: ``$XDG_STATE_HOME/memsearch``
    (``~/.local/state/memsearch`` when unset or not absolute, as the XDG spec says). State, not cache: what is kept
    there must not be cleared with a cache.

    >>> user_state_dir().name
    'memsearch'
    """
    base = os.environ.get("XDG_STATE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path(os.path.expanduser("~/.local/state"))) / "memsearch"


# -- beside the memory root ------------------------------------------------------------------------------------
#: The user's config file in the memory root, and a project's tuning file in the project folder.
CONFIG_NAME = "memsearch.toml"
PROJECT_CONFIG_NAME = ".memsearch.toml"
