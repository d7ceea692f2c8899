"""search_engine.fusion: reciprocal rank fusion and the trigram dedup, against hand-computed numbers and, for the
dedup, against its definition."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings, strategies as st

from scripts.bench_dedup import dedup_pairwise
from search_engine.fusion import (
    Fused,
    blend,
    dedup,
    group_evidence,
    jaccard,
    novel,
    reciprocal_rank_fusion,
    regex_samples,
    trigrams,
    vector_samples,
)

SAMPLERS = pytest.mark.parametrize("sampler", [regex_samples, vector_samples], ids=["python", "numpy"])


def test_rrf_hand_computed():
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=60))
    assert fused["a"] == 1 / 61 + 1 / 62
    assert fused["b"] == 1 / 62
    assert fused["c"] == 1 / 63 + 1 / 61


def test_rrf_weights_scale_each_list():
    fused = dict(reciprocal_rank_fusion([["a"], ["b"]], k=10, weights=[2.0, 0.5]))
    assert fused == {"a": 2.0 / 11, "b": 0.5 / 11}


def test_rrf_order_is_by_score_then_best_rank():
    assert [key for key, _ in reciprocal_rank_fusion([["x", "y"], ["y", "x"]])] == ["x", "y"]
    assert [key for key, _ in reciprocal_rank_fusion([["a", "b"], ["b", "c"]])] == ["b", "a", "c"]


def test_rrf_empty_lists():
    assert reciprocal_rank_fusion([[], []]) == []


@given(st.lists(st.lists(st.integers(0, 30), unique=True, max_size=15), min_size=1, max_size=4), st.randoms())
# Found on main: the float sums of ids 0 and 15 differed in the last bit when the lists came in another order.
@example([[1, 0, 2, 3, 16, 17, 18, 15], [1, 0, 2, 3, 16, 17, 18, 15], [16, 15, 1, 2, 3, 4, 5, 0],
          [16, 15, 1, 2, 3, 4, 5, 0]], __import__("random").Random(3))
def test_rrf_ignores_input_order(rankings, rnd):
    shuffled = rankings[:]
    rnd.shuffle(shuffled)
    a = reciprocal_rank_fusion(rankings)
    b = reciprocal_rank_fusion(shuffled)
    assert a == b  # same keys, same order, bit-identical scores


def test_rrf_equal_rank_multisets_tie_exactly():
    rankings = [[1, 0, 2, 3, 16, 17, 18, 15], [1, 0, 2, 3, 16, 17, 18, 15], [16, 15, 1, 2, 3, 4, 5, 0],
                [16, 15, 1, 2, 3, 4, 5, 0]]
    for order in ([0, 1, 2, 3], [2, 0, 3, 1], [3, 2, 1, 0], [2, 3, 0, 1]):
        fused = dict(reciprocal_rank_fusion([rankings[i] for i in order]))
        assert fused[0] == fused[15]  # ranks {2, 2, 8, 8} both
        assert [k for k, _ in reciprocal_rank_fusion([rankings[i] for i in order])][4:6] == [0, 15]


@given(st.dictionaries(st.integers(0, 20), st.sampled_from([0.0, 1.0, 2.0, 2.0, 3.5]), max_size=10),
       st.dictionaries(st.integers(0, 20), st.sampled_from([0.1, 0.5, 0.5, 0.9]), max_size=10), st.randoms())
def test_score_fusion_ignores_insertion_order(bm25, cos, rnd):
    from search_engine.fusion import score_fusion

    def shuffled(d):
        items = list(d.items())
        rnd.shuffle(items)
        return dict(items)

    assert score_fusion(bm25, cos) == score_fusion(shuffled(bm25), shuffled(cos))


_texts = st.sampled_from(["the same text", "the same text!", "The  same text", "other words here", "other words",
                          "x", "", "wal mode and busy timeout", "wal mode and a busy timeout"])


@given(st.lists(_texts, max_size=12), st.floats(0.3, 1.0))
def test_dedup_depends_only_on_the_ranking(texts, threshold):
    ranked = list(enumerate(texts))
    kept, hidden = dedup(ranked, threshold)
    # the same ranking under other keys gives the same decisions
    relabelled = [(f"k{i}", t) for i, t in ranked]
    kept2, hidden2 = dedup(relabelled, threshold)
    assert [f"k{i}" for i in kept] == kept2
    assert [(f"k{h.key}", f"k{h.duplicate_of}", h.similarity) for h in hidden] == \
        [(h.key, h.duplicate_of, h.similarity) for h in hidden2]
    # what was kept is pairwise below the threshold, so a second pass keeps it all
    assert dedup([(i, texts[i]) for i in kept], threshold)[0] == kept
    # every hidden item points at a kept one ranked above it
    assert all(h.duplicate_of in kept and h.duplicate_of < h.key for h in hidden)


def test_trigrams_fold_case_and_space():
    assert trigrams("AB  c") == trigrams("ab c") == frozenset({"ab ", "b c"})
    assert trigrams("") == frozenset()


def test_jaccard_hand_computed():
    assert jaccard(frozenset({"a", "b", "c"}), frozenset({"b", "c", "d"})) == 2 / 4
    assert jaccard(frozenset(), frozenset()) == 1.0


def test_dedup_keeps_the_better_ranked_and_reports_hidden():
    items = [
        (1, "Switched the file to WAL journal mode and set busy_timeout."),
        (2, "Switched the file to WAL journal mode and set busy_timeout!"),
        (3, "Something else entirely."),
    ]
    kept, hidden = dedup(items, threshold=0.8)
    assert kept == [1, 3]
    assert [(h.key, h.duplicate_of) for h in hidden] == [(2, 1)]
    assert hidden[0].similarity > 0.8


def test_dedup_threshold_above_one_hides_nothing_and_limit_stops():
    items = [(i, "same text") for i in range(5)]
    assert dedup(items, threshold=1.01)[0] == [0, 1, 2, 3, 4]
    assert dedup(items, threshold=1.01, limit=2)[0] == [0, 1]


def test_score_fusion_hand_computed():
    from search_engine.fusion import min_max, score_fusion

    assert min_max({"a": 1.0, "b": 3.0}) == {"a": 0.0, "b": 1.0}
    assert min_max({"a": 2.0}) == {"a": 1.0}
    fused = dict(score_fusion({"a": 8.0, "b": 4.0, "c": 6.0}, {"b": 0.8, "d": 0.4}, alpha=0.6))
    assert fused == pytest.approx({"a": 0.6, "b": 0.4, "c": 0.3, "d": 0.0})


@given(st.dictionaries(st.integers(0, 20), st.floats(0, 50), max_size=10),
       st.dictionaries(st.integers(0, 20), st.floats(-1, 1), max_size=10))
def test_score_fusion_is_bounded_and_covers_both_lists(bm25, cos):
    from search_engine.fusion import score_fusion

    fused = score_fusion(bm25, cos)
    assert {k for k, _ in fused} == set(bm25) | set(cos)
    assert all(-1e-9 <= s <= 1 + 1e-9 for _, s in fused)
    assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)


def test_dedup_never_hides_a_text_that_adds_substance():
    base = ("The nightly export job writes the ledger to the archive bucket, then rotates the logs and mails a short "
            "report to the on-call engineer. It runs under cron at two in the morning on the reporting replica, "
            "reads the payments tables in one transaction and compresses each day into its own file.")
    longer = base + " The fix was a busy timeout."
    assert jaccard(trigrams(base), trigrams(longer)) >= 0.8  # Jaccard alone would hide it
    kept, hidden = dedup([(1, base), (2, longer)], threshold=0.8)
    assert kept == [1, 2] and hidden == []
    # the other way round, the shorter adds nothing: hidden
    kept, hidden = dedup([(2, longer), (1, base)], threshold=0.8)
    assert kept == [2] and [(h.key, h.duplicate_of) for h in hidden] == [(1, 2)]


def test_dedup_hides_copies_that_differ_in_a_timestamp():
    tail = ("257 passed, 0 failed, in the payments-api repository after the retry change; the flaky "
            "idempotency test no longer times out on the second provider call.")
    a, b = f"Ran pytest at 2026-11-20T10:15:02: {tail}", f"Ran pytest at 2026-11-20T10:17:41: {tail}"
    kept, hidden = dedup([(1, a), (2, b)], threshold=0.8)
    assert kept == [1] and hidden[0].duplicate_of == 1


@given(st.text(alphabet="abcdefgh ", min_size=0, max_size=300), st.text(alphabet="xyz0123456789", min_size=1, max_size=60))
def test_dedup_hidden_items_add_few_trigrams(base, extra):
    text = base + extra
    kept, hidden = dedup([(0, base), (1, text)], threshold=0.5)
    a, b = trigrams(base), trigrams(text)
    assert bool(hidden) == (novel(b, a) <= 16 and jaccard(a, b) >= 0.5 and min(len(a), len(b)) >= 0.5 * max(len(a), len(b)))


# search_engine.fusion.dedup against its definition: the filter rules most pairs out on sampled trigrams, and
# must decide exactly as comparing every pair's full trigram sets does (scripts.bench_dedup.dedup_pairwise: the
# filter as it was written before it was made faster, which the bench also times it against).


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


@SAMPLERS
@settings(max_examples=300, deadline=None)
@given(_near_duplicates(), st.floats(0.0, 1.1), st.one_of(st.none(), st.integers(1, 16)), st.integers(0, 40))
def test_dedup_decides_as_its_definition(sampler, texts, threshold, limit, max_novel):
    ranked = list(enumerate(texts))
    want = dedup_pairwise(ranked, threshold, limit, max_novel)
    assert dedup(ranked, threshold, limit, max_novel, sampler=sampler) == want


@SAMPLERS
@settings(max_examples=200, deadline=None)
@given(_near_duplicates(), st.floats(0.0, 1.1), st.lists(st.sampled_from([None, "2025-11-14", "2025-11-17"]),
                                                         min_size=16, max_size=16))
def test_dedup_never_hides_a_record_of_another_day(sampler, texts, threshold, days):
    """Events are dated records: the same words on two days are two memories. Decided as the definition does with
    items of two different days never compared; an item without a day (a note) may duplicate any other."""
    ranked = list(enumerate(texts))
    day_of = {i: day for i, day in enumerate(days[: len(texts)]) if day is not None}
    kept, hidden = dedup(ranked, threshold, sampler=sampler, day_of=day_of)
    assert (kept, hidden) == dedup_pairwise(ranked, threshold, day_of=day_of)
    for h in hidden:
        assert day_of.get(h.key) is None or day_of.get(h.duplicate_of) in (None, day_of[h.key])


# Any code point, lone surrogates included (a text read with errors="surrogateescape" holds them).
_ANY_TEXT = st.text(st.characters(exclude_categories=()), min_size=0, max_size=400)


@SAMPLERS
@settings(max_examples=60, deadline=None)
@given(st.lists(_ANY_TEXT, max_size=20), st.floats(0.0, 1.1))
def test_dedup_decides_as_its_definition_on_any_text(sampler, texts, threshold):
    ranked = list(enumerate(texts))
    assert dedup(ranked, threshold, sampler=sampler) == dedup_pairwise(ranked, threshold)


@SAMPLERS
@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(_ANY_TEXT, _near_duplicates().map(" ".join)), min_size=2, max_size=6))
def test_a_sample_mask_never_counts_more_new_trigrams_than_the_full_sets_hold(sampler, texts):
    """What dedup rules out on two masks it would rule out on the full trigram sets: the bits of B missing from A
    are at most the trigrams of B missing from A, for every pair made in one call."""
    masks = sampler([t.lower() for t in texts])
    for b, mb in zip(texts, masks):
        for a, ma in zip(texts, masks):
            assert ((mb | ma) ^ ma).bit_count() <= novel(trigrams(b), trigrams(a))


def test_no_code_point_above_the_white_space_table_is_white_space():
    from search_engine import fusion

    vector_samples(["warm the table"])
    assert not any(chr(i).isspace() for i in range(0x3001, 0x110000))
    spaced, plain, joined = fusion.vector_samples(["abc\u3000def\u2029ghi", "abc def ghi", "abcdefghi"])
    assert spaced == plain != joined and plain.bit_count() == 3


def test_the_paths_agree_on_a_long_list_with_near_duplicates_past_the_first_batch():
    """More hidden items than the first batch's slack, so the walk reads a second batch."""
    base = "The nightly export job writes the ledger to the archive bucket and mails a report to the on-call."
    ranked = [(i, f"{base} run {i % 3}") for i in range(40)] + [(100 + i, f"note {i}: " + base[::-1][i:]) for i in range(30)]
    want = dedup_pairwise(ranked, 0.8, limit=12)
    assert len(want[1]) > 8
    for sampler in (regex_samples, vector_samples):
        assert dedup(ranked, 0.8, limit=12, sampler=sampler) == want


