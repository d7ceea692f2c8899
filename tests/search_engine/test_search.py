"""Search against the real SQLite + FTS5 + sqlite-vec (fake embedder here; the real model in test_model.py)."""

from contextlib import contextmanager
from datetime import datetime

import orjson
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from conftest import event_line, write
from indexer.base.errors import ModelUnavailable, UsageError
from indexer.base.settings import resolve_settings
from indexer.pipeline import index
from indexer.store.local import SqliteStore
from indexer.store.sqlite import connect
from indexer.store.sqlite_read import fts5_query
from search_engine import search as search_module
from search_engine.filters import Filters, parse_date
from search_engine.lexical import cjk_bigrams, lexical_search
from search_engine.query import ParsedQuery, content_terms, terms
from search_engine.search import search


@pytest.fixture
def indexed(sample_home, settings, fake):
    index(settings, embedder=fake)
    return settings


HOSTILE = [
    '"', '""', "'", "AND", "OR", "NOT", "a AND", "AND OR NOT", "NEAR(a b)", "NEAR", "*", "a*", "-", "-a", "a -b",
    ":", "title:foo", "col:", "(", ")", "((a)", "a)", "{a b}", "^a", "a + b", '"unbalanced', "😀", "🔥 fix 🔥",
    "\x00", "\\", "%", "_", "a'b\"c", "SELECT * FROM chunks; --", "\u202e\u200b", " ", "", "a" * 5000,
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(indexed, query, fake):
    for mode in ("bm25", "hybrid"):
        result = search(indexed, query, mode=mode, embedder=fake)
        assert isinstance(result.hits, tuple)


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=80))
def test_any_text_is_a_valid_query(indexed, query):
    search(indexed, query, mode="bm25")


def test_query_terms_are_quoted_and_operators_are_words():
    assert fts5_query(terms('NEAR("x" y) AND -z*'), "AND") == '"near" AND "x" AND "y" AND "and" AND "z"'
    assert [t.text for t in content_terms(terms("what is the WAL mode"))] == ["wal", "mode"]
    assert [t.text for t in content_terms(terms("the and of"))] == ["the", "and", "of"]


def test_and_first_then_relaxed_to_or(indexed):
    strict = search(indexed, "WAL busy_timeout", mode="bm25", explain=True)
    assert {h.path for h in strict.hits[:2]} == {"daily/2026-11-19.md", "areas/tools/sqlite/summary.md"}
    relaxed = search(indexed, "WAL zebra", mode="bm25", explain=True)
    assert "||" in relaxed.lexical_query and relaxed.hits
    assert all("zebra" not in h.text for h in relaxed.hits)


def test_stemming_finds_other_forms(indexed):
    assert search(indexed, "deploying", mode="bm25").hits


def test_cjk_two_character_queries_find_substrings(indexed):
    for query, expected in (("東京", "2026-11-20"), ("上海", "2026-11-20"), ("対账", None), ("数据", "2026-11-20")):
        hits = search(indexed, query, mode="bm25").hits
        if expected is None:
            assert hits == ()
        else:
            assert hits and expected in hits[0].path and query in hits[0].text
    assert "本番デプロイ" in search(indexed, "本番デプロイ", mode="bm25").hits[0].text
    assert search(indexed, "リージョン 東京", mode="bm25").hits


def test_hiragana_bigrams_are_dropped_like_stopwords(home, settings, fake):
    def kept(text):
        return [t.text for t in content_terms(terms(text))]

    assert kept("富士山はどこにありますか") == ["富士山"]  # the particle and the question's hiragana left out
    assert kept("カレーについて") == ["カレー"]
    assert kept("について") == ["につ", "つい", "いて"]  # all hiragana: nothing would remain, so all stay
    assert kept("すし 東京") == ["東京"] and kept("すし") == ["すし"]
    assert kept("東京 ですか") == ["東京", "ですか"]  # a 3-character run is a word (a phrase), not a bigram
    # With the hiragana bigrams kept, the AND finds nothing and the OR ranks first the paragraph that shares only
    # "どこにありますか" with the question; without them, the paragraph about Mt Fuji comes first.
    write(home / "fuji.md", "# 山\n富士山は静岡県と山梨県にある。\n")
    write(home / "other.md", "# 旅\n京都へ行きました。よく食べます。どこにありますか。\n")
    index(settings, embedder=fake)
    result = search(settings, "富士山はどこにありますか", mode="bm25")
    assert result.hits[0].path == "fuji.md" and "ます" not in result.lexical_query


