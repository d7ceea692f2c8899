"""The forms of an English word that the index's Porter stemmer does not bring together, so that a query's word
also finds its other forms: "what did I buy" finds "I bought", "the broken build" finds "the build broke". The table
is :data:`search_engine.wordtable.TABLE`, generated from lemminflect's inflections (``scripts/gen_wordforms.py``).

>>> other_forms("buy"), other_forms("children"), other_forms("retry")
(('bought',), ('child',), ())
"""

from __future__ import annotations

import bisect
import functools

from search_engine.wordtable import TABLE


@functools.cache
def _lines() -> list[str]:
    return TABLE.splitlines()


@functools.lru_cache(maxsize=4096)
def other_forms(word: str) -> tuple[str, ...]:
    """The forms of ``word`` (lower case) under other stems than its own; () for most words. The table's lines are
    in order, so a word is found by bisection (a one-shot process such as the prompt hook looks up a few words:
    building a dict of the whole table would cost it ~7 ms)."""
    lines = _lines()
    i = bisect.bisect_left(lines, word + " ")
    return tuple(lines[i].split()[1:]) if i < len(lines) and lines[i].startswith(word + " ") else ()
