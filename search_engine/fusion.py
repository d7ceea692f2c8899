"""Ranking math, pure: no SQL, no models. The formulas are in the docstrings and the tests use hand-computed
numbers."""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
_SPACE_RE = re.compile(r"\s+")


@dataclass(frozen=True)
class Fused(Generic[K]):
    """A fused list and where each score came from: ``parts[key][i]`` is what input list ``i`` added to ``key``'s
    score (0.0 when the list does not hold it); ``normalised`` holds each list's scores as the fusion saw them
    (:func:`min_max` for :func:`fuse_by_score`; empty for rank fusion, which reads ranks only)."""

    ranked: list[tuple[K, float]]
    parts: dict[K, tuple[float, ...]]
    normalised: tuple[dict[K, float], ...] = ()


def fuse_by_rank(
    rankings: Sequence[Sequence[K]], k: int = 60, weights: Sequence[float] | None = None
) -> Fused[K]:
    """Fuse ranked lists (each holds a key at most once): ``score(d) = Σ_i w_i / (k + rank_i(d))`` with 1-based
    ranks; a list that does not hold ``d`` adds nothing.

    The result depends only on the lists' content, never on the order they are given in (for equal weights):
    each score is the correctly rounded sum of its terms (``math.fsum``), so two documents with the same
    multiset of ranks tie exactly (a plain running sum taken in another order can differ in the last bit), and
    ties break by the best rank in any list, then by the key's ``repr``.

    >>> fuse_by_rank([["a", "b"], ["b", "c"]], k=60).parts["b"]
    (0.016129032258064516, 0.01639344262295082)
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    n = len(rankings)
    parts: dict[K, list[float]] = {}
    best: dict[K, int] = {}
    for i, (ranking, weight) in enumerate(zip(rankings, weights)):
        for rank, key in enumerate(ranking, start=1):  # each list holds a key once
            part = parts.get(key)
            if part is None:
                parts[key] = part = [0.0] * n
                best[key] = rank
            elif rank < best[key]:
                best[key] = rank
            part[i] = weight / (k + rank)
    scores = {key: math.fsum(part) for key, part in parts.items()}  # the 0.0 of a list without the key adds nothing
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], repr(kv[0])))
    return Fused(ranked, {key: tuple(part) for key, part in parts.items()})


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[K, float]]:
    """:func:`fuse_by_rank`'s ranked list: ``score(d) = Σ_i w_i / (k + rank_i(d))``.

    >>> reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60)
    [('b', 0.03252247488101534), ('a', 0.01639344262295082), ('c', 0.016129032258064516)]
    """
    return fuse_by_rank(rankings, k, weights).ranked


def min_max(scores: dict[K, float]) -> dict[K, float]:
    """Scale a list's scores to [0, 1] over its own candidates: ``(s - min) / (max - min)``; all equal → 1.

    >>> min_max({"a": 2.0, "b": 4.0, "c": 3.0})
    {'a': 0.0, 'b': 1.0, 'c': 0.5}
    """
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {key: (s - low) / span if span else 1.0 for key, s in scores.items()}


def fuse_by_score(bm25: dict[K, float], similarity: dict[K, float], alpha: float = 0.6) -> Fused[K]:
    """Fuse by scores, not ranks: ``score(d) = α·mm(bm25)(d) + (1 − α)·mm(cos)(d)``, where ``mm`` is
    :func:`min_max` over each list's own candidates and a list that does not hold ``d`` adds 0. Unlike RRF it
    keeps how far apart the candidates are, so a confident BM25 list is not flattened by a weak vector list
    (measured: SciFact nDCG@10 0.713 → 0.728, LoCoMo turn recall@5 0.472 → 0.564). ``parts`` are the two terms
    ``α·mm(bm25)(d)`` and ``(1 − α)·mm(cos)(d)``; ``normalised`` the two ``mm`` lists.

    Like :func:`reciprocal_rank_fusion`, the order depends only on the scores, not on the order the dicts were
    filled in: ties break by the better of the two normalised scores, then by the key's ``repr``.

    >>> fuse_by_score({"a": 10.0, "b": 5.0}, {"b": 0.9, "c": 0.5}, alpha=0.5).parts["b"]
    (0.0, 0.5)
    """
    nb, nv = min_max(bm25), min_max(similarity)
    parts: dict[K, tuple[float, ...]] = {key: (alpha * nb.get(key, 0.0), (1 - alpha) * nv.get(key, 0.0)) for key in {*bm25, *similarity}}
    fused = {key: b + v for key, (b, v) in parts.items()}
    best = {key: max(nb.get(key, 0.0), nv.get(key, 0.0)) for key in fused}
    ranked = sorted(fused.items(), key=lambda kv: (-kv[1], -best[kv[0]], repr(kv[0])))
    return Fused(ranked, parts, (nb, nv))


def score_fusion(bm25: dict[K, float], similarity: dict[K, float], alpha: float = 0.6) -> list[tuple[K, float]]:
    """:func:`fuse_by_score`'s ranked list: ``score(d) = α·mm(bm25)(d) + (1 − α)·mm(cos)(d)``.

    >>> score_fusion({"a": 10.0, "b": 5.0}, {"b": 0.9, "c": 0.5}, alpha=0.5)
    [('a', 0.5), ('b', 0.5), ('c', 0.0)]
    """
    return fuse_by_score(bm25, similarity, alpha).ranked


def boost(fused: Sequence[tuple[K, float]], chosen: set[K], share: float) -> list[tuple[K, float]]:
    """Raise the scores of ``chosen`` keys: ``s·(1 + share)``, others unchanged, re-sorted best first (a stable
    sort, so ties keep the order they had).

    >>> boost([("a", 1.0), ("b", 0.8), ("c", 0.5)], {"c"}, 1.0)
    [('a', 1.0), ('c', 1.0), ('b', 0.8)]
    """
    if not chosen or not share:
        return list(fused)
    raised = [(key, score * (1 + share) if key in chosen else score) for key, score in fused]
    return sorted(raised, key=lambda kv: -kv[1])


def group_evidence(fused: Sequence[tuple[K, float]], group_of: Mapping[K, Hashable], share: float,
                   top: int = 3) -> list[tuple[K, float]]:
    """Raise each hit by the evidence of its group (an event's session): ``s'(d) = s(d) + share · s_max ·
    G(g(d)) / G_max``, where ``G(g)`` is the sum of the ``top`` best scores of the candidates in group ``g``,
    ``s_max`` the best score and ``G_max`` the best group's ``G``. A key without a group is a group of its own, so
    among ungrouped hits the order never changes. Re-sorted best first (a stable sort).

    A conversation's answer is rarely one isolated turn: the turns around it in the same session match the
    question too, and a turn in a session that holds several good candidates is more likely the one asked about
    than an equally scored turn alone (measured on LoCoMo dev, hybrid, share 0.15: turn recall@5 0.668 -> 0.677,
    recall@10 0.742 -> 0.760, questions with a gold turn in one list's top 10 but not in hybrid's 52 -> 39).

    >>> group_evidence([("a", 1.0), ("b", 0.9), ("c", 0.8)], {"b": 1, "c": 1}, 0.5)
    [('b', 1.4), ('c', 1.3), ('a', 1.2941176470588234)]
    """
    if not fused or not share:
        return list(fused)
    scores: dict[Hashable, list[float]] = {}
    for key, score in fused:
        scores.setdefault(group_of.get(key, ("key", key)), []).append(score)
    evidence = {g: math.fsum(sorted(s, reverse=True)[:top]) for g, s in scores.items()}
    best = max(evidence.values())
    if best <= 0:
        return list(fused)
    scale = share * max(score for _, score in fused) / best
    raised = [(key, score + scale * evidence[group_of.get(key, ("key", key))]) for key, score in fused]
    return sorted(raised, key=lambda kv: -kv[1])


def trigrams(text: str) -> frozenset[str]:
    """Character trigrams of the lower-cased text with white space folded (texts under 3 characters give
    themselves).

    >>> sorted(trigrams("Abcd"))
    ['abc', 'bcd']
    """
    return _trigrams_of(_SPACE_RE.sub(" ", text.lower()).strip())


def _trigrams_of(norm: str) -> frozenset[str]:
    if len(norm) < 3:
        return frozenset([norm]) if norm else frozenset()
    return frozenset(map("".join, zip(norm, norm[1:], norm[2:])))  # twice as fast as slicing in a loop


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|A ∩ B| / |A ∪ B|``; two empty sets are identical (1.0).

    >>> jaccard(frozenset("ab"), frozenset("bc"))
    0.3333333333333333
    """
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True)
class DedupDecision:
    key: Hashable
    duplicate_of: Hashable
    similarity: float