def test_japanese_queries_look_for_content_words_split_where_the_script_changes(home, settings, fake):
    def kept(text):
        return [t.text for t in content_terms(terms(text))]

    assert kept("ラオスの首都は") == ["ラオス", "首都"]  # a katakana word whole, a kanji word, no particle
    assert kept("グスタフ・マーラーは何人兄弟か？") == ["グスタフ", "マーラー", "人兄弟"]  # "・" separates; 何 is "what"
    assert kept("例年に起こる雨") == ["例年", "起こ", "雨"]  # a verb by its stem and first okurigana
    assert kept("コンゴ共和国の国際連合平和維持軍") == ["コンゴ", "ゴ共", "共和国", "国際", "際連", "連合", "合平", "平和",
                                                "和維", "維持", "持軍"]  # the seam, and a long compound's bigrams
    assert kept("北京大学的历史") == ["北京", "京大", "大学", "学的", "的历", "历史"]  # Chinese: no kana, as before
    assert kept("ｶﾚｰを食べる") == ["ｶﾚｰ", "食べ"]  # half-width katakana
    # "の首" and "スの" (bigrams across the particle) matched the flask's "白鳥の首" and "オス" of another text;
    # the content words find the paragraph about the capital.
    write(home / "laos.md", "# ラオス\nラオスの首都はヴィエンチャンで、メコン川に面している。\n")
    write(home / "flask.md", "# 実験\nパスツールは白鳥の首フラスコを用いた。オスとメスの数。\n")
    write(home / "kyoto.md", "# 都\n京都は古い首都である。\n")
    index(settings, embedder=fake)
    result = search(settings, "ラオスの首都は", mode="bm25")
    assert [h.path for h in result.hits] == ["laos.md", "kyoto.md"]
    assert "の首" not in result.lexical_query and '"ラオ オス"' in result.lexical_query


def test_cjk_in_korean_and_single_characters(home, settings, fake):
    write(home / "ko.md", "# 메모\n배포는 목요일에 진행합니다.\n")
    write(home / "zh.md", "# 笔记\n猫\n")
    index(settings, embedder=fake)
    assert search(settings, "목요", mode="bm25").hits[0].path == "ko.md"
    assert search(settings, "猫", mode="bm25").hits[0].path == "zh.md"


def test_filters_apply_inside_both_lists(indexed, fake):
    for mode in ("bm25", "vector", "hybrid"):
        events = search(indexed, "refund webhook", mode=mode, filters=Filters(kind="event"), embedder=fake)
        assert events.hits and all(h.kind == "event" for h in events.hits)
        session = search(indexed, "refund", mode=mode, filters=Filters(session="9b21d0"), embedder=fake)
        assert all(h.session_id == "9b21d0" for h in session.hits)
        project = search(indexed, "charge", mode=mode, filters=Filters(project="payments-api"), embedder=fake)
        assert project.hits and all(h.project == "payments-api" for h in project.hits)
        category = search(indexed, "webhook", mode=mode, filters=Filters(category="daily"), embedder=fake)
        assert category.hits and all(h.category == "daily" for h in category.hits)
        dated = search(indexed, "webhook refund", mode=mode, embedder=fake,
                       filters=Filters.build(since="2026-11-18", until="2026-11-18"))
        assert dated.hits and all(h.ts.startswith("2026-11-18") for h in dated.hits)


def test_excluding_a_session(indexed, fake):
    hits = search(indexed, "webhook", mode="hybrid", filters=Filters(exclude_session="7f3c9a"), embedder=fake).hits
    assert hits and all(h.session_id != "7f3c9a" for h in hits)


def test_dates_and_bad_filters(indexed):
    assert parse_date("2026-01-05") == "2026-01-05T00:00:00"
    assert parse_date("2026-01-05T10:11:12") == "2026-01-05T10:11:12"
    assert parse_date("7d") < parse_date("today")
    with pytest.raises(UsageError, match="invalid date"):
        parse_date("last tuesday")
    with pytest.raises(UsageError, match="invalid kind"):
        Filters.build(kind="memo")
    with pytest.raises(UsageError, match="invalid kind"):  # the warm server's request carries its filters as given
        search(indexed, "retry", mode="bm25", filters=Filters(kind="memo"), embedder=None)


