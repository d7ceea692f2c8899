"""search_engine.fusion.dedup against its definition: the filter rules most pairs out on sampled trigrams, and
must decide exactly as comparing every pair's full trigram sets does (the definition below, as the filter was
written before it was made faster)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from search_engine.fusion import MAX_NOVEL_TRIGRAMS, DedupDecision, dedup, jaccard, novel, trigrams


def dedup_by_definition(ranked, threshold, limit=None, max_novel=MAX_NOVEL_TRIGRAMS):
    """Every pair on the full sets: hidden when Jaccard ≥ threshold and |T(b) − T(a)| ≤ max_novel against the
    first kept text, in rank order, that satisfies both."""
    kept, hidden = [], []
    for key, text in ranked:
        if limit is not None and len(kept) >= limit:
            break
        grams = trigrams(text)
        match = None
        for other, other_grams in kept:
            small, large = sorted((len(grams), len(other_grams)))
            if large and small / large < threshold:
                continue
            if novel(grams, other_grams) > max_novel:
                continue
            sim = jaccard(grams, other_grams)
            if sim >= threshold:
                match = (other, sim)
                break
        if match is None:
            kept.append((key, grams))
        else:
            hidden.append(DedupDecision(key, match[0], round(match[1], 4)))
    return [key for key, _ in kept], hidden


# Characters inside and outside the sampled ranges, of several scripts, and white space of several kinds.
_CHARS = st.sampled_from(list("abcdexyz0459 .,!-") + ["\n", "\t", "\u3000", "\xa0", "B", "Z", "É", "é", "ß", "İ",
                                                     "东", "京", "北", "的", "가", "하", "は", "の", "カ", "ン", "😀"])
_WORDS = st.text(_CHARS, min_size=0, max_size=12)


@st.composite
def _near_duplicates(draw):
    """A base text, then texts made from it by a few edits (so some pairs are near-duplicates) or from scratch."""
    base = draw(st.lists(_WORDS, min_size=0, max_size=120).map(" ".join))
    texts = [base]
    for _ in range(draw(st.integers(0, 14))):
        source = draw(st.sampled_from(texts))
        kind = draw(st.sampled_from(["edit", "edit", "append", "fresh", "same", "case"]))
        if kind == "fresh":
            text = draw(st.lists(_WORDS, max_size=120).map(" ".join))
        elif kind == "same":
            text = source
        elif kind == "case":
            text = source.upper()
        elif kind == "append":
            text = source + " " + draw(_WORDS)
        else:
            chars = list(source)
            for _ in range(draw(st.integers(1, 6))):
                at = draw(st.integers(0, len(chars)))
                if chars and draw(st.booleans()):
                    del chars[min(at, len(chars) - 1)]
                else:
                    chars.insert(at, draw(_CHARS))
            text = "".join(chars)
        texts.append(text)
    order = draw(st.permutations(range(len(texts))))
    return [texts[i] for i in order]


@settings(max_examples=300, deadline=None)
@given(_near_duplicates(), st.floats(0.0, 1.1), st.one_of(st.none(), st.integers(1, 16)), st.integers(0, 40))
def test_dedup_decides_as_its_definition(texts, threshold, limit, max_novel):
    ranked = list(enumerate(texts))
    assert dedup(ranked, threshold, limit, max_novel) == dedup_by_definition(ranked, threshold, limit, max_novel)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=400), max_size=20), st.floats(0.0, 1.1))
def test_dedup_decides_as_its_definition_on_any_text(texts, threshold):
    ranked = list(enumerate(texts))
    assert dedup(ranked, threshold) == dedup_by_definition(ranked, threshold)


def test_a_long_near_duplicate_ruled_in_and_an_unrelated_text_ruled_out():
    base = " ".join(f"abstract {i} describes cells and bacteria in a cohort" for i in range(20))
    ranked = [(1, base), (2, base.replace("cohort", "cohorts", 1)), (3, base[::-1]), (4, "short")]
    kept, hidden = dedup(ranked, 0.8)
    assert kept == [1, 3, 4]
    assert [(h.key, h.duplicate_of) for h in hidden] == [(2, 1)]
    assert (kept, hidden) == dedup_by_definition(ranked, 0.8)
