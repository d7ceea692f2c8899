"""search_engine.query: any text a user types becomes a valid FTS5 expression, and a raw query fails only as a usage error. Property tests over a real index."""

import re
import shutil

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from conftest import SAMPLE
from indexer.base.errors import UsageError
from indexer.base.settings import resolve_settings
from indexer.pipeline import index
from indexer.store import sqlite as store
from indexer.store.sqlite_read import fts5_query
from search_engine.query import STOPWORDS, ParsedQuery, content_terms, terms
from search_engine.search import search


@pytest.fixture(scope="module")
def query_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz") / "memory"
    shutil.copytree(SAMPLE, root)
    settings = resolve_settings(root, model="none")
    index(settings, embedder=None)
    return settings


@hsettings(max_examples=300, deadline=None)
@given(text=st.text(max_size=120))
def test_any_text_makes_a_valid_fts5_expression(query_index, text):
    _runs_in_fts5(query_index, terms(text), content_terms(terms(text)))


def _runs_in_fts5(index, *term_lists):
    """Each list's AND and OR expressions run against the real FTS5 table without an error."""
    conn = store.connect(index.db_path)
    try:
        for words in term_lists:
            for op in ("AND", "OR"):
                expression = fts5_query(words, op)
                if expression:
                    conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,)).fetchone()
    finally:
        conn.close()


# Kana, kanji, the middle dot and long-vowel mark, half-width katakana, Latin and punctuation: the Japanese split.
_JAPANESE = st.text(st.sampled_from(list("ラオスの首都はグスタフ・マーラー何誰起こる雨がにをでとなｶﾚｰ東京大学ー a1、。？")), max_size=40)


@hsettings(max_examples=300, deadline=None)
@given(text=_JAPANESE)
def test_any_japanese_text_makes_a_valid_fts5_expression_of_its_own_substrings(query_index, text):
    found = content_terms(terms(text))
    assert all(t.text in text.lower() for t in found if t.cjk)  # every CJK term is a piece of the query
    _runs_in_fts5(query_index, found)


@hsettings(max_examples=200, deadline=None)
@given(text=st.text(max_size=60) | st.sampled_from(['"', "a:", "NEAR(", "*", "^", "a OR", "(a", "x AND AND y", "+"]))
def test_raw_queries_fail_only_as_usage_errors(query_index, text):
    try:
        result = search(query_index, text, mode="bm25", raw=True)
        assert isinstance(result.hits, tuple)
    except UsageError as exc:
        assert "\n" not in str(exc)


def test_what_an_apostrophe_leaves_is_not_searched(home):
    """The index splits "Maria's" into "maria" and "s": "s" alone, in most rows of a conversation, would bring in
    every text holding "it's" or "that's" once Maria's own note runs out."""
    (home / "notes").mkdir()
    (home / "notes" / "garden.md").write_text("Maria's garden grows tomatoes.\n")
    (home / "notes" / "weather.md").write_text("It's raining and that's cold; it's been a week.\n")
    settings = resolve_settings(home, model="none")
    index(settings, embedder=None)
    assert [t.text for t in content_terms(terms("Where is Maria's garden? She didn't say; we'll see"))] == [
        "maria", "garden", "say", "see"]
    result = search(settings, "What does Maria's garden grow?", mode="bm25")
    assert [hit.path.rsplit("/", 1)[-1] for hit in result.hits] == ["garden.md"]


def test_the_byte_test_for_cjk_lets_every_cjk_character_through():
    """``may_hold_cjk`` decides from UTF-8 bytes whether the CJK pattern is worth building: a character it turned
    away would silently lose its CJK terms."""
    from indexer.base.cjk import _CJK_CLASS, may_hold_cjk

    one = re.compile(f"[{_CJK_CLASS}]")
    missed = [hex(i) for i in range(0x80, 0x110000) if one.match(chr(i)) and not may_hold_cjk(chr(i))]
    assert missed == []
    assert not any(may_hold_cjk(c) for c in "’“”—–…•→€é🙂")


def test_a_cjk_word_no_text_holds_as_written_falls_back_on_its_pieces(home):
    """"イギリスフランス" is one katakana run, held by no text as written: the query matched nothing at all, although
    a note names both countries. With nothing found, its bigrams are searched one by one."""
    (home / "notes").mkdir()
    (home / "notes" / "europe.md").write_text("イギリスとフランスの関係について。\n")
    (home / "notes" / "other.md").write_text("日本の首都は東京です。\n")
    settings = resolve_settings(home, model="none")
    index(settings, embedder=None)
    result = search(settings, "イギリスフランスを何というか。", mode="bm25")
    assert [hit.path.rsplit("/", 1)[-1] for hit in result.hits] == ["europe.md"]
    assert search(settings, "ドイツ", mode="bm25").hits == ()  # a word with no piece anywhere still finds nothing


@pytest.mark.parametrize("text, lang, content", [
    ("Wie teste ich die Wiederherstellung von Vaultwarden?", "de", ["teste", "wiederherstellung", "vaultwarden"]),
    ("Comment est-ce que je configure le proxy pour le cluster ?", "fr", ["configure", "proxy", "cluster"]),
    ("¿Por qué el despliegue falla con este error de permisos?", "es", ["despliegue", "falla", "error", "permisos"]),
    ("Waarom faalt de build op de nieuwe runner?", "nl", ["faalt", "build", "nieuwe", "runner"]),
    ("Почему не работает сборка на новом сервере?", "ru", ["работает", "сборка", "новом", "сервере"]),
])
def test_a_query_in_another_language_drops_that_languages_stopwords(text, lang, content):
    from search_engine.languages import query_language

    assert query_language(text, STOPWORDS) == lang
    parsed = ParsedQuery.parse(text)
    assert [t.text for t in parsed.terms] == content
    assert all(t.alts == () for t in parsed.terms)  # no English forms for another language's words


@pytest.mark.parametrize("text", [
    "why did the server die last night", "Vaultwarden backup restore", "was the migration run on staging?",
    "add type hints to this function", "git: how do I list the branches already merged into main?",
    "die Hard", "man page for tar", "son of a gun", "the con of this approach",
])
def test_english_and_technical_queries_stay_english(text):
    from search_engine.languages import query_language

    assert query_language(text, STOPWORDS) is None
    assert ParsedQuery.parse(text).terms == tuple(content_terms(terms(text)))