def test_modes_and_ranks(indexed, fake):
    bm25 = search(indexed, "retry idempotency", mode="bm25", embedder=fake)
    assert bm25.mode_used == "bm25" and all(h.vector_rank is None for h in bm25.hits)
    vector = search(indexed, "retry idempotency", mode="vector", embedder=fake)
    assert vector.mode_used == "vector" and all(h.bm25_rank is None for h in vector.hits)
    hybrid = search(indexed, "retry idempotency", mode="hybrid", embedder=fake, k=20)
    assert hybrid.mode_used == "hybrid"
    assert any(h.bm25_rank and h.vector_rank for h in hybrid.hits)
    scores = [h.score for h in hybrid.hits]
    assert scores == sorted(scores, reverse=True)
    explained = search(indexed, "retry idempotency", mode="hybrid", embedder=fake, k=20, explain=True)
    top = explained.explain[0]
    assert top.score == pytest.approx(top.bm25_contribution + top.vector_contribution + top.feedback_contribution
                                      + top.group_contribution, abs=1e-6)
    assert 0 < top.score - top.group_contribution <= 1.0
    assert 0 < top.group_contribution <= indexed.session_share * 1.0  # at most the share of the best score (≤ 1)
    rrf = search(resolve_settings(indexed.home, fusion="rrf", session_share=0), "retry idempotency", embedder=fake, k=20)
    first = rrf.hits[0]
    assert first.score == pytest.approx((1 / (60 + first.bm25_rank) if first.bm25_rank else 0)
                                        + (1 / (60 + first.vector_rank) if first.vector_rank else 0), abs=1e-6)


def test_explain_reports_contributions_and_dedup(home, settings, fake):
    text = "Switch the database to WAL journal mode and set a busy timeout of five seconds."
    write(home / "a.md", f"# A\n{text}\n")
    write(home / "b.md", f"# A\n{text}\n")
    write(home / "c.md", "# C\nWAL mode is also discussed here with other words entirely.\n")
    index(settings, embedder=fake)
    result = search(settings, "WAL journal mode", embedder=fake, explain=True)
    assert result.hidden_duplicates == 1
    assert len(result.hits) == 2
    hidden = [e for e in result.explain if e.duplicate_of]
    assert len(hidden) == 1 and hidden[0].similarity == 1.0
    kept = result.explain[0]
    assert kept.score == pytest.approx(kept.bm25_contribution + kept.vector_contribution + kept.feedback_contribution
                                       + kept.group_contribution)
    assert search(resolve_settings(home, dedup_threshold=1.01), "WAL journal mode", embedder=fake).hidden_duplicates == 0


def test_degrades_to_bm25_without_a_model(indexed):
    none = resolve_settings(indexed.home, model="none")
    result = search(none, "retries", mode="hybrid")
    assert result.mode_used == "bm25" and "disabled" in result.fallback_reason and result.hits
    assert result.health.model_available is False
    with pytest.raises(ModelUnavailable, match="needs an embedding model"):
        search(none, "retries", mode="vector")


def test_missing_model_dir_is_a_clear_reason(indexed, tmp_path):
    broken = resolve_settings(indexed.home, model_dir=str(tmp_path / "nowhere"))
    result = search(broken, "retries")
    assert result.mode_used == "bm25" and "lacks model.onnx" in result.fallback_reason


def test_never_built_index_says_so(settings):
    result = search(settings, "anything", mode="bm25")
    assert result.hits == () and result.health.index_exists is False
    assert not settings.db_path.exists(), "searching never creates the index"


def test_raw_mode(indexed):
    assert search(indexed, "webhook NOT refund", mode="bm25", raw=True).hits is not None
    assert search(indexed, 'body:"busy timeout"', mode="bm25", raw=True).hits
    with pytest.raises(UsageError, match="invalid FTS5 query"):
        search(indexed, 'unbalanced "quote', mode="bm25", raw=True)


def test_k_and_mode_are_validated(indexed):
    with pytest.raises(UsageError):
        search(indexed, "x", k=0)
    with pytest.raises(UsageError):
        search(indexed, "x", mode="fuzzy")


def test_relevance_gate_reads_the_whole_chunk():
    from indexer.base.types import Hit
    from search_engine.context import coverage, format_context

    filler = " ".join(f"word{i}" for i in range(200))
    hit = Hit("abc123abc123", "note", "daily", "Title", f"{filler} zanzibar gateway restarted", "a.md", 1, 2,
              "2026-11-20T00:00:00", None, None, None, 0.03, 1, None)
    query = ParsedQuery.parse("restart the zanzibar gateway")
    assert coverage(query, hit) == 1.0
    block, chosen = format_context(query, [hit])
    assert chosen == [hit] and 'source="a.md:1-2"' in block
    assert format_context(ParsedQuery.parse("unrelated haiku about autumn"), [hit]) == ("", [])


