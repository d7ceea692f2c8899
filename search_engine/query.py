"""Turning user text into the terms a search looks for, parsed once per search (:class:`ParsedQuery`).

:func:`terms` splits the text the way the index's unicode61 tokenizer does (letters and digits; everything else,
quotes, ``AND``-as-syntax, ``NEAR``, ``*``, ``-``, ``:``, parentheses and emoji, separates); the store quotes every
term (:func:`indexer.store.sqlite_read.fts5_query`), so operators in user text are just words. A short CJK run (a
word) becomes the phrase of its bigrams, a long one (a sentence) its separate bigrams (see :mod:`indexer.base.cjk`).
Korean writes spaces between words but attaches particles to them ("서울은", "서울에서"), so a Hangul word is also
looked for without a trailing particle (see :func:`hangul_stem`). Multi-word queries run as AND first and relax to
OR when that finds too little; the whole query is never one phrase.

>>> [t.text for t in terms('fix "NEAR(a b)" -- crash: 東京')]
['fix', 'near', 'a', 'b', 'crash', '東京']
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from indexer.base.cjk import cjk_run_re, may_hold_cjk, query_bigrams
from search_engine.languages import query_language, stopwords
from search_engine.timeexpr import EventAnchor, TimeWindow, names_a_date, read_time
from search_engine.wordforms import other_forms

if TYPE_CHECKING:
    from datetime import datetime

MAX_TERMS = 48
#: A CJK run up to this long is taken as one word (a phrase); a longer one (a sentence: CJK has no spaces) as its
#: bigrams, so AND can relax to OR and BM25 ranks by the bigrams' weights.
CJK_WORD_CHARS = 3
_WORD_RE = re.compile(r"[^\W_]+")
#: Patterns of CJK runs only, compiled (through re's cache) when a query holds one: most hold none.
_HIRAGANA = "[\u3041-\u309f]+"
_HANGUL = "[\uac00-\ud7af]+"
_KANA = "[\u3041-\u30ff\uff66-\uff9f]"
#: A Japanese run's script segments: hiragana, katakana (with its long-vowel mark; "・" separates words), the rest
#: (kanji). Where the script changes, a word usually ends: Japanese writes content words in kanji or katakana and
#: particles, endings and auxiliaries in hiragana.
_SCRIPT = "([\u3041-\u309f]+)|([\u30a0-\u30fa\u30fc-\u30ff\uff66-\uff9f]+)|(\u30fb+)|([^\u3041-\u30ff\uff66-\uff9f]+)"
#: One-character Japanese particles (case, topic, sentence-final, the copula な): after a kanji word they end it;
#: another hiragana there is the word's own ending (okurigana: 起こる, 長い). A list of the language's grammar.
JAPANESE_PARTICLES = frozenset("はがのをにでともへやかねよな")
#: Interrogatives that head a question's kanji word (何人, 何年, 誰): the answer's text does not hold them.
JAPANESE_INTERROGATIVES = "何誰"
_HIRA, _KATA, _HAN = 1, 2, 4  # _SCRIPT's groups (3: the "・" between katakana words)
_ASKED = 5  # a kanji word that an interrogative headed
#: Korean particles (josa) and copula endings that attach to the end of a word, longest first. A general list of
#: the language's grammar, not of any data set's words.
KOREAN_PARTICLES = tuple(sorted(set("""
    에서부터 으로부터 에게서 한테서 이라는 이라고 이라면 이지만 에서는 에서도 으로는 으로도 에게는 에게도 까지는
    부터는 께서는 에서 에게 한테 께서 으로 부터 까지 처럼 보다 마다 조차 밖에 이나 이며 이고 하고 라는 라고
    로는 로도 와는 과는 에는 에도 이다 였다 이었 이란 인가 이랑 에다
    은 는 이 가 을 를 의 에 와 과 도 만 로 나 랑 께 란""".split()), key=len, reverse=True))

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves
    tell show explain describe give please remind remember recall know let me us can may might must also
    s t d ll m re ve didn doesn isn wasn weren aren hasn haven hadn couldn wouldn shouldn""".split()
)
# The last line: what an apostrophe leaves of a possessive or a contraction ("John's", "didn't", "we'll"). The
# index's tokenizer splits at the apostrophe, so "s" alone is in half to two thirds of a LoCoMo conversation's turns
# and 42% of the 100k-chunk bench memory: as an OR term it made the BM25 list score most rows, for nothing (measured,
# `make eval`: LoCoMo and SciFact within 0.3 points, false injection 0.078 -> 0.068 hybrid, 0.093 -> 0.072 BM25;
# the BM25 list at 100k 18.5 -> 12 ms a question on average).


class Term(NamedTuple):
    """One searchable term; ``alts`` are other forms that also count: a Korean word without its particle, an English
    word's forms that Porter does not stem alike (:mod:`search_engine.wordforms`). A named tuple: the prompt hook's
    block uses terms, and its path imports no ``dataclasses``.

    >>> terms("서울은 bought")
    [Term(text='서울은', cjk=True, alts=('서울',)), Term(text='bought', cjk=False, alts=('buy',))]
    """

    text: str
    cjk: bool = False
    alts: tuple[str, ...] = ()

    @property
    def forms(self) -> tuple[str, ...]:
        return (self.text, *self.alts)


