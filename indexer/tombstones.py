"""What ``memsearch forget`` must keep hidden: ``<root>/.memsearch/forgotten.json``.

A note the user wrote is never edited behind their back, so forgetting one of its chunks leaves a tombstone: the
file (its index key), the xxh3-128 of its bytes when it was forgotten, and the keys of the hidden chunks (a hash of
the chunk's title and text, so neither a new modification time nor a rebuild brings it back). Every index run,
incremental or full, leaves those chunks out while the file is byte for byte the same; once the file changes the
tombstone lapses (the user edited it: what it now says is indexed) and the next ``memsearch index`` drops it.
Each hidden chunk's line range is kept beside its key: a newer privacy filter (``memsearch scrub``, a rebuild after
an upgrade) can mask more of the same unchanged file, which changes the chunk's text and so its key, but not where
it stands, so the chunk stays hidden.

Forgotten events are kept as hashes of their ids, so an import from a transcript can never bring them back.
The file holds hashes only, never text, and is written atomically, readable by its owner only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import xxhash

from indexer.base.paths import TOMBSTONES
from indexer.base.private import private_dirs


def chunk_key(title: str, text: str) -> str:
    """The key a tombstone hides a chunk by: its title and text, not its date (a note without a date in its front
    matter is dated by its modification time, which a rebuild may see change)."""
    return xxhash.xxh3_128_hexdigest(f"{title}\0{text}".encode("utf-8", "surrogatepass"))


def event_key(event_id: str) -> str:
    return xxhash.xxh3_64_hexdigest(event_id.encode("utf-8", "surrogatepass"))


@dataclass
class Tombstones:
    notes: dict[str, dict] = field(default_factory=dict)  # file key -> {"file_hash": …, "chunks": [keys]}
    events: set[str] = field(default_factory=set)  # event_key() of forgotten events

    def hidden(self, file_key: str, file_hash: str | None) -> frozenset[str]:
        """The chunk keys hidden in ``file_key`` while its bytes hash to ``file_hash`` (none once it changed)."""
        entry = self._entry(file_key, file_hash)
        return frozenset(entry.get("chunks", ())) if entry else frozenset()

    def hidden_ranges(self, file_key: str, file_hash: str | None) -> frozenset[tuple[int, int]]:
        """The line ranges of the hidden chunks of ``file_key``, on the same terms as :meth:`hidden`."""
        entry = self._entry(file_key, file_hash)
        return frozenset(tuple(r) for r in entry.get("ranges", ()) if len(r) == 2) if entry else frozenset()

    def is_hidden(self, file_key: str, file_hash: str | None, key: str, lines: tuple[int | None, int | None]) -> bool:
        """A chunk is hidden by its key, or by its line range in the unchanged file."""
        return key in self.hidden(file_key, file_hash) or lines in self.hidden_ranges(file_key, file_hash)

    def _entry(self, file_key: str, file_hash: str | None) -> dict | None:
        entry = self.notes.get(file_key)
        if entry is None or file_hash is None or entry.get("file_hash") != file_hash:
            return None
        return entry

    def hide(self, file_key: str, file_hash: str, keys: list[str],
             ranges: Sequence[tuple[int | None, int | None]] = ()) -> int:
        entry = self.notes.get(file_key)
        if entry is None or entry.get("file_hash") != file_hash:
            entry = self.notes[file_key] = {"file_hash": file_hash, "chunks": [], "ranges": []}
        new = [k for k in keys if k not in entry["chunks"]]
        entry["chunks"].extend(new)
        known = entry.setdefault("ranges", [])
        known.extend([a, b] for a, b in ranges if a is not None and b is not None and [a, b] not in known)
        return len(new)

    def prune(self, current: Mapping[str, str | None]) -> int:
        """Drop the tombstones of files whose bytes changed or that are gone (``current``: file key -> content
        hash, for files the index knows); returns how many lapsed."""
        lapsed = [k for k, entry in self.notes.items() if current.get(k) != entry.get("file_hash")]
        for k in lapsed:
            del self.notes[k]
        return len(lapsed)

    @property
    def count(self) -> int:
        return sum(len(e.get("chunks", ())) for e in self.notes.values())


def path(state_dir: Path) -> Path:
    return state_dir / TOMBSTONES


def load(state_dir: Path) -> Tombstones:
    """The tombstones, or none when the file is missing. An unreadable file is an error the caller reports: an
    index run that silently ignored it would bring forgotten text back."""
    p = path(state_dir)
    try:
        data = orjson.loads(p.read_bytes())
    except FileNotFoundError:
        return Tombstones()
    except (OSError, orjson.JSONDecodeError) as exc:
        from indexer.base.errors import MemsearchError

        raise MemsearchError(f"cannot read {p} ({exc}); it keeps forgotten notes hidden: restore or fix it") from None
    notes = data.get("notes") if isinstance(data, dict) else None
    events = data.get("events") if isinstance(data, dict) else None
    return Tombstones(
        {str(k): v for k, v in (notes or {}).items() if isinstance(v, dict)},
        {str(e) for e in events or ()},
    )


def save(state_dir: Path, stones: Tombstones) -> None:
    private_dirs(state_dir)
    p = path(state_dir)
    tmp = p.with_name(f".{TOMBSTONES}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(orjson.dumps({"version": 1, "notes": stones.notes, "events": sorted(stones.events)},
                             option=orjson.OPT_SORT_KEYS))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, p)