#: A lower-ranked text is hidden only when it adds at most this many character trigrams that the kept text lacks:
#: an edited timestamp, id or a couple of words, never a sentence. Trigram Jaccard alone hid a paragraph that
#: held the answer in one extra sentence (Jaccard 0.9 with a longer neighbour that did not).
MAX_NOVEL_TRIGRAMS = 16


def novel(a: frozenset[str], b: frozenset[str]) -> int:
    """``|A − B|``: how many trigrams ``a`` adds to ``b``.

    >>> novel(frozenset("abc"), frozenset("ab"))
    1
    """
    return len(a - b)


#: Trigrams whose first character falls in these ranges are a text's *sample*, found as (first character, next
#: two) pairs: 11-19% of the characters of the evaluation's English, Chinese, Japanese and Korean texts. The sample
#: decides only how fast a pair is ruled out, never the result: see :func:`dedup`.
_SAMPLED_RE = re.compile("([a-d0-4\u6000-\u67ff\u8000-\u87ff\uac00-\uafff\u3040-\u304f\u30a0-\u30bf])(?=(..))",
                         re.DOTALL)
#: At most this many sampled trigrams of a lower-ranked text are looked up in each kept text's sample.
_PROBE = 48


class _Text:
    """One text of :func:`dedup`: its sampled trigrams and a probe of at most ``_PROBE`` of them at once, its full
    trigram set (as :func:`trigrams` makes it) only when a pair needs it."""

    __slots__ = ("norm", "sampled", "probe", "_grams")
    sampled: frozenset[tuple[str, str]]

    def __init__(self, text: str):
        # trigrams()' folding: str.split() and the \\s of re split on the same (str.isspace) characters
        self.norm = " ".join(text.lower().split())
        self.sampled = frozenset(_SAMPLED_RE.findall(self.norm))
        self.probe = frozenset(islice(self.sampled, _PROBE)) if len(self.sampled) > _PROBE else self.sampled
        self._grams: frozenset[str] | None = None

    @property
    def grams(self) -> frozenset[str]:
        if self._grams is None:
            self._grams = _trigrams_of(self.norm)
        return self._grams