def hangul_stem(word: str) -> str | None:
    """A Korean word without a trailing particle, when at least 2 syllables remain; else None.

    >>> hangul_stem("서울에서"), hangul_stem("바그너는"), hangul_stem("사과"), hangul_stem("서울")
    ('서울', '바그너', None, None)
    """
    for particle in KOREAN_PARTICLES:
        if word.endswith(particle) and len(word) - len(particle) >= 2:
            return word[: -len(particle)]
    return None


def terms(text: str, limit: int | None = MAX_TERMS, forms: bool = True) -> list[Term]:
    """The searchable terms of ``text``, in order, lower-cased, without repeats (the first ``limit``); an English
    word with its other forms unless ``forms`` is False (a hit's own words, which are only compared)."""
    out: list[Term] = []
    seen: set[str] = set()
    pos = 0
    for m in cjk_run_re().finditer(text) if may_hold_cjk(text) else ():
        _words(text[pos : m.start()], out, seen, forms)
        for term in _cjk_terms(m.group(0)):
            if term.text not in seen:
                seen.add(term.text)
                out.append(term)
        pos = m.end()
    _words(text[pos:], out, seen, forms)
    return out[:limit]


def _japanese_terms(run: str) -> list[Term]:
    """A Japanese run (one holding kana) as its content words, split where the script changes: each katakana word
    a phrase ("・" separates them), each kanji word a phrase (a compound over 3 characters: its bigrams), the bigram
    across a katakana-kanji seam (コンゴ|共和国), and a kanji stem with its first okurigana character (起こ of 起こる, not
    the single 起 that 起源 also starts with). Particles, endings and the other hiragana are left out, like English
    stopwords, and so is an interrogative (何, 誰) heading a kanji word, like "what" and "who". The bigrams that
    straddle a particle ("スの", "の首" of ラオスの首都) only matched unrelated text (白鳥の首). Measured on JSQuAD,
    BM25: recall@5 0.954 -> 0.963, MRR@10 0.920 -> 0.927; 3-character kanji words as bigrams, keeping the bigrams
    around particles (0.949), a 2-character kanji word also matched by its first character (0.960), or running OR
    without AND first measured the same or worse.
    """
    segments = []
    for m in re.finditer(_SCRIPT, run):
        seg, kind = m.group(0), m.lastindex or 0
        if kind == _HAN and seg[0] in JAPANESE_INTERROGATIVES:
            seg, kind = seg.lstrip(JAPANESE_INTERROGATIVES), _ASKED  # what is left is no longer joined to the left
        if seg:
            segments.append((seg, kind))
    out: list[Term] = []
    for j, (seg, kind) in enumerate(segments):
        prev, prev_kind = segments[j - 1] if j else ("", 0)
        nxt, nxt_kind = segments[j + 1] if j + 1 < len(segments) else ("", 0)
        joined = kind != _ASKED  # its first character follows prev's last in the query
        kind = _HAN if kind == _ASKED else kind
        if kind == _HIRA:
            if prev_kind in (_HAN, _ASKED) and seg[0] not in JAPANESE_PARTICLES:
                out.append(Term(prev[-1] + seg[0], cjk=True))
        elif kind in (_KATA, _HAN):
            if joined and {_HAN if prev_kind == _ASKED else prev_kind, kind} == {_KATA, _HAN}:
                out.append(Term(prev[-1] + seg[0], cjk=True))
            if kind == _HAN and len(seg) > CJK_WORD_CHARS:
                out.extend(Term(piece, cjk=True) for piece in query_bigrams(seg))
            elif len(seg) > 1 or (kind == _HAN and not (nxt_kind == _HIRA and nxt[0] not in JAPANESE_PARTICLES)):
                out.append(Term(seg, cjk=True))
    return out


def _cjk_terms(run: str) -> list[Term]:
    """A short run is one word (a phrase); a long one is a sentence, taken as its bigrams. A Hangul run is a word
    that may carry a particle: a short one also matches without it, a long one gives the bigrams of its stem only
    (measured on KorQuAD dev, BM25: recall@1 0.927 -> 0.947 with recall@5 0.996 -> 0.995; 879 of its 975 questions
    hold a word whose particle differs from the paragraph's)."""
    stem = hangul_stem(run) if re.fullmatch(_HANGUL, run) else None
    if len(run) > 2 and re.search(_KANA, run) and not re.fullmatch(_HIRAGANA, run):
        words = _japanese_terms(run)
        if words:
            return words
    if len(run) <= CJK_WORD_CHARS:
        return [Term(run, cjk=True, alts=(stem,) if stem else ())]
    return [Term(piece, cjk=True) for piece in query_bigrams(stem or run)]


def _words(text: str, out: list[Term], seen: set[str], forms: bool) -> None:
    for m in _WORD_RE.finditer(text):
        word = m.group(0).lower()
        if word not in seen:
            seen.add(word)
            out.append(Term(word, alts=other_forms(word) if forms else ()))


