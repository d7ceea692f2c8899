"""Reading an append-only event log from where the last run stopped.

A log's state in the index is the bytes already indexed (``consumed``) and a hash of its first bytes
(``head_hash``): when the file is at least that long and starts the same, only what follows is read; a log that
was rewritten or truncated is read again from the start. A log is read in blocks of :data:`EVENT_BLOCK` bytes cut
at a line end, so memory stays flat whatever its size; a line longer than half a block is skipped and said.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

import xxhash

from indexer.sources import Parsed, parse_event_bytes
from indexer.store import SourceState

EVENT_BLOCK = 8 * 1024 * 1024
HEAD_BYTES = 4096


def head_hash(head: bytes, consumed: int) -> str:
    """The hash of the first ``min(consumed, HEAD_BYTES)`` bytes of a log whose first bytes are ``head``."""
    return xxhash.xxh3_64_hexdigest(head[: min(consumed, HEAD_BYTES)])


def resume_offset(head: bytes, size: int, known: SourceState | None, full: bool) -> int:
    """Where to go on reading a log of ``size`` bytes starting with ``head``: the offset the last run stopped at,
    when the log still starts as it did then and is not shorter; else 0.

    >>> s = SourceState("/e.jsonl", "events", 1, 10, consumed=6, head_hash=head_hash(b"abcdefgh", 6))
    >>> resume_offset(b"abcdefghij", 10, s, False), resume_offset(b"XXXXXXghij", 10, s, False)
    (6, 0)
    """
    if known is not None and not full and size >= known.consumed and known.consumed > 0:
        if head_hash(head, known.consumed) == known.head_hash:
            return known.consumed
    return 0


def read_blocks(f: BinaryIO, start: int, chunk_chars: int, chunk_overlap: int,
                skip: Callable[[str], None]) -> Iterator[tuple[int, Parsed]]:
    """The log open as ``f``, parsed block by block from ``start``: yields (offset after the block's last
    complete line, what the block parsed to). Stops at the first incomplete line (a hook still writing it);
    a line longer than :data:`EVENT_BLOCK` is passed over and ``skip`` says so."""
    f.seek(start)
    consumed = start
    while True:
        block = f.read(EVENT_BLOCK)
        if not block:
            return
        last_nl = block.rfind(b"\n")
        if last_nl >= 0 and len(block) == EVENT_BLOCK:
            f.seek(consumed + last_nl + 1)
            block = block[: last_nl + 1]
        parsed = parse_event_bytes(block, consumed, chunk_chars, chunk_overlap)
        consumed += parsed.consumed
        yield consumed, parsed
        if parsed.consumed < len(block):
            if len(block) >= EVENT_BLOCK and parsed.consumed == 0:
                skip(f"line at byte {consumed}: longer than {EVENT_BLOCK // 2**20} MiB, skipped")
                consumed = skip_line(f, consumed)
                continue
            return


def skip_line(f: BinaryIO, offset: int) -> int:
    """Seek past the line starting at ``offset``; returns the offset after it."""
    f.seek(offset)
    while True:
        block = f.read(EVENT_BLOCK)
        if not block:
            return f.tell()
        nl = block.find(b"\n")
        if nl >= 0:
            f.seek(offset + nl + 1)
            return offset + nl + 1
        offset += len(block)