def test_health_on_a_long_lived_connection_follows_writes_by_other_connections(indexed, fake, home):
    from indexer.store.local import SqliteStore

    store = SqliteStore.open(indexed.db_path)
    try:
        before = search(indexed, "deploy", mode="bm25", embedder=fake, store=store).health
        assert search(indexed, "deploy", mode="bm25", embedder=fake, store=store).health == before
        write(home / "notes" / "late.md", "# Late note\n\nA note written after the connection opened.\n")
        index(indexed, embedder=None)  # another connection commits new chunks, left pending
        after = search(indexed, "deploy", mode="bm25", embedder=fake, store=store).health
        assert after.chunks == before.chunks + 1
        assert after.pending_embeddings == before.pending_embeddings + 1
    finally:
        store.close()



def test_a_hybrid_search_reads_the_store_from_one_thread_only(indexed, fake, monkeypatch):
    """One SQLite connection serves one thread at a time (apsw raises ThreadingViolationError instead of waiting):
    the query is embedded beside the lexical list, but every read of the store is made from the caller's thread,
    however long the lexical list takes."""
    import threading
    import time

    from indexer.store.local import SqliteStore

    seen: list[tuple[str, int]] = []
    for name in ("lexical_top_k", "vector_candidates", "fetch_hits"):
        real = getattr(SqliteStore, name)

        def traced(self, *args, _real=real, _name=name, **kwargs):
            seen.append((_name, threading.get_ident()))
            if _name == "lexical_top_k":
                time.sleep(0.05)  # a slow lexical list: the embedding thread is done long before it
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(SqliteStore, name, traced)
    found = search(indexed, "retry idempotency", mode="hybrid", embedder=fake, k=5)
    assert found.mode_used == "hybrid" and found.hits
    assert {n for n, _ in seen} == {"lexical_top_k", "vector_candidates", "fetch_hits"}
    assert {t for _, t in seen} == {threading.get_ident()}


def _session_log(home):
    turns = [
        ("g1", "garden", "The greenhouse tomatoes finally turned red this week after the heat wave"),
        ("g2", "garden", "I moved the tomato pots to the sunny side of the greenhouse for more light"),
        ("g3", "garden", "Watering the greenhouse tomatoes every morning keeps the leaves from curling"),
        ("g4", "garden", "We also planted basil between the rows, it grows well next to tomatoes"),
        ("s1", "solo", "greenhouse tomatoes"),
        ("o1", "other", "The release of version two is planned for next Tuesday"),
        ("o2", "other", "Remember to rotate the database credentials before the audit"),
    ]
    lines = [orjson.dumps({"id": eid, "ts": "2026-11-20T10:00:00", "type": "prompt", "content": text,
                           "session_id": session}) for eid, session, text in turns]
    write(home / "events" / "2026-11-20.jsonl", b"\n".join(lines) + b"\n")


@pytest.mark.model
def test_hybrid_raises_events_by_the_evidence_of_their_session(home, real_embedder):
    """Each hit gains ``session_share · s_max · G(session) / G_max`` over the plain fused score, G being the sum of
    a session's three best fused scores (the real index, the real model): the turns of the session that holds
    several matches rise together and overtake the short lone turn that both lists rank first."""
    _session_log(home)
    settings = resolve_settings(home)
    index(settings, embedder=real_embedder)
    query = "greenhouse tomatoes"
    # the feedback list is read from the best hits, which the session's evidence changes: left out here
    plain = search(settings.replace(session_share=0.0, feedback_share=0.0), query, mode="hybrid", k=50,
                   embedder=real_embedder).hits
    raised = search(settings.replace(session_share=1.0, feedback_share=0.0), query, mode="hybrid", k=50,
                    embedder=real_embedder).hits
    assert plain[0].event_id == "s1"
    assert raised[0].session_id == "garden"
    base = {h.event_id: h.score for h in plain}
    session = {h.event_id: h.session_id for h in plain}
    evidence = {s: sum(sorted((base[e] for e in base if session[e] == s), reverse=True)[:3])
                for s in set(session.values())}
    scale = 1.0 * max(base.values()) / max(evidence.values())
    assert {h.event_id: h.score for h in raised} == pytest.approx(
        {eid: score + scale * evidence[session[eid]] for eid, score in base.items()}, abs=2e-6)  # scores: 6 digits
    assert search(settings, query, mode="bm25", k=50).hits[0].event_id == "s1"  # BM25 alone is not grouped