def test_a_long_near_duplicate_ruled_in_and_an_unrelated_text_ruled_out():
    base = " ".join(f"abstract {i} describes cells and bacteria in a cohort" for i in range(20))
    ranked = [(1, base), (2, base.replace("cohort", "cohorts", 1)), (3, base[::-1]), (4, "short")]
    kept, hidden = dedup(ranked, 0.8)
    assert kept == [1, 3, 4]
    assert [(h.key, h.duplicate_of) for h in hidden] == [(2, 1)]
    assert (kept, hidden) == dedup_pairwise(ranked, 0.8)


def test_group_evidence_hand_computed():
    # groups: a alone G = 1.0; {b, c} G = 0.9 + 0.8 = 1.7 (the best); scale = 0.5 · 1.0 / 1.7
    raised = dict(group_evidence([("a", 1.0), ("b", 0.9), ("c", 0.8)], {"b": "s", "c": "s"}, 0.5))
    assert raised["a"] == pytest.approx(1.0 + 0.5 / 1.7)
    assert raised["b"] == pytest.approx(0.9 + 0.5)
    assert raised["c"] == pytest.approx(0.8 + 0.5)


def test_group_evidence_counts_a_groups_best_three():
    fused = [("a", 0.65), ("b", 0.5), ("c", 0.4), ("d", 0.3), ("e", 0.2)]
    raised = group_evidence(fused, {k: "s" for k in "bcde"}, 1.0)
    # G(s) = 0.5 + 0.4 + 0.3 = 1.2 (e's 0.2 is not counted), the best group; a alone G = 0.65; scale = 0.65 / 1.2
    scores = dict(raised)
    assert scores["e"] == pytest.approx(0.2 + 0.65)
    assert scores["a"] == pytest.approx(0.65 + 0.65 * 0.65 / 1.2)
    assert [k for k, _ in raised] == ["b", "c", "a", "d", "e"]


