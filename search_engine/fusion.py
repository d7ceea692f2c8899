"""Ranking math, pure: no SQL, no models. The formulas are in the docstrings and the tests use hand-computed
numbers."""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Generic, NamedTuple, TypeVar

from indexer.base.cjk import may_hold_cjk

K = TypeVar("K", bound=Hashable)
_SPACE_RE = re.compile(r"\s+")


class Fused(NamedTuple, Generic[K]):
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


def scale_to_best(scores: dict[K, float]) -> Fused[K]:
    """One ranked list (``scores`` best first, as the list ranks them; its order is kept, ties included) scored by
    its own scores over the best one's, ``s(d) / s_max`` (rank scores when the best is not positive): how BM25
    alone ranks. Unlike rank scores (``1 / (k + rank)``, nearly flat over a list), a boost then
    raises a hit by how well it matches and not past every better match: with the speaker rule, LoCoMo dev BM25
    turn recall@5 0.673 -> 0.682, and the prompt hook's BM25 path 0.584 -> 0.595 injected recall. Min-max instead
    gave 0.683 / 0.596, but its last candidate scores 0, which no boost raises (a time window then no longer lifted
    the dated hit of a small memory). The vector list alone keeps rank scores: scaled, it fell 0.531 -> 0.522 (its
    cosines sit close together, and a time window then barely reorders them).

    >>> scale_to_best({"b": 4.0, "c": 3.0, "a": 2.0}).ranked
    [('b', 1.0), ('c', 0.75), ('a', 0.5)]
    """
    best = next(iter(scores.values()), 0.0)
    if best <= 0:
        return fuse_by_rank([list(scores)])
    ranked = [(key, s / best) for key, s in scores.items()]
    return Fused(ranked, {key: (s, 0.0) for key, s in ranked})


def score_fusion(bm25: dict[K, float], similarity: dict[K, float], alpha: float = 0.6) -> list[tuple[K, float]]:
    """:func:`fuse_by_score`'s ranked list: ``score(d) = α·mm(bm25)(d) + (1 − α)·mm(cos)(d)``.

    >>> score_fusion({"a": 10.0, "b": 5.0}, {"b": 0.9, "c": 0.5}, alpha=0.5)
    [('a', 0.5), ('b', 0.5), ('c', 0.0)]
    """
    return fuse_by_score(bm25, similarity, alpha).ranked


def blend(fused: Fused[K], extra: dict[K, float], share: float) -> Fused[K]:
    """Add a third list to a fused one: ``s'(d) = (1 − w)·s(d) + w·mm(extra)(d)``, where ``mm`` is :func:`min_max`
    over the extra list's own candidates and a list that does not hold ``d`` adds 0. ``parts`` gain a third term,
    ``w·mm(extra)(d)``, and the others are scaled by ``1 − w``, so a score stays the sum of its parts. Ties keep
    the order they had in ``fused`` (new keys after them, in the extra list's order).

    >>> blend(Fused([("a", 1.0), ("b", 0.5)], {"a": (1.0, 0.0), "b": (0.0, 0.5)}), {"b": 4.0, "c": 2.0}, 0.5).ranked
    [('b', 0.75), ('a', 0.5), ('c', 0.0)]
    """
    if not share or not extra:
        return fused
    norm = min_max(extra)
    width = len(next(iter(fused.parts.values()), (0.0, 0.0)))
    scores: dict[K, float] = {}
    parts: dict[K, tuple[float, ...]] = {}
    for key, score in fused.ranked:
        scores[key] = (1 - share) * score + share * norm.get(key, 0.0)
        parts[key] = (*((1 - share) * p for p in fused.parts.get(key, (0.0,) * width)), share * norm.get(key, 0.0))
    for key, n in norm.items():
        if key not in scores:
            scores[key] = share * n
            parts[key] = (*(0.0,) * width, share * n)
    return Fused(sorted(scores.items(), key=lambda kv: -kv[1]), parts, fused.normalised)


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


class DedupDecision(NamedTuple):
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


#: A text's *sample* is its trigrams that a fixed rule picks (never one holding white space, so it is read from the
#: lower-cased text without folding its white space first). Any rule gives the same result (see :func:`dedup`); it
#: only decides how fast pairs are ruled out. :func:`regex_samples`: trigrams starting with one of these Latin
#: letters or digits (a quarter of English letters, not the commonest: measured, SciFact lists at k = 50, 4.9 ms
#: with a-d and 0-4, 3.7 ms with these) or a character of these Chinese, Japanese and Korean ranges.
_SAMPLED_LATIN = "bcdfgkmpuvwy0-9"
_SAMPLED_CJK = "\u6000-\u67ff\u8000-\u87ff\uac00-\uafff\u3040-\u304f\u30a0-\u30bf"
#: :func:`vector_samples`: every trigram without white space, as one bit of a ``2**_MASK_BITS``-bit integer.
_MASK_BITS = 12
_MIX: tuple = ()  # NumPy uint32 constants: a trigram's code points mixed, then its bit: the top bits of x * 0x9E3779B1
_SPACE_TOP = 0x3001  # no code point above U+3000 is white space (str.isspace; a test checks every code point)
_space_table = None


