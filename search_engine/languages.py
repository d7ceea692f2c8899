"""The language a query is written in, told by its function words, and that language's stopwords.

A developer asks in their own language as often as in English: "wie teste ich die Wiederherstellung von
Vaultwarden?". Read with English stopwords alone, "wie", "ich", "die" and "von" are content terms: the lexical list
looks for them in every German note, the prompt hook's gate wants half the prompt's content words in a hit (a bar
no German sentence clears), and "die" is even widened to the English forms "died" and "dying".

:func:`query_language` counts the query's words among a few frequent function words of each language
(:data:`MARKERS`: articles, pronouns, prepositions, auxiliaries, the words a sentence cannot do without, and none
that is also an English word: not German "die", "was", "will", French "son", Italian "come"). A language needs two
of them, and more than the English stopwords the query holds; a technical query of English words and names is
English. Its full list then comes from the ``stop-words`` package (one file a language, read on first use):
:func:`stopwords`.

>>> english = frozenset("the a at does why how".split())
>>> query_language("wie teste ich die Wiederherstellung von Vaultwarden?", english)
'de'
>>> query_language("why does the deploy die at night", english), query_language("Vaultwarden backup restore", english)
(None, None)
>>> "die" in stopwords("de") and "wiederherstellung" not in stopwords("de")
True
"""

from __future__ import annotations

import functools
import re

_WORD_RE = re.compile(r"[^\W\d_]+")

#: A language's most frequent function words that English does not share (a grammar list, not any data set's).
MARKERS: dict[str, frozenset[str]] = {
    lang: frozenset(words.split())
    for lang, words in {
        "de": "der das und ist nicht ich wie mit von ein eine einen auf für wir sie dem den zu im auch wenn oder "
              "kann bei nach noch wird sind werden mein meine wo warum welche habe haben muss soll",
        "fr": "le les des une est et pour pas je que qui dans sur avec mon ma mes ce cette il elle nous vous "
              "comment pourquoi quel quelle où peut faut être avoir du au aux",
        "es": "el los las una es para por que qué cómo del mis este esta pero porque cuál dónde puedo tengo "
              "está son",
        "it": "il gli della delle una è che sono mio mia questo questa perché quale può dei del degli nel alla",
        "pt": "os uma é para que não meu minha este esta isso porque qual onde tem posso está são dos das",
        "nl": "het een en niet ik hoe wat voor zijn op te mijn waarom welke waar kan moet wordt ook dat deze",
        "sv": "och är att det som inte jag hur vad för på mitt varför vilken kan ska har",
        "da": "og det som ikke jeg hvordan hvad på hvorfor hvilken hvor kan skal har",
        "nb": "og det som ikke jeg hvordan hva på mitt hvorfor hvilken hvor kan skal har",
        "fi": "ja ei se että mitä miten miksi missä minä minun kun tai voi pitää oli olen",
        "pl": "jest nie się że jak na dla mój moja czy dlaczego gdzie który może",
        "cs": "je není se že jak na můj moje proč kde který mám může",
        "hu": "az és nem hogy hogyan miért hol egy ez én nekem lehet kell volt",
        "ro": "și este că cum în cu pe pentru meu mea unde trebuie sunt",
        "tr": "ve bir bu için ile ne nasıl neden nerede hangi benim değil mı mi",
        "id": "yang di ini itu untuk dengan tidak saya bagaimana apa mengapa kenapa dimana bisa",
        "ca": "el els les una és que amb meu meva aquest aquesta perquè quin puc",
        "ru": "и в не на что как я с для это мой моя почему где какой есть можно нужно",
        "uk": "і в не на що як я з для це мій моя чому де який є можна треба",
    }.items()
}
#: ``stop-words`` names Norwegian Bokmål ``nb`` and Indonesian ``id``, as here; every code above has a list there.


def query_language(text: str, english: frozenset[str]) -> str | None:
    """The code of the language ``text`` is written in when it is not English (see the module docstring), else
    None. ``english``: the English stopwords to weigh against (:data:`search_engine.query.STOPWORDS`)."""
    words = [w.lower() for w in _WORD_RE.findall(text)]
    if len(words) < 2:
        return None
    best, count = None, 1
    for lang, markers in MARKERS.items():
        n = sum(1 for w in words if w in markers)
        if n > count:
            best, count = lang, n
    if best is None or sum(w in english for w in words) >= count:
        return None
    return best


@functools.lru_cache(maxsize=8)
def stopwords(lang: str) -> frozenset[str]:
    """The stopwords of ``lang`` (a code of :data:`MARKERS`): the ``stop-words`` package's list and the markers;
    the markers alone where the package is not installed."""
    try:
        from stop_words import get_stop_words  # type: ignore[import-untyped]
        words = frozenset(w.lower() for w in get_stop_words(lang))
    except Exception:  # not installed, or a language it lacks: the markers still hold the commonest words
        words = frozenset()
    return words | MARKERS.get(lang, frozenset())
