"""What a chunk is embedded as, hashed as, and indexed as for BM25.

Notes, facts and records are embedded as their title and text. Events are embedded as a conversation is read,
who wrote them and when, then their text, then the turn they reply to (:func:`reply_of`), shortened; their BM25
title also carries the date, spelled out, so a question that names a day or a month ("what did Melanie paint on
13 October 2023?") finds the events of that day. The turn replied to is never indexed for BM25: it is another
speaker's words. Dates are spelled in English whatever the locale, so content hashes are the same on every
machine.

>>> embed_input("auth", "Tokens expire after 1h.")
'auth\\nTokens expire after 1h.'
>>> embed_input("prompt · Caroline", "I went to a support group.", "Caroline", "2023-05-07T13:56:00")
'Caroline on 7 May 2023: I went to a support group.'
>>> embed_input("response · Mel", "Yes, twice a week.", "Mel", None, "Do you still run?")
'Mel: Yes, twice a week.\\n(in reply to: Do you still run?)'
>>> fts_title("event", "prompt · Caroline", "2023-05-07T13:56:00"), fts_title("note", "Deploys", "2023-05-07")
('prompt · Caroline · 7 May 2023', 'Deploys')
"""

from __future__ import annotations

from typing import NamedTuple

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


def spoken_date(ts: str | None) -> str | None:
    """``2023-05-07T13:56:00`` -> ``7 May 2023`` (None when ``ts`` holds no date)."""
    if not ts or len(ts) < 10:
        return None
    try:
        year, month, day = int(ts[:4]), int(ts[5:7]), int(ts[8:10])
    except ValueError:
        return None
    if not 1 <= month <= 12:
        return None
    return f"{day} {MONTHS[month - 1]} {year}"


def embed_input(title: str, text: str, speaker: str | None = None, ts: str | None = None, reply_to: str = "") -> str:
    """The text a chunk is embedded (and content-hashed) as.

    A note or fact (no ``speaker``) is its title and text. An event is who wrote it and when, then its text: the
    dense model then matches "what did Caroline say in May" and a turn that does not name its speaker (measured on
    LoCoMo: vector turn recall@5 0.33 -> 0.44). Then ``reply_to``, the turn it answers (already shortened by
    :func:`reply_of`): "Yes, twice a week" alone says nothing of running. It comes last, so a long chunk loses it
    to the model's input limit rather than its own words.
    """
    if speaker is None:
        return f"{title}\n{text}" if title else text
    day = spoken_date(ts)
    said = f"{speaker} on {day}: {text}" if day else f"{speaker}: {text}"
    return f"{said}\n(in reply to: {reply_to})" if reply_to else said


def content_hash(title: str, text: str, speaker: str | None = None, ts: str | None = None, reply_to: str = "") -> str:
    """xxh3-128 of :func:`embed_input`: a vector is computed once per distinct content and model, and the same
    words in reply to another turn are another content."""
    import xxhash  # here: the read path (the prompt hook's) hashes nothing

    return xxhash.xxh3_128_hexdigest(embed_input(title, text, speaker, ts, reply_to).encode("utf-8", "surrogatepass"))


#: Characters of the turn replied to that an event is embedded with (cut at a word, see :func:`shorten`).
REPLY_CHARS = 200
#: The event types that are turns of a conversation: the others (a tool observation) reply to a turn but are none.
TURN_TYPES = ("prompt", "response")


def shorten(text: str, limit: int = REPLY_CHARS) -> str:
    """``text`` on one line, cut at the last word boundary within ``limit`` characters, with "…" when cut.

    >>> shorten("Did you   go to the\\nlake last week?", 20)
    'Did you go to the…'
    """
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit)
    return flat[: cut if cut > limit // 2 else limit].rstrip() + "…"


#: What an event without a named speaker is attributed to, by its type (any other type: the type itself, e.g.
#: ``tool``): a role, not a name.
ROLE_OF_TYPE = {"prompt": "user", "response": "assistant"}


def is_role(speaker: str, category: str) -> bool:
    """Whether an event's ``speaker`` is only the role its type gives it (``user``, ``assistant``, ``tool``…), not
    a name its metadata carried.

    >>> is_role("user", "prompt"), is_role("tool", "tool"), is_role("Caroline", "prompt")
    (True, True, False)
    """
    return speaker == ROLE_OF_TYPE.get(category, category)


class Turn(NamedTuple):
    """The latest turn of a session, as :func:`reply_of` needs it: who said it, its text (its first chunk's), and
    the turn it replied to. A named tuple: the prompt hook's cold path imports this module."""

    speaker: str | None
    text: str
    reply_to: str = ""


def reply_of(last: Turn | None, speaker: str | None) -> str:
    """The turn an event by ``speaker`` replies to, given the session's latest turn before it (``None``: there is
    none), shortened: that turn when another speaker said it, else the one it replied to (a speaker's second
    message in a row answers the same turn as the first).

    A response replies to its prompt, a prompt to the previous response; a tool observation (speaker ``tool``)
    to the latest turn, the request it carries out.

    >>> q = Turn("Mel", "Do you still run?")
    >>> reply_of(q, "Jon"), reply_of(Turn("Jon", "Yes.", q.text), "Jon"), reply_of(None, "Jon")
    ('Do you still run?', 'Do you still run?', '')
    """
    if last is None:
        return ""
    return shorten(last.text) if last.speaker != speaker else last.reply_to


def fts_title(kind: str, title: str, ts: str | None) -> str:
    """The title column of the full-text index: an event's title and its date (measured on LoCoMo: session
    recall@5 0.833 -> 0.852, and 0.80 -> 0.94 for the questions that name a date). A note's date is often only
    its file's mtime, so notes keep their title alone."""
    day = spoken_date(ts) if kind == "event" else None
    return f"{title} · {day}" if day else title