@pytest.mark.model
def test_a_short_reply_is_found_by_the_vector_list_through_the_turn_it_answers(home, real_embedder):
    """A reply such as "Yes, this morning." says nothing of Lisbon; embedded with the question it answers (the real
    model), it is the nearest of the replies to "did Jon book the Lisbon flights" (embedded alone, two of the three
    right replies rank below another reply for their question)."""
    pairs = [("Do you still go running along the canal?", "Yes, twice a week."),
             ("Do you still play the piano?", "Only on Sundays now."),
             ("Did you finish painting the kitchen?", "Yes, last weekend."),
             ("Have you booked the flights to Lisbon?", "Yes, this morning.")]
    lines = []
    for i, (asked, answered) in enumerate(pairs):
        for etype, speaker, text in (("prompt", "Mel", asked), ("response", "Jon", answered)):
            lines.append(orjson.dumps({"id": f"{etype[0]}{i}", "ts": "2026-11-20T10:00:00", "type": etype,
                                       "content": text, "session_id": f"s{i}", "metadata": {"speaker": speaker}}))
    write(home / "events" / "2026-11-20.jsonl", b"\n".join(lines) + b"\n")
    settings = resolve_settings(home)
    index(settings, embedder=real_embedder)
    for query, reply in (("Jon running by the canal", "r0"), ("when did Jon paint the kitchen", "r2"),
                         ("did Jon book the Lisbon flights", "r3")):
        hits = search(settings, query, mode="vector", k=8, embedder=real_embedder).hits
        assert [h.event_id for h in hits if h.event_id.startswith("r")][0] == reply, query



@pytest.mark.model
def test_a_query_that_names_a_time_reads_the_nearest_events_of_that_time(home, real_embedder, monkeypatch):
    """"Which country was I visiting in the second week of November": the trip was told in other words ("my first
    time in Scotland") and is not among the memory's nearest events (3 candidates a list here), which are other
    trips of other weeks; the events of the week named (and of the two days after it) nearest to the question are
    read too, and the week's time raises it to the top (the real index, the real model)."""
    trips = ["We visited Portugal in spring and loved the coast", "My trip to Italy was great, the food was amazing",
             "Thinking about visiting Japan next year for the cherry blossoms",
             "Our country road trip through France took two weeks", "Visiting Spain again, this time Seville",
             "Which countries should I visit in South America?", "Visiting Greece with my sister in the summer",
             "The best country I visited last year was Norway", "Planning a visit to Mexico City in the fall",
             "We were visiting Croatia and the islands were beautiful", "Visiting family in Poland for a week",
             "Which country has the best trains for visiting as a tourist?"]
    days = ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05", "2026-11-06", "2026-11-19",
            "2026-11-20", "2026-11-21", "2026-11-22", "2026-10-30", "2026-10-31"]  # November, not its second week
    lines = [orjson.dumps({"id": f"t{i}", "ts": f"{day}T10:00:00", "type": "prompt", "content": text,
                           "session_id": f"s{i}"}) for i, (day, text) in enumerate(zip(days, trips, strict=True))]
    lines.append(orjson.dumps({"id": "uk", "ts": "2026-11-13T20:00:00", "type": "prompt", "session_id": "uk",
                               "content": "Landed in Edinburgh this morning, my first time in Scotland: castles, "
                                          "bagpipes and rain all afternoon"}))
    work = ["rotate the staging database password", "the export job timed out twice", "review the retry policy",
            "renew the TLS certificate", "the flaky login test again", "the CI cache is cold"]
    lines += [orjson.dumps({"id": f"w{i}", "ts": f"2026-11-{9 + i}T09:00:00", "type": "prompt", "content": text,
                            "session_id": f"w{i}"}) for i, text in enumerate(work)]  # the week's other work
    write(home / "events" / "2026-11-13.jsonl", b"\n".join(lines) + b"\n")
    settings = resolve_settings(home, candidates=3)
    index(settings, embedder=real_embedder)
    query = "which country was I visiting in the second week of November"
    now = datetime(2026, 11, 23, 10, 0)
    found = search(settings, query, mode="hybrid", k=5, embedder=real_embedder, now=now, explain=True)
    assert found.hits[0].event_id == "uk"
    assert found.explain[0].boosts == ("time 3",)
    monkeypatch.setattr(search_module, "WINDOW_NEAREST", 0)
    whole = search(settings, query, mode="hybrid", k=5, embedder=real_embedder, now=now)
    assert "uk" not in {h.event_id for h in whole.hits}  # not among the nearest 3 of the whole memory


