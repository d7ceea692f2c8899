"""The warm server's in-memory BM25 list ranks exactly as FTS5's bm25() does, through every kind of change to the
index: new rows, deleted rows (also with FTS5's secure delete), rewritten FTS rows, a forget; held, read inline, or
left to FTS5 and read when warming. Real SQLite with FTS5: the reference is a second connection to the same file."""

from __future__ import annotations

from hypothesis import given, settings as hsettings, strategies as st

from indexer.store import ChunkRow, SourceState
from indexer.store.local import SqliteStore
from search_engine.filters import Filters
from search_engine.query import ParsedQuery, Term

QUERIES = ["tests run", "alpha beta gamma", "東京 fix"]
WORDS = ["alpha", "beta", "gamma", "delta", "tests", "testing", "run", "running", "fix", "fixes", "東京", "東京都"]


def source(path: str) -> SourceState:
    return SourceState(path=path, source="notes", mtime_ns=1, size=10, content_hash="h-" + path)


def _rows(name: str, texts: list[list[str]]) -> list[ChunkRow]:
    return [ChunkRow(uid=f"{name}{i}", hash=f"{name}-{i}-{' '.join(words)}", kind="event", text=" ".join(words),
                     title=" ".join(words[:1]), path=name, seq=i, session_id="s", ts=f"2026-01-0{1 + i % 9}",
                     category="prompt")
            for i, words in enumerate(texts)]


_TEXT = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)
_STEP = st.one_of(
    st.tuples(st.just("write"), st.sampled_from("abcd"), st.lists(_TEXT, max_size=5)),
    st.tuples(st.just("delete"), st.sampled_from("abcd"), st.none()),
    st.tuples(st.just("forget one"), st.none(), st.none()),
    st.tuples(st.just("rewrite context"), st.none(), st.none()),
    st.tuples(st.just("warm"), st.none(), st.none()),
    st.tuples(st.just("search"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
              st.sampled_from(["AND", "OR"])),
)


def _same(reference: list, got: list) -> bool:
    """The same scores at every rank, and the same rows above the last score (rows tied with it may differ)."""
    scores = [s.score for s in reference]
    if scores != [s.score for s in got]:
        return False
    return not scores or ({s.id for s in reference if s.score > scores[-1]}
                          == {s.id for s in got if s.score > scores[-1]})


@hsettings(max_examples=60, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=14), budget=st.sampled_from([3, 40, 10_000]),
       read_inline=st.sampled_from([0, 2, 1_000]), limit=st.sampled_from([1, 3, 50]))
def test_the_lexicon_ranks_as_fts5_through_every_change(tmp_path_factory, steps, budget, read_inline, limit):
    path = tmp_path_factory.mktemp("lexicon") / "index.db"
    writer, reference, warm = SqliteStore.open(path), SqliteStore.open(path), SqliteStore.open(path)
    try:
        lexicon = warm.keep_lexicon_in_memory()
        lexicon.budget, lexicon.read_inline = budget, read_inline
        searched = 0
        for op, what, how in [*steps, ("write", "e", [["tests", "run"]])]:
            if op == "write":  # a source written again: its rows go, new ones come
                writer.write_batch(source(f"/m/{what}.md"), _rows(what, how))
            elif op == "delete":
                writer.delete_source(f"/m/{what}.md")
            elif op == "forget one":  # FTS5's secure delete, and the forget epoch
                first = writer.conn.execute("SELECT uid FROM chunks ORDER BY id LIMIT 1").fetchone()
                if first:
                    writer.delete_uids([first[0]])
            elif op == "rewrite context":  # FTS rows rewritten in place, chunk rows untouched
                writer.refresh_turn_context(["s"])
            elif op == "warm":
                lexicon.warm(warm.conn, 1.0)
            else:
                searches = [(what, how)]
            # after every step, the step's own search or the same few (so held phrases meet the rows added since)
            for words, mode in searches if op == "search" else [(q.split(), m) for q in QUERIES for m in ("AND", "OR")]:
                terms = ParsedQuery.parse(" ".join(words)).terms
                expected = reference.lexical_top_k(terms, mode, Filters(), limit)
                got = warm.lexical_top_k(terms, mode, Filters(), limit)
                assert _same(expected, got), (words, mode, expected, got)
                searched += bool(expected)
        assert searched
    finally:
        for store in (writer, reference, warm):
            store.close()


def test_a_search_it_cannot_read_in_time_goes_to_fts5_and_its_words_are_read_when_warming(tmp_path):
    store = SqliteStore.open(tmp_path / "index.db")
    try:
        store.write_batch(source("/m/a.md"), _rows("a", [["tests", "alpha"], ["running", "tests"], ["beta"]]))
        lexicon = store.keep_lexicon_in_memory()
        lexicon.read_inline = 1
        terms = [Term("tests"), Term("running")]
        first = store.lexical_top_k(terms, "OR", Filters(), 5)
        assert lexicon.held == {} and set(lexicon.wanted.values()) == {'"tests"', '"running"'}
        assert lexicon.warm(store.conn, 5.0) and not lexicon.wanted
        assert {key for key in lexicon.held} >= {(False, ("test",)), (False, ("run",))}  # held by their stems
        assert [(s.id, s.score) for s in store.lexical_top_k(terms, "OR", Filters(), 5)] == [
            (s.id, s.score) for s in first]
    finally:
        store.close()


def test_warming_reads_the_common_words_also_when_their_token_is_not_a_word(tmp_path):
    """FTS5 stores "diseas" for "disease", and "diseas" itself would be stemmed again: warming finds the word."""
    store = SqliteStore.open(tmp_path / "index.db")
    try:
        store.write_batch(source("/m/a.md"), _rows("a", [["disease", "alpha"], ["diseases", "tests"], ["tests"]]))
        lexicon = store.keep_lexicon_in_memory()
        assert lexicon.key('"diseas"') != (False, ("diseas",))  # the premise
        assert lexicon.warm(store.conn, 5.0)
        assert {(False, ("diseas",)), (False, ("test",)), (False, ("alpha",))} <= set(lexicon.held)
        lexicon.read_inline = 0  # nothing may be read during the search: held words only
        got = store.lexical_top_k([Term("disease"), Term("tests")], "OR", Filters(), 5)
        assert [s.id for s in got] and not lexicon.wanted
    finally:
        store.close()
