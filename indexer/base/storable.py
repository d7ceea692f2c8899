"""Text every store can hold: without NUL, and without lone surrogates.

PostgreSQL refuses a NUL (``\\x00``) in any text value (``invalid byte sequence for encoding "UTF8": 0x00``), and
a lone surrogate (``\\ud800``, possible in a JSON ``\\u`` escape) is no character at all: it cannot be encoded as
UTF-8. One such character in a pasted prompt once stopped every later team sync. :func:`storable` is applied where
text enters memsearch (the privacy filter, :func:`indexer.privacy.redact`, which every captured and indexed text
goes through; the event log's other fields) and again where the team store writes, for text an older version
stored as it came. Standard library only: the hooks call it on every event.

>>> storable("paste: abc\\x00def"), storable("a\\ud800b"), storable("plain")
('paste: abcdef', 'a\\ufffdb', 'plain')
"""

from __future__ import annotations

import re

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _replacement(m: re.Match[str]) -> str:
    return "" if m.group() == "\x00" else "\ufffd"


def storable(text: str) -> str:
    """``text`` with every NUL removed (it marks no word boundary: UTF-16 text pasted as bytes reads as its words)
    and every lone surrogate replaced by U+FFFD; the same object when it holds neither. An ASCII text is checked
    for NUL alone (a surrogate is never ASCII), the rest with one regular expression."""
    if "\x00" not in text and (text.isascii() or not _UNSTORABLE.search(text)):
        return text
    return _UNSTORABLE.sub(_replacement, text)