@contextmanager
def _index_store(settings):
    conn = connect(settings.db_path)
    try:
        yield SqliteStore(conn, settings.db_path)
    finally:
        conn.close()


def _bm25_alone(index_store, question: ParsedQuery):
    """The rows of the store's BM25 list for ``question`` (its AND step), before any re-ranking, best first."""
    ranked = index_store.lexical_top_k(question.terms, "AND", Filters(), 10)
    rows = index_store.fetch_hits([s.id for s in ranked])
    return [rows[s.id] for s in ranked]


def test_a_cjk_query_ranks_first_the_text_that_holds_its_wording(home, settings, fake):
    # Both notes hold the content words 梅雨 and 期間; BM25 prefers the short one that repeats them, but only the
    # other holds the question's wording with its particles ("梅雨の期間は"), and it answers the question.
    write(home / "repeat.md", "# 梅雨\n梅雨入り。梅雨明け。梅雨前線。期間中。\n")
    write(home / "answer.md", "# 気候\n梅雨の期間はふつう1か月から1か月半程度である。降水量は年によって大きく変わり、"
                              "九州では多く、関東では少ない。\n")
    index(settings, embedder=fake)
    question = ParsedQuery.parse("梅雨の期間はどのくらいか")
    with _index_store(settings) as index_store:
        assert [row.path for row in _bm25_alone(index_store, question)] == ["repeat.md", "answer.md"]
        english = lexical_search(index_store, ParsedQuery.parse("rainy season"), Filters(), 10)
        assert english.rows == {}  # no CJK: BM25's order, nothing re-read
    result = search(settings, question, mode="bm25")
    assert [h.path for h in result.hits] == ["answer.md", "repeat.md"]
    assert result.hits[0].bm25_score > result.hits[1].bm25_score  # the list's score carries the bonus


def test_a_cjk_query_ranks_first_the_paragraph_that_holds_its_wording_in_one_sentence(home, settings, fake):
    # Both paragraphs hold 梅雨の and 期間は, as many of the question's bigrams; only one holds them in one sentence,
    # the one the question was asked about. The other is shorter: BM25, and the share of a whole paragraph, put it
    # first.
    write(home / "apart.md", "# 天気\n梅雨の話。期間は未定。その期日も。\n")
    write(home / "together.md", "# 気候\n九州の天気は毎年大きく変わり、降水量も年によって多い。梅雨の期間は1か月程度。\n")
    for i, text in enumerate(("東京の地下鉄の路線図。", "京都の寺と庭園の案内。", "大阪の食べ物の紹介。")):
        write(home / f"other{i}.md", f"# 案内\n{text}\n")
    index(settings, embedder=fake)
    question = ParsedQuery.parse("梅雨の期間はどのくらいか")
    with _index_store(settings) as index_store:
        apart, together = _bm25_alone(index_store, question)
    assert (apart.path, together.path) == ("apart.md", "together.md")
    grams = cjk_bigrams(question.text)
    assert sum(g in apart.text for g in grams) == sum(g in together.text for g in grams)
    assert [h.path for h in search(settings, question, mode="bm25").hits] == ["together.md", "apart.md"]


def _two_speakers(home, named: bool = True):
    turns = [("prompt", "Mel", "I paint by the lake most mornings now"),
             ("response", "Jon", "Mel told me she would paint by the lake; the lake is where Mel likes to paint"),
             ("prompt", "Mel", "The release of version two is planned for next Tuesday"),
             ("response", "Jon", "Remember to rotate the database credentials before the audit"),
             ("prompt", "Mel", "We planted basil between the rows of tomatoes"),
             ("response", "Jon", "The train to the coast leaves at nine")]
    lines = [orjson.dumps({"id": f"t{i}", "ts": f"2026-11-20T10:0{i}:00", "type": etype, "content": text,
                           "session_id": "s1", **({"metadata": {"speaker": who}} if named else {})})
             for i, (etype, who, text) in enumerate(turns)]
    write(home / "events" / "2026-11-20.jsonl", b"\n".join(lines) + b"\n")
    settings = resolve_settings(home)
    index(settings, embedder=None)
    return settings


