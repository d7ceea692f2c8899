"""Time expressions in a query ("in May 2023", "on 7 May 2023", "last week", "three days ago"), read by a small
grammar into a window of time that search uses as a boost.

A memory is a diary: "what did I decide about the export job last week" should prefer what was written last week,
without the user typing ``--since``. The grammar is English, case-insensitive, and deliberately small: absolute
dates (ISO, day-month-year, month-day-year), a month with or without a year, a year after a preposition, and the
usual relative forms, resolved against ``now``. A month or weekday without a year means the latest one not after
``now``. Whatever it does not understand is ignored: no window, the query ranks as before.

>>> from datetime import datetime
>>> now = datetime(2026, 11, 23, 10, 0)
>>> time_window("what did we change in May 2023?", now)
TimeWindow(start='2023-05-01T00:00:00', end='2023-06-01T00:00:00', text='May 2023')
>>> time_window("the deploy last week", now).start
'2026-11-16T00:00:00'
>>> time_window("retry policy for the ledger", now) is None
True
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # the functions that read a time import datetime: most queries name none (the hook saves ~1 ms)
    from datetime import date, datetime

MONTHS = {name: i for i, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
     ("november", "nov"), ("december", "dec")), start=1) for name in names}
WEEKDAYS = {name: i for i, name in enumerate(
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))}
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3}
UNIT_DAYS = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_NUM = r"(?P<n>\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + ")"
_UNIT = r"(?P<unit>day|week|fortnight|month|year)s?"

_ON = frozenset({"on"})
_NAMED_DAY = frozenset({"yesterday", "today", "tonight", "morning", "afternoon", "evening"})
_RELATIVE_UNIT = frozenset({"week", "weekend", "month", "year"})
#: Words without which a query holds no time expression the grammar reads (with a digit): most queries stop here.
HINT_WORDS = frozenset(MONTHS) | frozenset(WEEKDAYS) | _NAMED_DAY | {"ago"} | _RELATIVE_UNIT
_WORD_RE = re.compile(r"[a-z]+")
#: The four characters outside ASCII that ``re.I`` matches to an ASCII letter (İ ı ſ K), as that letter: the words
#: a query holds are read as the case-insensitive patterns see them.
_ASCII_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})

#: The grammar: (pattern, flags, resolver name, what the query must hold for it to match), tried in order; the first
#: match wins, so the more specific forms come first. "What it must hold" is a digit (``DIGIT``) and/or one of a set
#: of words: a pattern whose words are absent is skipped without being compiled, since compiling all of them costs
#: a one-shot process (the prompt hook) ~10 ms.
DIGIT = "digit"
_MONTHS = frozenset(MONTHS)
GRAMMAR: tuple[tuple[str, int, str, tuple], ...] = (
    (r"\b(?P<y>(?:19|20)\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)\b", 0, "iso_day", (DIGIT,)),
    (rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I, "day_month_year", (DIGIT, _MONTHS)),
    (rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I, "day_month_year", (DIGIT, _MONTHS)),
    (rf"\bon\s+{_MONTH}\s+{_DAY}\b", re.I, "day_month", (DIGIT, _MONTHS, _ON)),
    (rf"\bon\s+(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}\b", re.I, "day_month", (DIGIT, _MONTHS, _ON)),
    (r"\b(?P<y>(?:19|20)\d\d)-(?P<m>[01]\d)\b", 0, "iso_month", (DIGIT,)),
    (rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I, "month_year", (DIGIT, _MONTHS)),
    (rf"\b(?:in|during|since|by|of|before|after|early|late|mid|throughout)\s+(?:the\s+year\s+)?{_YEAR}\b", re.I,
     "year", (DIGIT,)),
    (r"\b(?P<which>yesterday|today|tonight|this morning|this afternoon|this evening)\b", re.I, "named_day",
     (_NAMED_DAY,)),
    (rf"\b{_NUM}\s+{_UNIT}\s+ago\b", re.I, "ago", (frozenset({"ago"}),)),
    (r"\b(?P<which>last|this|past|previous)\s+(?P<unit>week|weekend|month|year)\b", re.I, "relative",
     (_RELATIVE_UNIT,)),
    (r"\b(?:on|last|this|past)\s+(?P<weekday>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I,
     "weekday", (frozenset(WEEKDAYS),)),
    (rf"\b(?:in|during|since|early|late|mid|of|last)\s+{_MONTH}\b(?!\s*\d)", re.I, "month", (_MONTHS,)),
)


@functools.cache
def _pattern(i: int) -> re.Pattern[str]:
    source, flags, _, _ = GRAMMAR[i]
    return re.compile(source, flags)


def _may_match(needs: tuple, words: set[str], digit: bool) -> bool:
    return all(digit if need == DIGIT else not need.isdisjoint(words) for need in needs)


class TimeWindow(NamedTuple):
    """``[start, end)`` as local ISO timestamps, and the words of the query it was read from."""

    start: str
    end: str
    text: str

    def holds(self, ts: str | None) -> bool:
        return ts is not None and self.start <= ts < self.end


def time_window(query: str, now: datetime | None = None) -> TimeWindow | None:
    """The first time expression of ``query`` as a window, or None."""
    words = set(_WORD_RE.findall(query.translate(_ASCII_FOLD).lower()))
    digit = any(ch.isdigit() for ch in query)
    if not digit and HINT_WORDS.isdisjoint(words):
        return None
    if now is None:
        from datetime import datetime

        now = datetime.now()
    for i, (_, _, kind, needs) in enumerate(GRAMMAR):
        if not _may_match(needs, words, digit):
            continue
        for m in _pattern(i).finditer(query):
            span = resolve(kind, m, now.date())
            if span is not None:
                start, end = span
                return TimeWindow(f"{start.isoformat()}T00:00:00", f"{end.isoformat()}T00:00:00", m.group(0))
    return None


def _month_start(year: int, month: int) -> date:
    from datetime import date

    return date(year, month, 1)


def _next_month(day: date) -> date:
    from datetime import date

    return date(day.year + (day.month == 12), day.month % 12 + 1, 1)


def resolve(kind: str, m: re.Match, today: date) -> tuple[date, date] | None:
    """``[start, end)`` of what a match of one of :data:`GRAMMAR`'s patterns names (its resolver ``kind``), seen
    from ``today``; None when it names no day that exists."""
    from datetime import date, timedelta

    g = m.groupdict()
    try:
        if kind == "iso_day":
            day = date(int(g["y"]), int(g["m"]), int(g["d"]))
            return day, day + timedelta(days=1)
        if kind == "day_month_year":
            day = date(int(g["year"]), MONTHS[g["month"].lower()], int(g["day"]))
            return day, day + timedelta(days=1)
        if kind == "day_month":
            month, dom = MONTHS[g["month"].lower()], int(g["day"])
            day = date(today.year, month, dom)
            if day > today:
                day = date(today.year - 1, month, dom)
            return day, day + timedelta(days=1)
        if kind == "iso_month":
            start = _month_start(int(g["y"]), int(g["m"]))
            return start, _next_month(start)
        if kind == "month_year":
            start = _month_start(int(g["year"]), MONTHS[g["month"].lower()])
            return start, _next_month(start)
        if kind == "year":
            return date(int(g["year"]), 1, 1), date(int(g["year"]) + 1, 1, 1)
        if kind == "named_day":
            day = today - timedelta(days=1) if g["which"].lower() == "yesterday" else today
            return day, day + timedelta(days=1)
        if kind == "ago":
            n = int(g["n"]) if g["n"].isdigit() else NUMBERS[g["n"].lower()]
            days = n * UNIT_DAYS[g["unit"].lower()]
            center = today - timedelta(days=days)
            slack = max(1, days // 4)  # "three weeks ago" is about then, not that exact day
            return center - timedelta(days=slack), center + timedelta(days=slack + 1)
        if kind == "relative":
            return _relative(g["which"].lower(), g["unit"].lower(), today)
        if kind == "weekday":
            back = (today.weekday() - WEEKDAYS[g["weekday"].lower()]) % 7 or 7
            day = today - timedelta(days=back)
            return day, day + timedelta(days=1)
        if kind == "month":
            month = MONTHS[g["month"].lower()]
            year = today.year if month <= today.month else today.year - 1
            start = _month_start(year, month)
            return start, _next_month(start)
    except (ValueError, KeyError, OverflowError):
        return None  # "31 February", an unknown word, "5000 years ago" (before year 1): no window
    return None


def _relative(which: str, unit: str, today: date) -> tuple[date, date]:
    from datetime import date, timedelta

    current = which == "this"
    if unit in ("week", "weekend"):
        monday = today - timedelta(days=today.weekday())
        start = monday if current else monday - timedelta(days=7)
        if unit == "weekend":
            start += timedelta(days=5)
            return start, start + timedelta(days=2)
        return start, start + timedelta(days=7)
    if unit == "month":
        start = _month_start(today.year, today.month)
        if not current:
            start = _month_start(today.year - (today.month == 1), (today.month - 2) % 12 + 1)
        return start, _next_month(start)
    year = today.year if current else today.year - 1
    return date(year, 1, 1), date(year + 1, 1, 1)