def dedup(
    ranked: Sequence[tuple[K, str]], threshold: float, limit: int | None = None,
    max_novel: int = MAX_NOVEL_TRIGRAMS,
) -> tuple[list[K], list[DedupDecision]]:
    """Walk ``(key, text)`` best first; hide an item when, against an already kept one, its trigram Jaccard is at
    least ``threshold`` **and** it adds at most ``max_novel`` trigrams the kept one lacks (it differs in form, not
    in substance: ``|T(b) − T(a)| ≤ max_novel``). Stops once ``limit`` items are kept. Returns the kept keys and the
    hidden ones with the kept item each duplicated.

    Exact, only faster than comparing every pair's full sets: each text has a sample ``S`` (its trigrams whose
    first character is in a fixed set of ranges) and a probe ``P ⊆ S``. As ``P(b) − S(a) ⊆ T(b) − T(a)``, a kept
    text holding fewer than ``|P(b)| − max_novel`` of the probe's trigrams in its sample cannot be matched, and
    all kept texts are probed at once in C; the few pairs left are decided on the full sets. Measured with
    ``python -m scripts.bench_dedup`` (100-hit lists, k = 50, a 2-core machine under load 8; p50 thread CPU
    time, pairwise definition → this): SciFact chunks 26 → 4.9 ms, cmrc2018 8.7 → 2.2 ms, LoCoMo turns 2.7 → 2.0 ms.

    >>> dedup([("a", "the same text"), ("b", "the same text!"), ("c", "other")], 0.8)[0]
    ['a', 'c']
    """
    kept: list[K] = []
    samples: list[frozenset[tuple[str, str]]] = []  # of the kept texts, in order
    sizes: list[int] = []  # of their samples
    texts: list[_Text] = []
    full: list[frozenset[str] | None] = []  # their full trigram sets, made when a pair first needs one
    hidden: list[DedupDecision] = []
    for key, raw in ranked:
        if limit is not None and len(kept) >= limit:
            break
        text = _Text(raw)
        need = len(text.probe) - max_novel
        # |S(b)| − |S(a)| ≤ |S(b) − S(a)| ≤ |T(b) − T(a)|: a kept text whose sample is that much smaller is no match
        most = len(text.sampled) - max_novel
        if need > 0:
            sized = [i for i, n in enumerate(sizes) if n >= most]
            probed = map(len, map(text.probe.intersection, [samples[i] for i in sized]))
            candidates: Sequence[int] = [i for i, n in zip(sized, probed) if n >= need]
        else:
            candidates = [i for i, n in enumerate(sizes) if n >= most]
        match = None
        if candidates:
            grams = text.grams
            size = len(grams)
            for i in candidates:
                other_grams = full[i]
                if other_grams is None:
                    other_grams = full[i] = texts[i].grams
                other_size = len(other_grams)
                # |A∩B|/|A∪B| ≤ min/max, and |B−A| ≥ |B|−|A|: pairs whose sizes alone rule a match out
                small, large = (size, other_size) if size <= other_size else (other_size, size)
                if large and small / large < threshold or size - other_size > max_novel:
                    continue
                shared = len(grams & other_grams)
                if size - shared > max_novel:  # |B−A|
                    continue
                union = size + other_size - shared
                sim = shared / union if union else 1.0  # jaccard(), with two empty texts alike
                if sim >= threshold:
                    match = (kept[i], sim)
                    break
        if match is None:
            kept.append(key)
            samples.append(text.sampled)
            sizes.append(len(text.sampled))
            texts.append(text)
            full.append(text._grams)
        else:
            hidden.append(DedupDecision(key, match[0], round(match[1], 4)))
    return kept, hidden