def test_a_named_speaker_s_own_turns_rise(home):
    """A question naming who wrote events ("what does Mel paint") raises that speaker's events by ``1 +
    speaker_share``: Mel's own turn overtakes Jon's, which repeats every word of the question (the real index,
    BM25); ``--explain`` shows the factor, and ``speaker_share = 0`` keeps BM25's order."""
    settings = _two_speakers(home)
    query = "Where does Mel paint by the lake?"
    plain = search(settings.replace(speaker_share=0.0), query, mode="bm25", k=5, explain=True)
    assert [h.event_id for h in plain.hits[:2]] == ["t1", "t0"]
    assert all(not e.boosts for e in plain.explain)
    raised = search(settings, query, mode="bm25", k=5, explain=True)
    order = [h.event_id for h in raised.hits]
    assert order[0] == "t0" and order.index("t0") < order.index("t1")
    score = {h.event_id: h.score for h in plain.hits}
    assert {h.event_id: h.score for h in raised.hits} == pytest.approx(
        {eid: s * (2 if eid in ("t0", "t2", "t4") else 1) for eid, s in score.items()}, abs=2e-6)
    why = {h.event_id: e.boosts for h, e in zip(raised.hits, raised.explain)}
    assert why["t0"] == ("speaker 2",) and why["t1"] == ()


def test_a_role_is_not_a_name(home):
    """Events without a named speaker are the user's and the assistant's: "the user" in a question is a word, not a
    speaker named, and nothing is raised."""
    settings = _two_speakers(home, named=False)
    query = "Where does the user paint by the lake?"
    found = search(settings, query, mode="bm25", k=5, explain=True)
    assert [h.event_id for h in found.hits[:2]] == ["t1", "t0"]
    assert all(not e.boosts for e in found.explain)


def test_every_hybrid_hit_carries_its_cosine_even_beyond_the_vector_list(indexed, fake):
    # a vector list of one: every other hit comes from BM25 alone, and the gate must still weigh its meaning
    narrow = resolve_settings(indexed.home, candidates=1)
    result = search(narrow, "retry idempotency", mode="hybrid", embedder=fake, k=10)
    beyond = [h for h in result.hits if h.vector_rank is None]
    assert beyond and all(h.similarity is not None for h in beyond)
    # the same cosine as a vector list long enough to reach them reports
    reached = {h.id: h.similarity for h in search(indexed, "retry idempotency", mode="vector", embedder=fake,
                                                  k=100).hits}
    assert all(hit.similarity == pytest.approx(reached[hit.id], abs=1e-3) for hit in beyond)
    bm25 = search(narrow, "retry idempotency", mode="bm25", embedder=fake, k=10)
    assert all(h.similarity is None for h in bm25.hits)  # no query vector: nothing to compare with


def _copies_and_notes(home, copies: int, notes: int) -> None:
    """``copies`` identical events of one day that rank first for "test_refund_timeout", and ``notes`` distinct notes
    that also hold it."""
    output = "FAILED tests/test_refund.py::test_refund_timeout test_refund_timeout timed out (test_refund_timeout)"
    write(home / "events" / "2026-11-28.jsonl", b"".join(event_line(f"e{i}", output) for i in range(copies)))
    causes = ["the mock clock drifts; pin freezegun", "CI retries it twice before failing the build",
              "the payment sandbox answers slowly on Mondays", "a stale Redis lock survives the fixture",
              "the retry decorator sleeps for real", "pytest-xdist shares one database between workers",
              "the webhook queue is never drained", "timezone Europe/Paris crosses a DST change",
              "an unawaited coroutine leaks into the next test", "Stripe's idempotency key is reused",
              "the connection pool is exhausted by a leaked cursor", "logging to a closed stream blocks"]
    for i, cause in enumerate(causes[:notes]):
        write(home / "daily" / f"2026-11-{i + 1:02d}.md", f"# 2026-11-{i + 1:02d}\n\n## Flaky\n"
              f"test_refund_timeout fails because {cause}.\n")


@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_near_duplicates_do_not_use_up_the_candidate_pool(home, settings, fake, mode):
    _copies_and_notes(home, copies=60, notes=12)
    index(settings, embedder=fake)
    result = search(settings, "test_refund_timeout", mode=mode, k=10, embedder=fake)
    assert len(result.hits) == 10 and len({h.id for h in result.hits}) == 10
    assert sum(h.kind == "event" for h in result.hits) == 1
    assert result.hidden_duplicates >= 59
    few = search(settings, "test_refund_timeout", mode=mode, k=200, embedder=fake)
    assert len(few.hits) == 13  # every distinct match, then the matches ran out


