"""Pseudo-relevance feedback words (pure) and the feedback list on the real SQLite index."""

import math

from conftest import write
from indexer.base.settings import resolve_settings
from indexer.pipeline import index
from indexer.store.local import SqliteStore
from indexer.store.sqlite import connect
from search_engine.feedback import feedback_list, feedback_words
from search_engine.filters import Filters
from search_engine.query import ParsedQuery
from search_engine.search import search


def test_feedback_words_hand_computed():
    # best: "gardening tomatoes greenhouse tomatoes" (4 content words); pool of 4 texts (N + 1 = 5):
    # tomatoes 2/4 · log(5/2), greenhouse 1/4 · log(5/1), gardening is asked
    best = ["gardening tomatoes greenhouse tomatoes"]
    pool = [*best, "tomatoes for dinner", "the greenhouse door", "nothing here"]
    words = feedback_words(best, pool, frozenset({"gardening"}), 5)
    assert words == ["tomatoes", "greenhouse"]
    assert 2 / 4 * math.log(5 / 2) > 1 / 4 * math.log(5 / 1)  # why tomatoes comes first


def test_feedback_words_leave_out_short_words_numbers_and_stopwords():
    words = feedback_words(["ok so we met at 2023 the gym and it was fun"], ["x"], frozenset(), 10)
    assert words == ["met", "gym", "fun"]
    assert feedback_words([], ["anything"], frozenset(), 10) == []


def test_feedback_list_searches_the_query_and_the_words(home, fake):
    write(home / "events" / "2026-11-20.jsonl", b"".join(
        b'{"id": "%s", "ts": "2026-11-20T10:00:00", "type": "prompt", "content": "%s"}\n' % (eid, text)
        for eid, text in [(b"a", b"tomatoes in the greenhouse"), (b"b", b"the greenhouse heater broke"),
                          (b"c", b"a salad for lunch")]))
    settings = resolve_settings(home)
    index(settings, embedder=fake)
    conn = connect(settings.db_path)
    try:
        store = SqliteStore(conn, settings.db_path)
        query = ParsedQuery.parse("tomatoes")
        found = feedback_list(store, query, Filters(), 10, ["tomatoes in the greenhouse"],
                              ["tomatoes in the greenhouse", "the greenhouse heater broke", "a salad for lunch"])
        ids = {row.event_id: cid for cid, row in store.fetch_hits(list(found)).items()}
        assert set(ids) == {"a", "b"}  # b by "greenhouse", the best hit's word; c holds neither
        assert found[ids["a"]] > found[ids["b"]]  # a holds both
        assert feedback_list(store, query, Filters(), 10, ["tomatoes"], ["tomatoes"]) == {}  # no word to add
    finally:
        conn.close()


def test_notes_give_no_feedback_words(home, fake):
    """Only events' words are read: a note holds its subject's words itself (SciFact nDCG@10 0.726 -> 0.710 when
    notes' words were read too)."""
    write(home / "a.md", "# Greenhouse\nTomatoes in the greenhouse need a heater in winter.\n")
    write(home / "b.md", "# Heater\nThe greenhouse heater broke in the frost.\n")
    settings = resolve_settings(home)
    index(settings, embedder=fake)
    result = search(settings, "tomatoes", mode="hybrid", embedder=fake, explain=True)
    assert result.hits and all(e.feedback_contribution == 0.0 for e in result.explain)
