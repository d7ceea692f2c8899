"""What ``memsearch forget`` must keep hidden: ``<root>/.memsearch/forgotten.json``.

A note the user wrote is never edited behind their back, so forgetting one of its chunks leaves a tombstone: the
file (its path relative to the memory root, so moving or renaming the root keeps it; an extra source outside the
root by its absolute path), the xxh3-128 of its bytes when it was forgotten, and the keys of the hidden chunks (a
hash of the chunk's title and text, so neither a new modification time nor a rebuild brings it back). Every index run,
incremental or full, leaves those chunks out while the file is byte for byte the same; once the file changes the
tombstone lapses (the user edited it: what it now says is indexed) and the next ``memsearch index`` drops it.
Each hidden chunk's line range is kept beside its key: a newer privacy filter (``memsearch scrub``, a rebuild after
an upgrade) can mask more of the same unchanged file, which changes the chunk's text and so its key, but not where
it stands, so the chunk stays hidden.

Forgotten events are kept as hashes, so an import from a transcript can never bring them back: of their ids (an
imported event's is the transcript's own), of their tool calls' ids, and of each prompt's and reply's session, type
and the start of its text (the hooks' events have ids of their own, and the transcript holds the same turn under
another). A session summary forgotten as a whole is remembered by a hash of its session with the hashes of the
events it summed up: the session's next summary leaves them out. The file holds hashes only, never text, and is
written atomically, readable by its owner only.

Files written before tombstones were relative name notes by absolute path: those under the current root are read
as relative, and any other one is kept as it is (never dropped unseen): it still hides a note with the same bytes
at the same place under the root (the root moved before this version), and takes that note's relative key then.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import xxhash

from indexer.base.errors import MemsearchError
from indexer.base.paths import TOMBSTONES
from indexer.base.private import private_dirs


def chunk_key(title: str, text: str) -> str:
    """The key a tombstone hides a chunk by: its title and text, not its date (a note without a date in its front
    matter is dated by its modification time, which a rebuild may see change)."""
    return xxhash.xxh3_128_hexdigest(f"{title}\0{text}".encode("utf-8", "surrogatepass"))


def event_key(event_id: str) -> str:
    return xxhash.xxh3_64_hexdigest(event_id.encode("utf-8", "surrogatepass"))


def turn_key(session: str, kind: str, text_key: str) -> str:
    """The key a forgotten prompt or reply is remembered by, for a transcript that holds it under another id: its
    session, its type and the start of its text (``text_key``, as :func:`indexer.transcripts.text_key` folds it)."""
    return xxhash.xxh3_128_hexdigest(f"{session}\0{kind}\0{text_key}".encode("utf-8", "surrogatepass"))


def summary_key(session: str) -> str:
    return xxhash.xxh3_64_hexdigest(f"summary\0{session}".encode("utf-8", "surrogatepass"))


def note_key(source: str, root: Path) -> str:
    """The key a tombstone names a note by: its path relative to the memory root ``root``, or, outside it (an
    extra source), the index's own key, its absolute path.

    >>> note_key("/mem/daily/2026-01-02.md", Path("/mem")), note_key("/code/app/CLAUDE.md", Path("/mem"))
    ('daily/2026-01-02.md', '/code/app/CLAUDE.md')
    """
    prefix = str(root).rstrip("/") + "/"
    return source[len(prefix):] if source.startswith(prefix) else source


@dataclass
class Tombstones:
    """The tombstones of one memory root (``root``). Methods take a note by the index's key for it (its absolute
    path) and name it by :func:`note_key`."""

    notes: dict[str, dict] = field(default_factory=dict)  # note_key() -> {"file_hash": …, "chunks": [keys]}
    events: set[str] = field(default_factory=set)  # event_key() of forgotten events (and of their tool calls)
    turns: set[str] = field(default_factory=set)  # turn_key() of forgotten prompts and replies
    #: summary_key() of a session whose summary was forgotten -> event_key() of the events that summary summed up
    summaries: dict[str, list[str]] = field(default_factory=dict)
    root: Path | None = None  # the memory root (None: keys are taken as given)
    #: whether the notes differ from the file's (old absolute keys read as relative, or moved to a found note)
    changed: bool = False

    def key(self, source: str) -> str:
        return source if self.root is None else note_key(source, self.root)

    def hidden(self, file_key: str, file_hash: str | None) -> frozenset[str]:
        """The chunk keys hidden in ``file_key`` while its bytes hash to ``file_hash`` (none once it changed)."""
        entry = self._entry(file_key, file_hash)
        return frozenset(entry.get("chunks", ())) if entry else frozenset()

    def hidden_ranges(self, file_key: str, file_hash: str | None) -> frozenset[tuple[int, int]]:
        """The line ranges of the hidden chunks of ``file_key``, on the same terms as :meth:`hidden`: a chunk is
        hidden by its key, or by its line range in the unchanged file."""
        entry = self._entry(file_key, file_hash)
        return frozenset(tuple(r) for r in entry.get("ranges", ()) if len(r) == 2) if entry else frozenset()

    def _entry(self, file_key: str, file_hash: str | None) -> dict | None:
        if file_hash is None:
            return None
        name = self.key(file_key)
        entry = self.notes.get(name)
        if entry is None:
            entry = self.notes.get(self._moved(name, file_hash) or "")
        if entry is None or entry.get("file_hash") != file_hash:
            return None
        return entry

    def _moved(self, name: str, file_hash: str | None) -> str | None:
        """The old absolute key that names the note ``name`` (relative) at a root it has left: the same place under
        the root, the same bytes."""
        if name.startswith("/") or file_hash is None:
            return None
        return next((k for k, entry in self.notes.items() if k.startswith("/") and k.endswith("/" + name)
                     and entry.get("file_hash") == file_hash), None)

    def hide(self, file_key: str, file_hash: str, keys: list[str],
             ranges: Sequence[tuple[int | None, int | None]] = ()) -> int:
        name = self.key(file_key)
        entry = self.notes.get(name)
        if entry is None or entry.get("file_hash") != file_hash:
            entry = self.notes[name] = {"file_hash": file_hash, "chunks": [], "ranges": []}
        new = [k for k in keys if k not in entry["chunks"]]
        entry["chunks"].extend(new)
        known = entry.setdefault("ranges", [])
        known.extend([a, b] for a, b in ranges if a is not None and b is not None and [a, b] not in known)
        return len(new)

    def prune(self, current: Mapping[str, str | None], roots: Sequence[Path] = ()) -> int:
        """Drop the tombstones of files whose bytes changed or that are gone (``current``: the index's key of each
        file it knows -> content hash; a whole scan's). Returns how many lapsed.

        A tombstone is judged only where the index looks: under the memory root (relative keys) or under one of
        ``roots`` (the extra sources). An old absolute key of another place is kept, unless a note with its
        bytes at its place under the root now takes it over (:meth:`_moved`)."""
        names = {self.key(k): h for k, h in current.items()}
        old_names = {k.rsplit("/", 1)[-1] for k in self.notes if k.startswith("/")}
        for name, digest in names.items():
            if name in self.notes or name.rsplit("/", 1)[-1] not in old_names:
                continue
            old = self._moved(name, digest)
            if old is not None:
                self.notes[name] = self.notes.pop(old)
                self.changed = True
        outside = [str(r).rstrip("/") for r in roots]
        lapsed = [k for k, entry in self.notes.items() if names.get(k) != entry.get("file_hash")
                  and (not k.startswith("/") or self.root is None
                       or any(k == o or k.startswith(o + "/") for o in outside))]
        for k in lapsed:
            del self.notes[k]
        return len(lapsed)

    def forget_summary(self, session: str, event_ids: Sequence[str]) -> None:
        """The summary of ``session``, built from the events ``event_ids``, was forgotten: a later summary of the
        session (its next SessionEnd) leaves them out (:meth:`summed_up`)."""
        keys = self.summaries.setdefault(summary_key(session), [])
        keys.extend(k for k in dict.fromkeys(event_key(e) for e in event_ids) if k not in keys)

    def summed_up(self, session: str) -> frozenset[str]:
        """The event keys a forgotten summary of ``session`` summed up (none when none was forgotten)."""
        return frozenset(self.summaries.get(summary_key(session), ()))

    def stamp(self) -> str:
        """A digest of the notes' tombstones: what tells an index run that they changed since it last looked."""
        return xxhash.xxh3_64_hexdigest(orjson.dumps(self.notes, option=orjson.OPT_SORT_KEYS))

    @property
    def count(self) -> int:
        return sum(len(e.get("chunks", ())) for e in self.notes.values())


def path(state_dir: Path) -> Path:
    return state_dir / TOMBSTONES


def load(state_dir: Path, root: Path | None = None) -> Tombstones:
    """The tombstones of the memory root ``root`` (whose state folder is ``state_dir``), or none when the file is
    missing. An unreadable file is an error the caller reports: an index run that silently ignored it would bring
    forgotten text back. Old absolute keys under ``root`` are read as relative (see the module docstring); without
    ``root`` (a reader of the events only), keys are taken as they are."""
    p = path(state_dir)
    try:
        data = orjson.loads(p.read_bytes())
    except FileNotFoundError:
        return Tombstones(root=root)
    except (OSError, orjson.JSONDecodeError) as exc:
        raise _unreadable(p, str(exc)) from None
    why = _wrong_shape(data)
    if why is not None:
        raise _unreadable(p, why)
    stones = Tombstones(events={str(e) for e in data["events"]}, turns={str(t) for t in data.get("turns", ())},
                        summaries={str(k): [str(e) for e in v] for k, v in data.get("summaries", {}).items()
                                   if isinstance(v, list)}, root=root)
    entries = {str(k): v for k, v in data["notes"].items() if isinstance(v, dict)}
    stones.notes = {k: v for k, v in entries.items() if stones.key(k) == k}
    for k, v in entries.items():
        name = stones.key(k)
        if name != k and name not in stones.notes:  # both forms of one note (never written so): keep the old as is
            stones.notes[name], stones.changed = v, True
        elif name != k:
            stones.notes[k] = v
    return stones


def _wrong_shape(data: object) -> str | None:
    """Why ``data`` (a parsed ``forgotten.json``) is not what :func:`save` writes, or None. Valid JSON of another
    shape (``[]``, ``{}``: a file emptied or replaced by hand, a tool's mistake) holds no tombstone, and reading it
    as none would bring every forgotten note back: it is refused as a parse error is.

    >>> _wrong_shape({"version": 1, "notes": {}, "events": []}), _wrong_shape([]), _wrong_shape({})
    (None, 'not a JSON object', 'no "notes" object')
    """
    if not isinstance(data, dict):
        return "not a JSON object"
    if not isinstance(data.get("notes"), dict):
        return 'no "notes" object'
    if not isinstance(data.get("events"), list):
        return 'no "events" list'
    if not isinstance(data.get("turns", []), list):
        return '"turns" is not a list'
    if not isinstance(data.get("summaries", {}), dict):
        return '"summaries" is not an object'
    return None


def _unreadable(p: Path, why: str) -> MemsearchError:
    return MemsearchError(f"cannot read {p} ({why}); it keeps forgotten notes hidden: restore or fix it")


def save(state_dir: Path, stones: Tombstones) -> None:
    private_dirs(state_dir)
    p = path(state_dir)
    tmp = p.with_name(f".{TOMBSTONES}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(orjson.dumps({"version": 1, "notes": stones.notes, "events": sorted(stones.events),
                              "turns": sorted(stones.turns), "summaries": stones.summaries},
                             option=orjson.OPT_SORT_KEYS))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, p)
    stones.changed = False