def content_terms(all_terms: list[Term], language: str | None = None) -> list[Term]:
    """Drop English stopwords (and those of ``language``, the query's when it is not English:
    :func:`search_engine.languages.query_language`) and all-hiragana CJK bigrams, unless that would leave nothing.

    A Japanese sentence has no spaces, so its bigrams include the particles and inflections written in hiragana
    ("について" gives "につ", "つい", "いて"): they are in nearly every paragraph and only dilute the ranking,
    like English stopwords (measured on JSQuAD: BM25 recall@5 0.953 -> 0.954, and questions that share only
    2-character strings with their paragraph 0.40 -> 0.80). A hiragana word asked alone is kept. (A Japanese run
    that holds kanji or katakana is split into its content words already: see :func:`_japanese_terms`.)

    >>> [t.text for t in content_terms(terms("the road to どこにありますか"))]
    ['road']
    >>> [t.text for t in content_terms(terms("wie teste ich die Sicherung", forms=False), "de")]
    ['teste', 'sicherung']
    """
    other = stopwords(language) if language else frozenset()
    kept = [t for t in all_terms if not _filler(t) and (t.cjk or t.text not in other)]
    return kept or all_terms


def words_of(text: str) -> list[Term]:
    """The content terms of ``text`` with no fallback: [] when it holds only common words (what a selection that
    must not take everything, ``forget --match``, reads).

    >>> [t.text for t in words_of("the staging password")], words_of("who are they")
    (['staging', 'password'], [])
    """
    language = query_language(text, STOPWORDS)
    other = stopwords(language) if language else frozenset()
    return [t for t in terms(text, forms=language is None) if not _filler(t) and (t.cjk or t.text not in other)]


def _filler(term: Term) -> bool:
    if term.cjk:
        return len(term.text) == 2 and re.fullmatch(_HIRAGANA, term.text) is not None
    return term.text in STOPWORDS


def named_speakers(text: str, speakers: Iterable[str]) -> frozenset[str]:
    """The speakers among ``speakers`` whom ``text`` names by their first name (a name's first word), as whole
    words, case folded; a name written in CJK anywhere in the text (its words have no spaces between them, and a
    Korean name takes a particle: "민수는" names 민수). "Mel" does not name "Melanie".

    >>> sorted(named_speakers("What did melanie paint, and John's dog?", ["Melanie", "John Doe", "Mel", "Ann"]))
    ['John Doe', 'Melanie']
    >>> sorted(named_speakers("민수는 어디에 갔나요?", ["민수", "지영"]))
    ['민수']
    """
    words = {w.casefold() for w in _WORD_RE.findall(text)}
    named = set()
    for speaker in speakers:
        first = speaker.split(maxsplit=1)[0] if speaker.strip() else ""
        if may_hold_cjk(first) and cjk_run_re().search(first):
            if first in text:
                named.add(speaker)
            continue
        parts = [w.casefold() for w in _WORD_RE.findall(first)]
        if parts and all(p in words for p in parts):
            named.add(speaker)
    return frozenset(named)


class ParsedQuery(NamedTuple):
    """A user's query as every part of one search sees it: the text, and the content terms that lexical search
    looks for and the prompt hook's relevance gate counts in each hit (:func:`search_engine.context.coverage`).
    A named tuple, like :class:`Term`.

    >>> [t.text for t in ParsedQuery.parse("what is the WAL mode").terms]
    ['wal', 'mode']
    """

    text: str
    terms: tuple[Term, ...]
    #: The text without the words of a time counted from now or from an event ("last week", "two days before the
    #: concert"; a month or year stays), if it named one and holds more than stopwords: what the vector list embeds
    #: (else ``text``). The lexical terms keep those words: a conversation tells "last weekend" in the words the
    #: question uses.
    topic: str = ""
    #: The time it names (:func:`~search_engine.timeexpr.read_time`), read once, as of the ``now`` it was parsed at:
    #: search raises the hits dated then.
    time: TimeWindow | EventAnchor | None = None

    @property
    def embedded(self) -> str:
        return self.topic or self.text

    @classmethod
    def parse(cls, text: str, now: datetime | None = None) -> ParsedQuery:
        """The content terms of ``text``, and its ``topic``: the text without the words that name a time relative
        to when it is asked (:func:`~search_engine.timeexpr.read_time`), which search reads as a window instead.
        A phrase that names a month or a year stays: an event is embedded with its date spelled out ("7 May 2023"),
        so those words match it.

        >>> ParsedQuery.parse("which service did I deploy last week?").topic
        'which service did I deploy ?'
        >>> ParsedQuery.parse("what did Mel paint in May 2023?").topic
        ''
        """
        time = read_time(text, now)
        topic = " ".join(text.replace(time.text, " ", 1).split()) if time and not names_a_date(time.text) else ""
        if topic and all(_filler(t) for t in terms(topic)):
            topic = ""  # "what did I do yesterday": the time is all it asks about
        # another language's words are not widened to English forms ("die" is not "died")
        language = query_language(text, STOPWORDS)
        return cls(text, tuple(content_terms(terms(text, forms=language is None), language)), topic, time)