@functools.cache
def _sampled_re(cjk: bool) -> re.Pattern[str]:
    """The sampling rule as a pattern; its Latin part alone for a text without CJK, where it finds the same
    trigrams, because the CJK ranges cost a cold process ~0.3 ms to build."""
    return re.compile(f"(?=([{_SAMPLED_LATIN}{_SAMPLED_CJK if cjk else ''}]\\S\\S))")


def regex_samples(lowers: Sequence[str]) -> list[int]:
    """Each lower-cased text's sampled trigrams (found by a regular expression: no NumPy, for the cold hook path)
    as a bit mask, as :func:`vector_samples` makes it (bit ``hash(t)``, salted per process, which is enough: a
    mask is compared only with masks made in the same call).

    >>> [bin(m).count("1") for m in regex_samples(["a cab is here", "", "c"])]
    [1, 0, 0]
    """
    out = []
    top = (1 << _MASK_BITS) - 1
    latin = _sampled_re(False)
    made: dict[str, int] = {}  # exact copies are read once
    for low in lowers:
        mask = made.get(low)
        if mask is None:
            mask = 0
            for gram in set((_sampled_re(True) if may_hold_cjk(low) else latin).findall(low)):
                mask |= 1 << (hash(gram) & top)
            made[low] = mask
        out.append(mask)
    return out


def vector_samples(lowers: Sequence[str]) -> list[int]:
    """Each lower-cased text's trigrams without white space as a bit mask (bit ``h(t)`` set for each trigram
    ``t``), all texts at once in NumPy, for a process that has loaded it already (the warm server).

    Two trigrams may share a bit, so a mask counts fewer trigrams than the set holds, never more: ``|bits(B) −
    bits(A)| ≤ |B − A|`` (a bit set by B and by no trigram of A comes from a trigram of B not in A), so what
    :func:`dedup` rules out on masks is ruled out on the sets too."""
    import numpy as np

    global _space_table, _MIX
    if _space_table is None:  # the constants first: another thread may be past this test once the table is set
        _MIX = tuple(np.uint32(c) for c in (0x2545F491, 0x6C8E9CF5, 0x1B873593, 0x9E3779B1))
        _space_table = np.array([chr(i).isspace() for i in range(_SPACE_TOP)] + [False])
    joined = "\n".join(lowers)  # a window across two texts holds the "\n": white space, never taken
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if len(points) < 3:
        return [0] * len(lowers)
    space = _space_table[np.minimum(points, _SPACE_TOP)]
    where = np.flatnonzero(~(space[:-2] | space[1:-1] | space[2:]))
    mixed = points[:-2] * _MIX[0] + points[1:-1] * _MIX[1] + points[2:] * _MIX[2]  # mod 2**32
    bits = (mixed[where] * _MIX[3]) >> np.uint32(32 - _MASK_BITS)
    owner = np.repeat(np.arange(len(lowers), dtype=np.uint32) << np.uint32(_MASK_BITS),
                      [len(low) + 1 for low in lowers])
    table = np.zeros(len(lowers) << _MASK_BITS, dtype=bool)
    table[owner[where] | bits] = True
    rows = np.packbits(table, bitorder="little").reshape(len(lowers), -1)
    return [int.from_bytes(row.tobytes(), "little") for row in rows]


def _beyond(b: int, a: int) -> int:
    """``|bits(B) − bits(A)|``: at most ``|B − A|``."""
    return ((b | a) ^ a).bit_count()


class _Kept:
    """What :func:`dedup` holds of a kept text: its sample, and its full trigram set once a pair needs it."""

    __slots__ = ("lower", "sample", "_grams")

    def __init__(self, lower: str, sample: int, grams: frozenset[str] | None = None):
        self.lower, self.sample, self._grams = lower, sample, grams

    @property
    def grams(self) -> frozenset[str]:
        if self._grams is None:  # trigrams()' folding: str.split() and \s split on the same (isspace) characters
            self._grams = _trigrams_of(" ".join(self.lower.split()))
        return self._grams