def test_the_pool_is_widened_only_when_near_duplicates_leave_fewer_than_k(home, settings, fake, monkeypatch):
    _copies_and_notes(home, copies=3, notes=12)
    index(settings, embedder=fake)
    limits: list[int] = []
    read = SqliteStore.lexical_top_k
    monkeypatch.setattr(SqliteStore, "lexical_top_k", lambda self, terms, op, filters, limit: (
        limits.append(limit), read(self, terms, op, filters, limit))[1])
    assert len(search(settings, "test_refund_timeout", mode="bm25", k=10).hits) == 10
    assert set(limits) == {50}  # 10 distinct among the first 50 candidates (AND, then OR): read once
    _copies_and_notes(home, copies=60, notes=12)
    index(settings, embedder=fake)
    limits.clear()
    assert len(search(settings, "test_refund_timeout", mode="bm25", k=10).hits) == 10
    assert limits[0] == 50 and max(limits) == 100


def _films_log(home):
    turns = [
        ("f1", "Fantasy films are my thing: Star Wars above all, the Jedi and the lightsabers."),
        ("f2", "We rewatched Star Wars last night, Jedi robes and lightsabers for the kids."),
        ("n1", "The films at the cinema downtown were dull."),
        ("n2", "A fantasy novel kept me up late."),
        ("n3", "The deploy failed twice on Monday."),
        ("n4", "Lunch was a salad and a soup."),
        ("n5", "The kids painted the fence blue."),
        ("n6", "Rain all weekend, so we stayed in."),
    ]
    lines = [orjson.dumps({"id": eid, "ts": "2026-11-20T10:00:00", "type": "prompt", "content": text,
                           "session_id": eid}) for eid, text in turns]
    write(home / "events" / "2026-11-20.jsonl", b"\n".join(lines) + b"\n")


def test_feedback_finds_a_turn_by_the_words_of_the_best_hit(home, fake, monkeypatch):
    """"fantasy films" is answered by a turn that says neither word ("we rewatched Star Wars"): the best hit's
    distinctive words (star, wars, jedi, lightsabers) find it in the feedback list, which adds
    ``feedback_share · mm(BM25 of the query and those words)`` to its score after the two lists' parts are scaled by
    ``1 - feedback_share`` (the real index; a fake embedder, whose arbitrary ranks would make its top 3 of a memory
    this small a lunch and a novel: the words are read from the best hit alone)."""
    monkeypatch.setattr("search_engine.search.FEEDBACK_HITS", 1)
    _films_log(home)
    settings = resolve_settings(home, session_share=0.0)
    index(settings, embedder=fake)
    query = "fantasy films"
    plain = search(settings.replace(feedback_share=0.0), query, mode="hybrid", k=8, embedder=fake, explain=True)
    fed = search(settings.replace(feedback_share=0.5), query, mode="hybrid", k=8, embedder=fake, explain=True)
    order = [h.event_id for h in fed.hits]
    assert order[0] == "f1" and order.index("f2") == 1
    assert [h.event_id for h in plain.hits].index("f2") > 1
    assert all(e.feedback_contribution == 0.0 for e in plain.explain)
    before = {h.event_id: e for h, e in zip(plain.hits, plain.explain)}
    for hit, e in zip(fed.hits, fed.explain):
        assert e.score == pytest.approx(e.bm25_contribution + e.vector_contribution + e.feedback_contribution, abs=1e-6)
        assert e.bm25_contribution == pytest.approx(0.5 * before[hit.event_id].bm25_contribution, abs=1e-6)
        assert e.vector_contribution == pytest.approx(0.5 * before[hit.event_id].vector_contribution, abs=1e-6)
        assert 0.0 <= e.feedback_contribution <= 0.5
    explained = {h.event_id: e for h, e in zip(fed.hits, fed.explain)}
    assert explained["f2"].feedback_contribution > 0 and explained["f2"].bm25_rank is None
    assert explained["n3"].feedback_contribution == 0.0  # it holds no word of either query
    bm25 = search(settings.replace(feedback_share=0.5), query, mode="bm25", k=8)
    assert "f2" not in [h.event_id for h in bm25.hits]  # BM25 alone reads no feedback
