"""Pseudo-relevance feedback: a second BM25 list, the query's terms and the distinctive words of the first search's
best hits, which hybrid search blends into its fused scores (``feedback_share``, :func:`~search_engine.fusion.blend`).

A question asked of a conversation is often answered in words it does not use: "what fantasy movies does Tim like"
is answered by "Harry Potter", "what does John do to share his knowledge" by "mentoring" and "seminars". The best hits
of the first search tell the words the memory uses for the subject, and the turns that share them are found by them.
The words are weighted as RM3 weights them (their share of each feedback hit's words), with the rarity they have among
the search's own candidates in place of the collection's: no statistics are read beyond the rows the search holds.

>>> best = "Tim adores fantasy films: Star Wars most of all"
>>> feedback_words([best], [best, "Tim watched films", "films tonight", "Star Wars"], frozenset({"fantasy", "tim"}), 3)
['adores', 'star', 'wars']
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from indexer.store import FilterSpec, Store
from search_engine.query import ParsedQuery, content_terms, terms

#: How many of the first search's best hits are read for words, and how many words are searched with the query's.
#: Chosen on half A of the LoCoMo dev questions (2-4 hits, 10-30 words; see the README) and checked on half B.
FEEDBACK_HITS = 3
FEEDBACK_WORDS = 20
#: Words shorter than this (and numbers) are never taken: "ok", "me", a CJK bigram, a year.
MIN_WORD_CHARS = 3


_PLAIN_WORD_RE = re.compile(r"[^\W_]+")


def _words(text: str) -> list[str]:
    return [t.text for t in content_terms(terms(text, limit=None, forms=False))]


def feedback_words(best: Sequence[str], pool: Iterable[str], asked: frozenset[str], n: int = FEEDBACK_WORDS) -> list[str]:
    """The ``n`` words of the ``best`` texts with the highest weight ``w(t) = Σ_d tf(t, d) / |d| · log((N + 1) /
    df(t))``, ``d`` over the best texts (``|d|`` its content words), ``N`` the texts of ``pool`` (the candidates,
    which should hold the best ones) and ``df(t)`` how many of them hold ``t`` (at least 1). Words of the query
    (``asked``), stopwords, numbers and words under :data:`MIN_WORD_CHARS` characters are left out; ties keep the
    order the words first appear in.

    >>> feedback_words(["the WAL mode and a busy timeout"], ["WAL mode", "WAL busy timeout", "WAL mode"],
    ...                frozenset({"wal"}), 2)
    ['busy', 'timeout']
    """
    counted = [(words, Counter(words)) for words in map(_words, best) if words]
    wanted = {word for _, counts in counted for word in counts
              if word not in asked and len(word) >= MIN_WORD_CHARS and not word.isdigit()}
    df: Counter[str] = Counter()
    size = 0
    for text in pool:  # a candidate's plain words (what the full tokenizer would give them, at a tenth of its cost)
        df.update(wanted.intersection(_PLAIN_WORD_RE.findall(text.lower())))
        size += 1
    weight: dict[str, float] = {}
    for words, counts in counted:
        for word, count in counts.items():
            if word in wanted:
                weight[word] = weight.get(word, 0.0) + count / len(words) * math.log((size + 1) / max(df[word], 1))
    return sorted(weight, key=lambda word: -weight[word])[:n]


def feedback_list(store: Store, query: ParsedQuery, filters: FilterSpec, limit: int, best: Sequence[str],
                  pool: Iterable[str]) -> dict[int, float]:
    """The second BM25 list: the ``limit`` best chunks holding any of the query's terms or the
    :func:`feedback_words` of the ``best`` texts (OR: the words are evidence, not conditions), by BM25 score; empty
    when the best texts add no word."""
    asked = frozenset(t.text for t in query.terms) | frozenset(a for t in query.terms for a in t.alts)
    words = feedback_words(best, pool, asked)
    if not words:
        return {}
    added = [t for word in words for t in terms(word)[:1]]
    return {s.id: s.score for s in store.lexical_top_k([*query.terms, *added], "OR", filters, limit)}