def dedup(
    ranked: Sequence[tuple[K, str]], threshold: float, limit: int | None = None,
    max_novel: int = MAX_NOVEL_TRIGRAMS, sampler: Callable[[Sequence[str]], list[int]] | None = None,
    day_of: Mapping[K, str] | None = None,
) -> tuple[list[K], list[DedupDecision]]:
    """Walk ``(key, text)`` best first; hide an item when, against an already kept one, its trigram Jaccard is at
    least ``threshold`` **and** it adds at most ``max_novel`` trigrams the kept one lacks (it differs in form, not
    in substance: ``|T(b) − T(a)| ≤ max_novel``); the first such kept item (in rank order) is the one it
    duplicates. Stops once ``limit`` items are kept. Returns the kept keys and the hidden ones with the kept item
    each duplicated.

    ``day_of`` gives the day of the items that are dated records (events): two of those from different days are
    never duplicates ("I deployed the billing service" on Monday and again on Friday are two memories); an item
    without a day (a note) may duplicate any other.

    Exact (the same decisions as comparing every pair's full trigram sets), only faster. Each text has a sample
    ``S ⊆ T`` of the trigrams a fixed rule picks (``sampler``: :func:`vector_samples` when NumPy is loaded already,
    else :func:`regex_samples`), so ``S(b) − S(a) ⊆ T(b) − T(a)`` and ``S(a) − S(b) ⊆ T(a) − T(b)``:

    - a text whose sample holds more than ``max_novel`` trigrams that no kept sample holds matches none (one set
      difference rules out every kept text at once: most texts);
    - a short text (a small sample) is compared on its full set, against the kept short texts of a size that can
      match, and against a longer kept text only if ``|T(b)| / (|T(b)| + |S(a) − S(b)|)``, a bound on their
      Jaccard, reaches ``threshold``;
    - a longer one against the kept texts whose sample lacks at most ``max_novel`` of its own;
    - the few pairs left are decided on their full sets, as the definition does.

    Measured with ``python -m scripts.bench_dedup`` (see the README for the figures).

    >>> dedup([("a", "the same text"), ("b", "the same text!"), ("c", "other")], 0.8)[0]
    ['a', 'c']
    >>> dedup([("a", "the same text"), ("b", "the same text!")], 0.8, day_of={"a": "2025-11-14", "b": "2025-11-17"})[0]
    ['a', 'b']
    """
    if sampler is None:
        sampler = vector_samples if "numpy" in sys.modules else regex_samples
    kept: list[K] = []
    texts: list[_Kept] = []
    days: list[str | None] = []  # each kept item's day
    hidden: list[DedupDecision] = []
    union = 0  # every kept text's sample
    shorts: list[tuple[int, int]] = []  # (index, |T|) of the kept short texts
    longs: list[int] = []
    small = max_novel + 8  # a sample this small rules little out: the text is compared on its full set
    slack = 8 if sampler is vector_samples else 0  # NumPy's cost is per call, a regex's per text
    # an exact copy (same lower-cased text and day) of an item decided before is decided alike: hidden as a copy of
    # the kept item that one was, or of that one itself (many copies of one tool output widen the search's pool)
    copies: dict[tuple[str, str | None], tuple[int, float]] = {}
    start = 0
    while start < len(ranked) and (limit is None or len(kept) < limit):
        stop = len(ranked) if limit is None else min(len(ranked), start + limit - len(kept) + slack)
        batch = ranked[start:stop]
        start = stop
        lowers = [raw.lower() for _, raw in batch]
        for (key, _), lower, sample in zip(batch, lowers, sampler(lowers)):
            if limit is not None and len(kept) >= limit:
                break
            day = day_of.get(key) if day_of else None
            match = copies.get((lower, day))
            if match is not None:
                hidden.append(DedupDecision(key, kept[match[0]], match[1]))
                continue
            text = _Kept(lower, sample)
            if texts and _beyond(sample, union) <= max_novel:
                if sample.bit_count() <= small:
                    grams = text.grams
                    size = len(grams)
                    candidates = [i for i in longs if _beyond(sample, texts[i].sample) <= max_novel and _may_match(
                        size, _beyond(texts[i].sample, sample), threshold)]
                    candidates += [i for i, n in shorts if size - n <= max_novel and n * threshold <= size + 1]
                    candidates.sort()
                else:
                    candidates = [i for i, other in enumerate(texts) if _beyond(sample, other.sample) <= max_novel]
                if day is not None:
                    candidates = [i for i in candidates if days[i] is None or days[i] == day]
                match = _first_match(text, texts, candidates, threshold, max_novel)
            if match is None:
                if sample.bit_count() <= small:
                    shorts.append((len(texts), len(text.grams)))
                else:
                    longs.append(len(texts))
                if threshold <= 1.0:
                    copies[lower, day] = (len(kept), 1.0)
                kept.append(key)
                texts.append(text)
                days.append(day)
                union |= sample
            else:
                copies[lower, day] = (match[0], round(match[1], 4))
                hidden.append(DedupDecision(key, kept[match[0]], copies[lower, day][1]))
    return kept, hidden


def _may_match(size: int, beyond: int, threshold: float) -> bool:
    """Whether a text of ``size`` trigrams can reach ``threshold`` with one holding ``beyond`` trigrams it lacks:
    ``J ≤ |B| / (|B| + |A − B|)``."""
    return not size + beyond or size / (size + beyond) >= threshold


def _first_match(text: _Kept, texts: list[_Kept], candidates: Sequence[int], threshold: float,
                 max_novel: int) -> tuple[int, float] | None:
    """The first candidate (in rank order) ``text`` duplicates, on the full sets, and their Jaccard."""
    if not candidates:
        return None
    grams = text.grams
    size = len(grams)
    for i in candidates:
        other_grams = texts[i].grams
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
            return i, sim
    return None