def test_group_evidence_off_or_empty_is_the_input():
    fused = [("a", 1.0), ("b", 0.5)]
    assert group_evidence(fused, {"a": 1, "b": 1}, 0.0) == fused
    assert group_evidence([], {}, 0.5) == []


@given(st.lists(st.floats(0, 1, allow_nan=False), max_size=20), st.floats(0.01, 1))
def test_group_evidence_never_reorders_ungrouped_hits(scores, share):
    fused = sorted(((f"k{i}", s) for i, s in enumerate(scores)), key=lambda kv: -kv[1])
    assert [k for k, _ in group_evidence(fused, {}, share)] == [k for k, _ in fused]


def test_the_regex_sampler_still_samples_cjk_text():
    """A text without CJK is sampled by the Latin part of the rule alone; one with CJK by the whole rule (an empty
    sample would stay exact, only slow: every pair compared in full)."""
    korean, latin = regex_samples(["가나다라 마바사", "big dog"])
    assert korean.bit_count() == 1 and latin.bit_count() == 2  # 가나다; big, dog


def test_blend_hand_computed():
    # mm(extra): b 1.0, c 0.0, d 0.5; share 0.2: a 0.8·1.0, b 0.8·0.6 + 0.2, d 0.2·0.5, c 0
    fused = Fused([("a", 1.0), ("b", 0.6)], {"a": (0.6, 0.4), "b": (0.0, 0.6)})
    out = blend(fused, {"b": 3.0, "c": 1.0, "d": 2.0}, 0.2)
    assert out.ranked == [("a", pytest.approx(0.8)), ("b", pytest.approx(0.68)), ("d", pytest.approx(0.1)),
                          ("c", 0.0)]
    assert out.parts["b"] == pytest.approx((0.0, 0.48, 0.2))
    assert out.parts["d"] == (0.0, 0.0, 0.1)
    assert all(score == pytest.approx(sum(out.parts[key])) for key, score in out.ranked)
    assert blend(fused, {"b": 3.0}, 0.0) is fused and blend(fused, {}, 0.2) is fused
