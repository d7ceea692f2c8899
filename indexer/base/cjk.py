"""CJK text made searchable by FTS5 without a word segmenter.

Chinese, Japanese and Korean runs are rewritten, for the full-text index only, as overlapping character bigrams
separated by spaces ("東京大学" -> "東京 京大 大学"); the unicode61 tokenizer then sees each bigram as a token. A
query's CJK run becomes the phrase of its bigrams, which matches exactly the texts holding it as a substring,
and a 2-character word is a single bigram token. Latin text passes through unchanged, so one FTS table serves
both, with porter stemming for English words.

>>> index_form("see 東京大学 now")
'see  東京 京大 大学  now'
>>> query_bigrams("大学")
['大学']
"""

from __future__ import annotations

import functools
import re

_CJK_CLASS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003134f"
)


@functools.cache
def cjk_run_re() -> re.Pattern[str]:
    """The pattern of a CJK run, compiled on first use: its class spans most of the BMP, ~1 ms to build, and a
    process that meets no CJK text (most prompts and memories: the hook) never needs it (:func:`may_hold_cjk`)."""
    return re.compile(f"[{_CJK_CLASS}]+")


#: The UTF-8 forms of :data:`_CJK_CLASS`, by their first byte, and their second where the first is shared with
#: other scripts: E1 84-87 (Jamo); E3-E9 (kana, compatibility Jamo, ideographs; E3 also holds CJK punctuation);
#: EA A5 and EA B0-ED 9E (Hangul); EF A4-AB and EF BD-BE (compatibility ideographs, half-width katakana); F0 A0-B1
#: (the supplementary ideographs). A byte pattern of 256 entries compiles in microseconds.
_CJK_UTF8_RE = re.compile(rb"[\xe3-\xe9\xeb\xec]|\xe1[\x84-\x87]|\xea[\xa5\xb0-\xbf]|\xed[\x80-\x9e]"
                          rb"|\xef[\xa4-\xab\xbd\xbe]|\xf0[\xa0-\xb1]")


def may_hold_cjk(text: str) -> bool:
    """False when no character of ``text`` is in a CJK range, found without the pattern (from the text's UTF-8
    bytes); True says only that one may be (CJK punctuation passes too). Typographic quotes, dashes and emoji,
    common in English memories, no longer cost the ~1 ms of building :func:`cjk_run_re`.

    >>> may_hold_cjk("café"), may_hold_cjk("東京"), may_hold_cjk("’quoted’ — ok 🙂"), may_hold_cjk("「」")
    (False, True, False, True)
    """
    return not text.isascii() and _CJK_UTF8_RE.search(text.encode("utf-8", "surrogatepass")) is not None


def cjk_runs(text: str) -> list[str]:
    """The CJK runs of ``text``, in order.

    >>> cjk_runs("東京 deploy 한국")
    ['東京', '한국']
    """
    return cjk_run_re().findall(text) if may_hold_cjk(text) else []


#: Above this share of CJK letters, an English-only model's vector of a text is noise (measured on the CJK
#: evaluation sets: hybrid recall@5 0.57 against BM25's 0.96 in Korean): such a query runs on BM25 alone, and such a
#: chunk is not embedded by that model.
CJK_SHARE_LIMIT = 0.3


def cjk_share(text: str) -> float:
    """Share of CJK characters among the letters of ``text``.

    >>> cjk_share("東京 deploy")
    0.25
    """
    if not may_hold_cjk(text):
        return 0.0
    letters = [ch for ch in text if ch.isalpha()]
    run = cjk_run_re()
    return sum(1 for ch in letters if run.match(ch)) / len(letters) if letters else 0.0


def english_only(model_id: str | None) -> bool:
    """True for a model that cannot represent CJK text (the bundled all-MiniLM-L6-v2)."""
    return model_id is not None and "MiniLM" in model_id


def model_reads(model_id: str | None, text: str) -> bool:
    """False when ``model_id`` cannot represent ``text``: mostly CJK for an English-only model."""
    return not (english_only(model_id) and cjk_share(text) > CJK_SHARE_LIMIT)


def has_cjk(text: str) -> bool:
    return may_hold_cjk(text) and cjk_run_re().search(text) is not None


def query_bigrams(run: str) -> list[str]:
    """The tokens a CJK run is indexed as: its bigrams, or the lone character of a 1-character run."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def index_form(text: str) -> str:
    """The text as the full-text index sees it: CJK runs replaced by their space-separated bigrams."""
    if not has_cjk(text):
        return text
    return cjk_run_re().sub(lambda m: " " + " ".join(query_bigrams(m.group(0))) + " ", text)
