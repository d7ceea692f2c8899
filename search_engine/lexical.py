"""The lexical list: the store's ranking of the chunks holding the query's terms (BM25 on the local index: FTS5's
``bm25()`` over title, body and context), with the filters inside the same query. A query in Chinese, Japanese or
Korean is then re-ranked by how much of its own wording each candidate holds (:func:`overlap_bonus`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

from indexer.base.cjk import cjk_runs, query_bigrams
from indexer.store import FilterSpec, HitRow, Store
from search_engine.query import ParsedQuery, Term

#: BM25 points a candidate gains when it holds every character bigram of the query's CJK text (a share of them:
#: that share). The terms BM25 ranks by leave out particles and endings (の, は, される), which join the words the
#: question asks about; the answering passage tends to hold that wording as written ("梅雨の期間は"). Chosen on one
#: half of JSQuAD dev and confirmed on the other (recall@5, half A / half B): 0 -> .962/.964, 4 -> .962/.966,
#: 8 -> .966/.968, 10 -> .968/.968, 12 -> .968/.966; KorQuAD .995 -> .998, cmrc2018 .998 -> .997, DRCD .987 the same.
#: On the md5 halves (``make eval --half``) at 10: JSQuAD .964 -> .977 / .962 -> .960, KorQuAD .998 / .992 -> .998.
#: Measured and not kept: character trigrams instead of bigrams (.966/.970, DRCD .986), the bigrams weighted by
#: their rarity among the candidates (.966/.964), a multiplicative bonus (.964/.966), the longest shared string.
#: The share is now the best one sentence holds (a question is asked on one sentence of its paragraph; several
#: paragraphs of an article hold its words apart): recall@5 / MRR@10 on the md5 halves, A then B, whole paragraph
#: -> best sentence: JSQuAD .977/.948 -> .977/.949 and .960/.919 -> .966/.923, KorQuAD .998/.976 -> .998/.977 and
#: .998/.973 -> 1.0/.974, cmrc2018 and DRCD the same or higher; half of each (0.5 x paragraph + 0.5 x sentence) was
#: between the two. Weights 6-15 with it moved recall@5 by at most .002 on either half: the weight stays 10.
CJK_OVERLAP_WEIGHT = 10.0
#: Where a sentence ends: after a CJK full stop, exclamation or question mark, at a Latin full stop followed by a
#: space (Korean), or at a line break.
SENTENCE_END = r"(?<=[。．！？!?])|(?<=\.)\s+|\n+"


class LexicalResult(NamedTuple):
    ids: list[int]
    expression: str  # the query(s) the store actually ran, for --explain and --json
    scores: Mapping[int, float] = MappingProxyType({})  # BM25 (plus the CJK overlap bonus), higher is better
    rows: Mapping[int, HitRow] = MappingProxyType({})  # the candidates' rows when the re-ranking read them


def cjk_bigrams(text: str) -> frozenset[str]:
    """Every 2-character string inside the CJK runs of ``text``, particles and endings included.

    >>> sorted(cjk_bigrams("梅雨の期間は? ok"))
    ['の期', '期間', '梅雨', '間は', '雨の']
    """
    return frozenset(run[i : i + 2] for run in cjk_runs(text) for i in range(len(run) - 1))


def overlap_bonus(grams: frozenset[str], text: str, weight: float = CJK_OVERLAP_WEIGHT) -> float:
    """``weight × max over the sentences s of text of |{g ∈ grams : g occurs in s}| / |grams|``: the largest share of
    the query's bigrams that one sentence holds (:data:`SENTENCE_END`).

    >>> overlap_bonus(frozenset({"梅雨", "期間"}), "梅雨の時期", weight=10.0)
    5.0
    >>> overlap_bonus(frozenset({"梅雨", "期間"}), "梅雨が来た。その期間は長い。", weight=10.0)
    5.0
    >>> overlap_bonus(frozenset({"梅雨", "期間"}), "暑い。梅雨の期間は長い。", weight=10.0)
    10.0
    """
    present = [g for g in grams if g in text]
    if len(present) < 2:
        return weight * len(present) / len(grams) if grams else 0.0
    best = max(sum(1 for g in present if g in sentence) for sentence in re.split(SENTENCE_END, text))
    return weight * best / len(grams)


def rerank_by_overlap(scores: Mapping[int, float], texts: Mapping[int, str], grams: frozenset[str],
                      weight: float = CJK_OVERLAP_WEIGHT) -> list[tuple[int, float]]:
    """Candidates by ``score + overlap_bonus``, best first (ties keep the given order).

    >>> rerank_by_overlap({1: 5.0, 2: 4.0}, {1: "東京", 2: "京都の大学"}, frozenset({"京都", "大学"}), weight=2.0)
    [(2, 6.0), (1, 5.0)]
    """
    rescored = [(cid, s + overlap_bonus(grams, texts.get(cid, ""), weight)) for cid, s in scores.items()]
    return sorted(rescored, key=lambda item: -item[1])


def loosened(terms: Sequence[Term]) -> list[Term]:
    """The terms with each CJK phrase of several bigrams split into its bigrams (each its own term, without
    repeats); [] when there is none to split. What a query falls back on when it matched nothing at all.

    >>> [t.text for t in loosened([Term("ラオス", cjk=True), Term("laos")])]
    ['ラオ', 'オス', 'laos']
    """
    if not any(t.cjk and len(t.text) > 2 for t in terms):
        return []
    out: list[Term] = []
    for t in terms:
        pieces = [Term(g, cjk=True) for g in query_bigrams(t.text)] if t.cjk and len(t.text) > 2 else [t]
        out.extend(p for p in pieces if p not in out)
    return out


def lexical_search(store: Store, query: ParsedQuery, filters: FilterSpec, limit: int, *,
                   raw: bool = False) -> LexicalResult:
    """AND of the query's content terms first; when that finds fewer than ``limit``, the OR of them follows
    (AND matches keep their places at the top). ``raw`` passes the query text to the store untouched, in its own
    syntax (FTS5 on the local index). A CJK query's list is then re-ranked by :func:`rerank_by_overlap`."""
    if raw:
        ranked = store.lexical_native(query.text, filters, limit)
        return LexicalResult([s.id for s in ranked], query.text, {s.id: s.score for s in ranked})
    if not query.terms:
        return LexicalResult([], "")
    ranked = store.lexical_top_k(query.terms, "AND", filters, limit)
    expression = store.lexical_expression(query.terms, "AND")
    if len(query.terms) > 1 and len(ranked) < limit:
        relaxed = store.lexical_expression(query.terms, "OR")
        seen = {s.id for s in ranked}
        ranked += [s for s in store.lexical_top_k(query.terms, "OR", filters, limit) if s.id not in seen][
            : limit - len(ranked)]
        expression = f"{expression} || {relaxed}"
    loose = [] if ranked else loosened(query.terms)
    if loose:  # no text holds any CJK word as written ("イギリスフランス" for "イギリス・フランス"): its pieces
        ranked = store.lexical_top_k(loose, "OR", filters, limit)
        expression = f"{expression} || {store.lexical_expression(loose, 'OR')}"
    grams = cjk_bigrams(query.text)
    if not grams or not ranked:
        return LexicalResult([s.id for s in ranked], expression, {s.id: s.score for s in ranked})
    rows = store.fetch_hits([s.id for s in ranked])
    rescored = rerank_by_overlap({s.id: s.score for s in ranked if s.id in rows},
                                 {cid: row.text for cid, row in rows.items()}, grams)
    return LexicalResult([cid for cid, _ in rescored], expression, dict(rescored), rows)

