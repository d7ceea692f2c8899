"""Time expressions in a query ("in May 2023", "on 7 May 2023", "last week", "three days ago", "two weeks before
August 11, 2023", "last summer", "in the past ten days", "since March"), read by a small grammar into a window of
time that search uses as a boost.

A memory is a diary: "what did I decide about the export job last week" should prefer what was written last week,
without the user typing ``--since``. The grammar is English, case-insensitive, and deliberately small: absolute
dates (ISO, 2023/05/20, day-month-year, month-day-year, and 20/05/2023 or 05/20/2023 when one side is over 12: in
5/7/2023 the order is the writer's, so it is not read), a month with or without a year, a year after a preposition,
ranges ("between May and July 2023"), parts of a month or year ("early 2024", "late June"), seasons, quarters, the
weeks and weekends of a month, holidays (:data:`HOLIDAYS`: "at Christmas", "on Thanksgiving 2023", "Easter last
year"), the usual relative forms resolved against ``now`` ("over the weekend", "two Saturdays ago", "a few weeks
back", "on the 20th", "the other day", "a week ago Tuesday", "the Tuesday before last", "around this time last
year", "a year ago today"), and an offset from a date or a holiday ("the week before 16 November 2023", "the day
after Christmas"). A month, season, weekday or holiday without a year means the latest one not after ``now``.
``since``, ``after`` and ``before`` a time open the window to the present or to the past. Whatever it does not
understand is ignored: no window, the query ranks as before ("recently", "this time next year"). A holiday's name
that is also an everyday phrase in lower case ("a good friday deploy", "the easter egg") names the day only where it
stands as a time.

An offset from something the memory tells rather than a date ("two days before the concert") is an
:class:`EventAnchor`: search looks the event up and takes the window from its date (:func:`event_anchor`).

A window before a date reaches to that date: what happened "the week before 3 August" is mostly told on 3 August or
just before it, since a memory is written after the fact.

>>> from datetime import datetime
>>> now = datetime(2026, 11, 23, 10, 0)
>>> time_window("what did we change in May 2023?", now)
TimeWindow(start='2023-05-01T00:00:00', end='2023-06-01T00:00:00', text='May 2023')
>>> time_window("the deploy last week", now).start
'2026-11-16T00:00:00'
>>> time_window("what did I fix in the past two weeks", now)[:2]
('2026-11-09T00:00:00', '2026-11-24T00:00:00')
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
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3, "several": 4}
UNIT_DAYS = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}
#: A season's first month (the meteorological seasons of the northern hemisphere: three months each). "Spring" followed
#: by the names of that framework's parts ("in the Spring Boot app") is not a season.
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
#: How far "this time last week / month / year" reaches either side of that day.
THIS_TIME_SLACK = {"week": 1, "month": 4, "year": 15}
ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "last": -1}
#: Where in a month (days, end exclusive; 32 = the month's end) and in a year (months) "early", "mid" and "late"
#: fall. They overlap: "early June" on the 12th still counts, and the window is a preference, not a filter.
MONTH_PARTS = {"early": (1, 16), "beginning": (1, 11), "start": (1, 11), "mid": (8, 24), "middle": (8, 24),
               "late": (16, 32), "end": (21, 32)}
YEAR_PARTS = {"early": (1, 5), "beginning": (1, 3), "start": (1, 3), "mid": (4, 10), "middle": (4, 10),
              "late": (9, 13), "end": (11, 13)}
#: Holidays by name, apostrophes and dots left out: a fixed day ``(month, day)``; the nth weekday of a month
#: ``(month, weekday, nth)``, ``nth`` -1 the last; or ``("easter", days)``, days from Easter Sunday. The US dates
#: where countries differ (Thanksgiving, Mother's Day, Memorial Day, Labor Day): the grammar is English.
HOLIDAYS: dict[str, tuple] = {
    "christmas eve": (12, 24), "christmas": (12, 25), "christmas day": (12, 25), "xmas": (12, 25),
    "boxing day": (12, 26), "new years eve": (12, 31), "new years": (1, 1), "new years day": (1, 1),
    "valentines day": (2, 14), "valentines": (2, 14), "st patricks day": (3, 17), "halloween": (10, 31),
    "independence day": (7, 4), "fourth of july": (7, 4), "thanksgiving": (11, 3, 4), "thanksgiving day": (11, 3, 4),
    "black friday": (11, 3, 4, 1), "memorial day": (5, 0, -1), "labor day": (9, 0, 1), "labour day": (9, 0, 1),
    "mothers day": (5, 6, 2), "fathers day": (6, 6, 3), "easter": ("easter", 0), "easter sunday": ("easter", 0),
    "easter monday": ("easter", 1), "good friday": ("easter", -2), "maundy thursday": ("easter", -3),
    "palm sunday": ("easter", -7),
}


def _month_re(name: str = "month") -> str:
    return rf"(?P<{name}>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"


def _year_re(name: str = "year") -> str:
    return rf"(?P<{name}>(?:19|20)\d\d)"


def _day_re(name: str = "day") -> str:
    return rf"(?P<{name}>[0-3]?\d)(?:st|nd|rd|th)?"


def _holiday_re(name: str = "holiday") -> str:
    """A holiday's name as written: any case, with or without its apostrophe ("Valentine's", "New Years") and the
    dot of "St."."""
    def written(key: str) -> str:
        words = [r"(?:st\.?|saint)" if w == "st" else w[:-1] + "['’]?s" if w in _POSSESSIVE else w
                 for w in key.split()]
        return r"\s+".join(words)

    return rf"(?P<{name}>" + "|".join(written(k) for k in sorted(HOLIDAYS, key=len, reverse=True)) + r")\b"


_POSSESSIVE = frozenset({"years", "valentines", "patricks", "mothers", "fathers"})
_MONTH, _YEAR, _DAY = _month_re(), _year_re(), _day_re()
_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
_NUM = r"(?P<n>\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + ")"
_UNIT = r"(?P<unit>day|week|fortnight|month|year)s?"
_WEEKDAY = r"(?P<weekday>" + "|".join(WEEKDAYS) + ")"
_SEASON = r"(?P<season>" + "|".join(SEASONS) + ")"
#: How far from a date or an event: "two weeks", "a few days", "the week", "the Sunday", "the weekend".
_OFFSET = (rf"(?:{_NUM}\s+{_UNIT}|(?:the|that|last)\s+(?P<span>day|weekend|week|fortnight|month|year|"
           + "|".join(WEEKDAYS) + "))")
_TOWARD = r"\s+(?P<dir>before|after|prior\s+to)\s+"
#: The dates an offset can be taken from, each with its own group names ("ad", "am", "ay": the anchor's).
_ANCHOR_DATES = (
    rf"{_day_re('ad')}\s+(?:of\s+)?{_month_re('am')},?\s+{_year_re('ay')}",
    rf"{_month_re('am')}\s+{_day_re('ad')},?\s+{_year_re('ay')}",
    r"(?P<ay>(?:19|20)\d\d)(?P<sep>[-/])(?P<amn>[01]?\d)(?P=sep)(?P<ad>[0-3]?\d)\b",
    rf"(?:the\s+)?{_day_re('ad')}\s+(?:of\s+)?{_month_re('am')}(?!,?\s*\d)",
    rf"{_month_re('am')}\s+{_day_re('ad')}\b(?!,?\s*\d)",
)

_HOLIDAY_ANCHOR = rf"(?:the\s+)?{_holiday_re('ah')}(?:,?\s+{_year_re('ay')}\b)?"
_ON = frozenset({"on"})
#: The words one of which a holiday's name holds.
_HOLIDAY_WORDS = frozenset({"christmas", "xmas", "easter", "thanksgiving", "halloween", "valentine", "valentines",
                            "year", "years", "day", "friday", "thursday", "sunday", "monday", "july"})
_NAMED_DAY = frozenset({"yesterday", "today", "tonight", "morning", "afternoon", "evening", "night"})
_RELATIVE_UNIT = frozenset({"week", "weekend", "month", "year"})
_TOWARD_WORDS = frozenset({"before", "after", "prior"})
_UNIT_WORDS = frozenset(f"{u}{s}" for u in UNIT_DAYS for s in ("", "s"))
_PART_WORDS = frozenset({*MONTH_PARTS, "mid"})
_MONTHS = frozenset(MONTHS)
_WEEKDAY_WORDS = frozenset(WEEKDAYS)
_SEASON_WORDS = frozenset(SEASONS)
#: A word that opens the window to the present ("since May") or to the past ("before May") when it stands just
#: before a time expression.
_OPEN = r"\b(since|after|before|until|till|prior\s+to)\s+(?:the\s+)?$"
_OPEN_WORDS = frozenset({"since", "after", "before", "until", "till", "prior"})
#: The words without which a query holds no time expression the grammar reads (with a digit): most queries stop
#: here.
HINT_WORDS = (_MONTHS | _WEEKDAY_WORDS | _NAMED_DAY | {"ago"} | _RELATIVE_UNIT | _SEASON_WORDS | {"quarter"}
              | _UNIT_WORDS | _HOLIDAY_WORDS)
_WORD_RE = re.compile(r"[a-z]+")
#: The four characters outside ASCII that ``re.I`` matches to an ASCII letter (İ ı ſ K), as that letter: the words
#: a query holds are read as the case-insensitive patterns see them.
_ASCII_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})

#: The grammar: (pattern, flags, resolver name, what the query must hold for it to match), tried in order; the first
#: match wins, so the more specific forms come first. "What it must hold" is a digit (``DIGIT``) and/or one of each
#: of some sets of words: a pattern whose words are absent is skipped without being compiled, since compiling all
#: of them costs a one-shot process (the prompt hook) ~10 ms.
DIGIT = "digit"
GRAMMAR: tuple[tuple[str, int, str, tuple], ...] = (
    *((rf"\b{_OFFSET}{_TOWARD}{anchor}", re.I, "offset", (DIGIT, _TOWARD_WORDS)) for anchor in _ANCHOR_DATES),
    (rf"\b{_OFFSET}{_TOWARD}{_HOLIDAY_ANCHOR}", re.I, "offset", (_TOWARD_WORDS, _HOLIDAY_WORDS)),
    (r"\bthe\s+day\s+before\s+yesterday\b", re.I, "day_before_yesterday", (frozenset({"yesterday"}),)),
    (r"\b(?P<y>(?:19|20)\d\d)(?P<sep>[-/])(?P<m>[01]?\d)(?P=sep)(?P<d>[0-3]?\d)\b", 0, "iso_day", (DIGIT,)),
    # 20/05/2023 or 05/20/2023: read when one side is over 12; 5/7/2023 (May or July) is not read
    (r"(?<![\d/])(?P<a>[0-3]?\d)/(?P<b>[0-3]?\d)/(?P<y>(?:19|20)\d\d)\b", 0, "numeric_day", (DIGIT,)),
    (r"\b(?:between|from)\s+(?=(?P<rest>[^\n]{1,80}))", re.I, "range",
     (frozenset({"between", "from"}), _MONTHS | {DIGIT})),
    (rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I, "day_month_year", (DIGIT, _MONTHS)),
    (rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I, "day_month_year", (DIGIT, _MONTHS)),
    (rf"\bon\s+(?:{_WEEKDAY},?\s+)?{_MONTH}\s+{_DAY}\b", re.I, "day_month", (DIGIT, _MONTHS, _ON)),
    (rf"\bon\s+(?:{_WEEKDAY},?\s+)?(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}\b", re.I, "day_month",
     (DIGIT, _MONTHS, _ON)),
    (rf"\b(?:the\s+)?(?P<nth>first|second|third|fourth|last|1st|2nd|3rd|4th)\s+week(?P<weekend>end)?\s+of\s+"
     rf"{_MONTH}(?:,?\s+(?:of\s+)?{_YEAR})?\b", re.I, "week_of_month",
     (_MONTHS, frozenset({"week", "weekend"}))),
    (rf"\b(?P<part>early|mid|late|(?:the\s+)?(?:beginning|start|middle|end)\s+of)[-\s]+(?:the\s+)?"
     rf"(?:{_MONTH}(?:,?\s+(?:of\s+)?{_YEAR})?\b(?!\s*\d)|{_year_re('y')}\b|(?P<which>this|last|the)\s+(?P<unit>month|year)\b)",
     re.I, "part", (_PART_WORDS,)),
    (rf"\b(?:q(?P<q>[1-4])(?:\s+(?:of\s+)?{_YEAR})?|(?:the\s+)?(?P<qn>first|second|third|fourth|last)\s+quarter\s+"
     rf"(?:of\s+)?{_year_re('y')}|(?P<which>this|last|previous)\s+quarter)\b", re.I, "quarter",
     (frozenset({"q", "quarter"}),)),
    (rf"\b{_SEASON},?\s+(?:of\s+)?{_YEAR}\b", re.I, "season", (DIGIT, _SEASON_WORDS)),
    (rf"\b(?:(?P<which>last|this|past|previous)\s+|(?:in|during|over|through|throughout)\s+(?:the\s+)?){_SEASON}\b"
     r"(?!\s+(?:boot|framework|cloud|security|batch|data|mvc|beans?|integration|webflux|shell)\b)",
     re.I, "season", (_SEASON_WORDS,)),
    (rf"\b(?:(?P<which>last|this|past)\s+)?{_holiday_re()}(?:,?\s+(?:of\s+)?{_YEAR}\b|\s+(?P<ly>last|this)\s+year\b)?",
     re.I, "holiday", (_HOLIDAY_WORDS,)),
    (r"\b(?P<y>(?:19|20)\d\d)-(?P<m>[01]\d)\b", 0, "iso_month", (DIGIT,)),
    (rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I, "month_year", (DIGIT, _MONTHS)),
    (rf"\b(?:in|during|since|before|after|until|of|throughout)\s+(?:the\s+year\s+)?{_YEAR}\b", re.I,
     "year", (DIGIT,)),
    # "(around) this time last year", "this day last month", "a year ago today": about (or on) that day
    (r"\b(?:(?:around|about|at)\s+)?this\s+(?P<exact>time|day|date)\s+last\s+(?P<unit>week|month|year)\b", re.I,
     "this_time_last", (frozenset({"this"}), _RELATIVE_UNIT)),
    (rf"\b{_NUM}\s+{_UNIT}\s+ago\s+today\b", re.I, "ago_today", (frozenset({"ago"}), frozenset({"today"}))),
    (r"\b(?P<which>yesterday|today|tonight|last night|this morning|this afternoon|this evening)\b", re.I,
     "named_day", (_NAMED_DAY,)),
    (r"\bthe\s+other\s+day\b", re.I, "other_day", (frozenset({"other"}),)),
    (rf"\b{_NUM}\s+{_WEEKDAY}s\s+ago\b", re.I, "weekday", (frozenset({"ago"}),)),
    # "a week ago Tuesday", "two weeks ago last Friday", "the Tuesday before last": weeks before the latest one
    (rf"\b{_NUM}\s+weeks?\s+ago\s+(?:on\s+|last\s+|this\s+past\s+)?{_WEEKDAY}\b", re.I, "weekday_back",
     (frozenset({"ago"}), _WEEKDAY_WORDS)),
    (rf"\b(?:the\s+)?{_WEEKDAY}\s+before\s+last\b", re.I, "weekday_back", (_WEEKDAY_WORDS, frozenset({"before"}))),
    (rf"\b{_NUM}\s+{_UNIT}\s+(?:ago|back)\b", re.I, "ago", (frozenset({"ago", "back"}),)),
    (rf"\b(?:past|last|previous|recent)\s+{_NUM}\s+{_UNIT}\b", re.I, "past", (_UNIT_WORDS,)),
    (r"\b(?:the\s+)?(?P<unit>week|weekend|month|year)\s+before\s+last\b", re.I, "before_last",
     (_RELATIVE_UNIT, frozenset({"before"}))),
    (r"\b(?P<which>last|this|past|previous)\s+(?P<unit>week|weekend|month|year)\b", re.I, "relative",
     (_RELATIVE_UNIT,)),
    (r"\b(?:over|during)\s+the\s+weekend\b", re.I, "the_weekend", (frozenset({"weekend"}),)),
    (rf"\bon\s+the\s+(?P<day>[0-3]?\d)(?:st|nd|rd|th)\b(?!\s+(?:of\s+)?(?:{_MONTH_NAMES}))", re.I,
     "day_of_month", (DIGIT, _ON)),
    # a weekday followed by its date ("on Tuesday, May 16") is read by the date's form
    (rf"\b(?:on|last|this|past)\s+{_WEEKDAY}\b(?!,?\s+(?:the\s+)?(?:\d|(?:{_MONTH_NAMES})\.?\s+\d))", re.I,
     "weekday", (_WEEKDAY_WORDS,)),
    (rf"\b(?:in|during|since|before|after|until|of|last)\s+{_MONTH}\b(?!\s*\d)", re.I, "month", (_MONTHS,)),
)


@functools.cache
def _pattern(i: int) -> re.Pattern[str]:
    source, flags, _, _ = GRAMMAR[i]
    return re.compile(source, flags)


def _may_match(needs: tuple, words: set[str], digit: bool) -> bool:
    """Whether a pattern's needs are met: a digit, and one word of each set (a set holding ``DIGIT`` is also met by
    a digit: "from May…" or "from 3…")."""
    return all(digit if need == DIGIT else (not need.isdisjoint(words) or (DIGIT in need and digit))
               for need in needs)


class TimeWindow(NamedTuple):
    """``[start, end)`` as local ISO timestamps, and the words of the query it was read from."""

    start: str
    end: str
    text: str

    def holds(self, ts: str | None) -> bool:
        return ts is not None and self.start <= ts < self.end

    def after(self, days: int) -> TimeWindow:
        """The ``days`` after the window (when what happened in it is often told).

        >>> TimeWindow("2025-11-14T00:00:00", "2025-11-15T00:00:00", "on Friday").after(2)[:2]
        ('2025-11-15T00:00:00', '2025-11-17T00:00:00')
        """
        from datetime import datetime, timedelta

        end = datetime.fromisoformat(self.end) + timedelta(days=days)
        return TimeWindow(self.end, end.isoformat(timespec="seconds"), self.text)


class EventAnchor(NamedTuple):
    """An offset from an event the query names rather than dates ("two days before the concert"): ``phrase`` is
    what to look the event up by ("the concert"); :meth:`window` gives the window once its date is known."""

    phrase: str
    text: str
    offset: tuple[tuple[str, str | None], ...]  # the offset's groups (n, unit, span, dir), for :func:`offset_window`

    def window(self, day: date) -> TimeWindow:
        start, end = offset_window(dict(self.offset), day)
        return TimeWindow(f"{start.isoformat()}T00:00:00", f"{end.isoformat()}T00:00:00", self.text)


#: The forms in which a memory tells when what it says happened ("yesterday", "on Saturday", "two days ago", "last
#: week", "on 7 May"): what :func:`time_window` reads of a hit's own text, with ``kinds``. The rest of the grammar
#: (offsets, ranges, seasons, holidays…) would cost a one-shot process ~10 ms more to compile, for forms a memory
#: rarely dates itself by.
TOLD_KINDS = frozenset({"day_before_yesterday", "iso_day", "day_month_year", "day_month", "named_day", "other_day",
                        "ago", "before_last", "relative", "the_weekend", "weekday", "month_year", "month"})


def time_window(query: str, now: datetime | None = None, kinds: frozenset[str] | None = None) -> TimeWindow | None:
    """The first time expression of ``query`` (in the grammar's order) as a window, or None; only of the forms
    ``kinds`` (:data:`TOLD_KINDS`) when given."""
    words = set(_WORD_RE.findall(query.translate(_ASCII_FOLD).lower()))
    digit = any(ch.isdigit() for ch in query)
    if not digit and HINT_WORDS.isdisjoint(words):
        return None
    if now is None:
        from datetime import datetime

        now = datetime.now()
    for i, (_, _, kind, needs) in enumerate(GRAMMAR):
        if (kinds is not None and kind not in kinds) or not _may_match(needs, words, digit):
            continue
        for m in _pattern(i).finditer(query):
            span = window_of(kind, m, now.date())
            if span is not None:
                start, end, text = span
                return TimeWindow(f"{start.isoformat()}T00:00:00", f"{end.isoformat()}T00:00:00", text)
    return None


def read_time(query: str, now: datetime | None = None) -> TimeWindow | EventAnchor | None:
    """The time ``query`` names: a window (:func:`time_window`), else an offset from an event the memory tells
    (:func:`event_anchor`), else None. Its ``text`` is the words that name it: the vector list embeds the query
    without them when they count from now or from an event ("yesterday" in a memory was written on another day
    than the one a query means; "the concert" of "two days before the concert" is not what it asks about).

    >>> read_time("which restaurant did I go to yesterday?").text
    'yesterday'
    >>> read_time("what did I buy two days before the concert?").text
    'two days before the concert'
    """
    return time_window(query, now) or event_anchor(query)


def names_a_date(phrase: str) -> bool:
    """Whether ``phrase`` names a month or a year (as an event's spelled-out date does), not only a time counted from
    now or from an event.

    >>> names_a_date("in May 2023"), names_a_date("Q3 2023"), names_a_date("last week"), names_a_date("3 days ago")
    (True, True, False, False)
    """
    words = set(_WORD_RE.findall(phrase.translate(_ASCII_FOLD).lower()))
    return not words.isdisjoint(_MONTHS) or re.search(r"(?:19|20)\d\d", phrase) is not None


_EVENT_ANCHOR = (rf"\b{_OFFSET}{_TOWARD}(?P<phrase>(?:the|my|our|his|her|their|that|this|a|an|i|we|you|he|she|they)"
                 r"\s+[^?!.,;:\n]*[^\W_][^?!.,;:\n]*)")


@functools.cache
def _event_anchor_re() -> re.Pattern[str]:
    return re.compile(_EVENT_ANCHOR, re.I)


def event_anchor(query: str) -> EventAnchor | None:
    """The first offset from an event in ``query`` ("a week after the offsite", "the day before my sister's
    visit"), or None. Search reads :func:`time_window` first: an offset from a date is a window already.

    >>> a = event_anchor("what did I pack two days before the concert?")
    >>> a.phrase, a.text
    ('the concert', 'two days before the concert')
    >>> from datetime import date
    >>> a.window(date(2023, 7, 14))[:2]
    ('2023-07-11T00:00:00', '2023-07-15T00:00:00')
    >>> event_anchor("we talked before the meeting") is None
    True
    """
    words = set(_WORD_RE.findall(query.translate(_ASCII_FOLD).lower()))
    if _TOWARD_WORDS.isdisjoint(words):
        return None
    m = _event_anchor_re().search(query)
    if m is None:
        return None
    phrase = m.group("phrase").strip()
    offset = tuple((k, m.group(k)) for k in ("n", "unit", "span", "dir"))
    return EventAnchor(phrase, m.group(0).strip(), offset)


def _month_start(year: int, month: int) -> date:
    from datetime import date

    return date(year, month, 1)


def _next_month(day: date) -> date:
    from datetime import date

    return date(day.year + (day.month == 12), day.month % 12 + 1, 1)


def _add_months(day: date, months: int) -> date:
    from datetime import date

    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _same_day(day: date, months: int) -> date:
    """The day ``months`` after ``day`` (before it when negative), the month's last day when it is shorter."""
    start = _add_months(day, months)
    return start.replace(day=min(day.day, (_next_month(start) - start).days))


def _units_back(today: date, n: int, unit: str) -> date:
    """The same day ``n`` years or months before ``today`` (a shorter month's last day), or ``n`` days, weeks or
    fortnights before it."""
    from datetime import timedelta

    if unit in ("year", "month"):
        return _same_day(today, -n * (12 if unit == "year" else 1))
    return today - timedelta(days=n * UNIT_DAYS[unit])


def _latest_day(month: int, dom: int, today: date) -> date:
    """Day ``dom`` of ``month`` in the latest year in which it is not after ``today``."""
    from datetime import date

    day = date(today.year, month, dom)
    return day if day <= today else date(today.year - 1, month, dom)


def _latest(month: int, today: date) -> int:
    """The year of the latest ``month`` not after ``today``."""
    return today.year if month <= today.month else today.year - 1


def window_of(kind: str, m: re.Match, today: date) -> tuple[date, date, str] | None:
    """``(start, end, text)`` of a match of one of :data:`GRAMMAR`'s patterns: :func:`resolve`'s window, opened to
    the present by a "since" or "after" just before it and to the past by "before" or "until"."""
    span = resolve(kind, m, today)
    if span is None:
        return None
    start, end = span
    text = m.group(0)
    if kind == "range":
        start, end, text = span[0], span[1], _range_text(m)
    lead = re.compile(_OPEN, re.I).search(m.string, 0, m.start())  # re's cache: compiled when a time is read
    word = (lead.group(1) if lead else text.split(None, 1)[0]).lower()
    if word in _OPEN_WORDS and kind not in ("offset", "range", "before_last"):
        from datetime import date, timedelta

        if word == "since":
            end = max(end, today + timedelta(days=1))
        elif word == "after":
            start, end = end, max(end, today + timedelta(days=1))
        elif word in ("before", "prior"):
            start, end = date(1970, 1, 1), start
        else:  # until, till
            start = date(1970, 1, 1)
        if lead:
            text = m.string[lead.start() : m.end()]
    return (start, end, text) if start < end else None


def resolve(kind: str, m: re.Match, today: date) -> tuple[date, date] | None:
    """``[start, end)`` of what a match of one of :data:`GRAMMAR`'s patterns names (its resolver ``kind``), seen
    from ``today``; None when it names no day that exists."""
    from datetime import date, timedelta

    g = m.groupdict()
    try:
        if kind == "offset":
            return offset_window(g, _anchor_day(g, today))
        if kind == "day_before_yesterday":
            return today - timedelta(days=2), today - timedelta(days=1)
        if kind == "iso_day":
            day = date(int(g["y"]), int(g["m"]), int(g["d"]))
            return day, day + timedelta(days=1)
        if kind == "numeric_day":
            a, b = int(g["a"]), int(g["b"])
            if a <= 12 and b <= 12 and a != b:
                return None  # month or day first is the writer's
            month, dom = (b, a) if a > 12 else (a, b)
            day = date(int(g["y"]), month, dom)
            return day, day + timedelta(days=1)
        if kind == "holiday":
            if not _names_the_holiday(m):
                return None
            held = _holiday_on(g["holiday"], today, g["year"] or g["ly"], g["which"])
            return (held, held + timedelta(days=1)) if held else None
        if kind == "range":
            return _range(g["rest"], today)
        if kind == "day_month_year":
            day = date(int(g["year"]), MONTHS[g["month"].lower()], int(g["day"]))
            return day, day + timedelta(days=1)
        if kind == "day_month":
            day = _latest_day(MONTHS[g["month"].lower()], int(g["day"]), today)
            return day, day + timedelta(days=1)
        if kind == "week_of_month":
            month = MONTHS[g["month"].lower()]
            start = _month_start(int(g["year"]) if g["year"] else _latest(month, today), month)
            nth = ORDINALS[g["nth"].lower()]
            if g["weekend"]:
                saturday = _nth_weekday(start.year, start.month, 5, nth)
                return saturday, saturday + timedelta(days=2)
            if nth < 0:
                last = _next_month(start) - timedelta(days=1)
                return last - timedelta(days=6), last + timedelta(days=1)
            first = start + timedelta(days=7 * (nth - 1))
            return first, first + timedelta(days=7)
        if kind == "part":
            return _part(g, today)
        if kind == "quarter":
            if g["which"]:  # this quarter, the last one
                start = _add_months(_month_start(today.year, today.month - (today.month - 1) % 3),
                                    -3 * (g["which"].lower() != "this"))
                return start, _add_months(start, 3)
            q = int(g["q"]) if g["q"] else ORDINALS[g["qn"].lower()] % 5 or 4
            opens = 3 * q - 2
            year = g["year"] or g["y"]
            start = _month_start(int(year) if year else _latest(opens, today), opens)
            return start, _add_months(start, 3)
        if kind == "season":
            return _season(g["season"].lower(), g.get("year"), (g.get("which") or "").lower(), today)
        if kind == "iso_month":
            start = _month_start(int(g["y"]), int(g["m"]))
            return start, _next_month(start)
        if kind == "month_year":
            start = _month_start(int(g["year"]), MONTHS[g["month"].lower()])
            return start, _next_month(start)
        if kind == "year":
            return date(int(g["year"]), 1, 1), date(int(g["year"]) + 1, 1, 1)
        if kind == "named_day":
            which = " ".join(g["which"].lower().split())
            if which == "last night":  # told late that evening or the morning after
                return today - timedelta(days=1), today + timedelta(days=1)
            day = today - timedelta(days=1) if which == "yesterday" else today
            return day, day + timedelta(days=1)
        if kind == "other_day":  # a day of the past week
            return today - timedelta(days=7), today
        if kind == "the_weekend":  # "over the weekend": the latest that has begun
            saturday = today - timedelta(days=(today.weekday() - 5) % 7)
            return saturday, saturday + timedelta(days=2)
        if kind == "day_of_month":  # "on the 20th": the latest 20th not after today
            dom, start = int(g["day"]), _month_start(today.year, today.month)
            for _ in range(12):
                if dom <= (_next_month(start) - start).days and (day := start.replace(day=dom)) <= today:
                    return day, day + timedelta(days=1)
                start = _add_months(start, -1)
            return None
        if kind == "ago":
            days = _count(g["n"]) * UNIT_DAYS[g["unit"].lower()]
            center = today - timedelta(days=days)
            slack = max(1, days // 4)  # "three weeks ago" is about then, not that exact day
            return center - timedelta(days=slack), center + timedelta(days=slack + 1)
        if kind == "past":
            days = _count(g["n"]) * UNIT_DAYS[g["unit"].lower()]
            return today - timedelta(days=days), today + timedelta(days=1)
        if kind == "before_last":
            return _relative("last", g["unit"].lower(), _relative("last", g["unit"].lower(), today)[0])
        if kind == "relative":
            which, unit = g["which"].lower(), g["unit"].lower()
            if which == "past" and unit != "weekend":  # "in the past month": the 30 days up to today
                return today - timedelta(days=UNIT_DAYS[unit]), today + timedelta(days=1)
            return _relative(which, unit, today)
        if kind in ("weekday", "weekday_back"):
            # the latest such weekday before today; "two Saturdays ago": the one before that; "a week ago Tuesday",
            # "the Tuesday before last": n weeks (one) before the latest
            back = (today.weekday() - WEEKDAYS[g["weekday"].lower()]) % 7 or 7
            n = _count(g["n"]) if g.get("n") else 1
            weeks = n - 1 if kind == "weekday" else n if g.get("n") else 1
            day = today - timedelta(days=back + 7 * weeks)
            return day, day + timedelta(days=1)
        if kind == "this_time_last":
            unit = g["unit"].lower()
            day = _units_back(today, 1, unit)
            slack = 0 if g["exact"].lower() != "time" else THIS_TIME_SLACK[unit]
            return day - timedelta(days=slack), day + timedelta(days=slack + 1)
        if kind == "ago_today":  # "a year ago today": that very day
            day = _units_back(today, _count(g["n"]), g["unit"].lower())
            return day, day + timedelta(days=1)
        if kind == "month":
            month = MONTHS[g["month"].lower()]
            start = _month_start(_latest(month, today), month)
            return start, _next_month(start)
    except (ValueError, KeyError, OverflowError):
        return None  # "31 February", an unknown word, "5000 years ago" (before year 1): no window
    return None


def _count(n: str) -> int:
    return int(n) if n.isdigit() else NUMBERS[" ".join(n.lower().split())]


def _anchor_day(g: dict, today: date) -> date:
    """The date an offset is taken from (the ``ad``/``am``/``ay`` groups; without a year, the latest such day not
    after ``today``)."""
    from datetime import date

    if g.get("ah"):
        day = _holiday_on(g["ah"], today, g.get("ay"))
        if day is None:
            raise ValueError(g["ah"])
        return day
    month = int(g["amn"]) if g.get("amn") else MONTHS[g["am"].lower()]
    if g.get("ay"):
        return date(int(g["ay"]), month, int(g["ad"]))
    return _latest_day(month, int(g["ad"]), today)


def offset_window(g: dict, anchor: date) -> tuple[date, date]:
    """The window an offset (``n`` ``unit``, or a ``span``: "the week", "the Sunday") before or after (``dir``)
    ``anchor`` names. Before a date, the window reaches to that date: what happened then is often told on it."""
    from datetime import timedelta

    after = g["dir"].lower() == "after"
    sign = 1 if after else -1
    one = timedelta(days=1)
    span = (g.get("span") or "").lower()
    if span in WEEKDAYS:
        step = (WEEKDAYS[span] - anchor.weekday()) % 7 or 7 if after else -((anchor.weekday() - WEEKDAYS[span]) % 7 or 7)
        day = anchor + timedelta(days=step)
        return (day, day + one) if after else (day, anchor + one)
    if span == "weekend":
        if after:
            saturday = anchor + timedelta(days=(5 - anchor.weekday()) % 7 or 7)
            return saturday, saturday + 2 * one
        saturday = anchor - timedelta(days=(anchor.weekday() - 5) % 7 or 7)
        if saturday + 2 * one > anchor:
            saturday -= timedelta(days=7)
        return saturday, anchor + one
    if span:
        days = 31 if span == "month" else UNIT_DAYS[span]
        return (anchor + one, anchor + timedelta(days=days + 1)) if after else (anchor - timedelta(days=days),
                                                                                anchor + one)
    days = _count(g["n"]) * UNIT_DAYS[g["unit"].lower()]
    center = anchor + sign * timedelta(days=days)
    slack = timedelta(days=max(1, days // 4))
    return (center - slack, center + slack + one) if after else (center - slack, anchor + one)


def _nth_weekday(year: int, month: int, weekday: int, nth: int) -> date:
    """The ``nth`` ``weekday`` (0 Monday) of a month; ``nth`` -1: its last.

    >>> _nth_weekday(2023, 11, 3, 4), _nth_weekday(2023, 5, 0, -1)
    (datetime.date(2023, 11, 23), datetime.date(2023, 5, 29))
    """
    from datetime import timedelta

    if nth < 0:
        last = _next_month(_month_start(year, month)) - timedelta(days=1)
        return last - timedelta(days=(last.weekday() - weekday) % 7)
    first = _month_start(year, month)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (nth - 1))


def easter(year: int) -> date:
    """Easter Sunday of ``year`` in the Gregorian calendar (the anonymous Gregorian computus).

    >>> easter(2023), easter(2024), easter(2025)
    (datetime.date(2023, 4, 9), datetime.date(2024, 3, 31), datetime.date(2025, 4, 20))
    """
    from datetime import date

    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    lm = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * lm) // 451
    month, day = divmod(h + lm - 7 * m + 114, 31)
    return date(year, month, day + 1)


def holiday_day(name: str, year: int) -> date | None:
    """The day of the holiday ``name`` (as written in a query) in ``year``; None for a name not in
    :data:`HOLIDAYS`.

    >>> holiday_day("Thanksgiving", 2023), holiday_day("Good Friday", 2024), holiday_day("New Year’s Eve", 2022)
    (datetime.date(2023, 11, 23), datetime.date(2024, 3, 29), datetime.date(2022, 12, 31))
    """
    from datetime import date, timedelta

    key = " ".join(re.sub(r"['’.]", "", name.lower()).replace("saint", "st").split())
    rule = HOLIDAYS.get(key)
    if rule is None:
        return None
    if rule[0] == "easter":
        return easter(year) + timedelta(days=rule[1])
    if len(rule) == 2:
        return date(year, rule[0], rule[1])
    return _nth_weekday(year, rule[0], rule[1], rule[2]) + timedelta(days=rule[3] if len(rule) > 3 else 0)


#: Holiday names that are also everyday phrases in lower case ("a good friday deploy", "the easter egg in the CLI"):
#: written so, they name the holiday only where they stand as a time (after "on", "at", "over"…, or with a year).
_EVERYDAY_NAMES = frozenset({"good friday"})
#: the words before a name that make it a time (compiled when a lower-case everyday name is met: rarely)
_AS_TIME = r"\b(?:on|at|over|around|before|after|since|until|till|by|for|during|from)\s+(?:the\s+)?$"


def _names_the_holiday(m: re.Match) -> bool:
    """Whether a match of the holiday pattern names the day: always when capitalised; in lower case, "easter" before
    "egg" is not, nor one of :data:`_EVERYDAY_NAMES` outside a time's place."""
    name = m.group("holiday")
    if not name.islower():
        return True
    if re.match(r"\s+eggs?\b", m.string[m.end():], re.I):
        return False
    key = " ".join(name.split())
    if key not in _EVERYDAY_NAMES:
        return True
    return bool(m.group("which") or m.group("year") or m.group("ly")
                or re.compile(_AS_TIME, re.I).search(m.string, 0, m.start("holiday")))


def _holiday_on(name: str, today: date, year: str | None = None, which: str | None = None) -> date | None:
    """The holiday of ``year`` ("last" or "this" year, or a number), else the latest not after ``today`` (before
    it, with ``which`` "last" or "past": "last Christmas" said on Christmas Day is the year before's)."""
    if year and not year.isdigit():
        return holiday_day(name, today.year - (year.lower() == "last"))
    if year:
        return holiday_day(name, int(year))
    day = holiday_day(name, today.year)
    strict = (which or "").lower() in ("last", "past")
    if day is not None and (day > today or (strict and day == today)):
        day = holiday_day(name, today.year - 1)
    return day


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
            start = _add_months(start, -1)
        return start, _next_month(start)
    year = today.year if current else today.year - 1
    return date(year, 1, 1), date(year + 1, 1, 1)


def _part(g: dict, today: date) -> tuple[date, date]:
    """"early June", "mid-2024", "the end of last year": the part of that month or year (:data:`MONTH_PARTS`,
    :data:`YEAR_PARTS`)."""
    from datetime import date, timedelta

    part = g["part"].lower().split()[-2 if " of" in g["part"].lower() else 0]
    if g["month"] or (g["unit"] or "").lower() == "month":
        if g["month"]:
            month = MONTHS[g["month"].lower()]
            start = _month_start(int(g["year"]) if g["year"] else _latest(month, today), month)
        else:
            start = _relative(g["which"].lower().replace("the", "this"), "month", today)[0]
        first, last = MONTH_PARTS[part]
        end = _next_month(start) if last > 28 else start + timedelta(days=last - 1)
        return start + timedelta(days=first - 1), end
    year = int(g["y"]) if g["y"] else today.year - (g["which"].lower() == "last")  # "the year": this one
    first, last = YEAR_PARTS[part]
    return date(year, first, 1), _add_months(date(year, 1, 1), last - 1)


def _season(season: str, year: str | None, which: str, today: date) -> tuple[date, date]:
    """A season's three months: of ``year`` (winter: the one whose January is in that year), "this" one (of this
    year), "last" one (the latest that has ended), or else the latest that has begun."""
    first = SEASONS[season]
    if year:
        start = _month_start(int(year) - (first == 12), first)
        return start, _add_months(start, 3)
    start = _month_start(today.year, first)
    if which == "this":
        if first == 12 and today.month < 3:
            start = _month_start(today.year - 1, 12)
        return start, _add_months(start, 3)
    while start > today or (which in ("last", "past", "previous") and _add_months(start, 3) > today):
        start = _add_months(start, -12)
    return start, _add_months(start, 3)


_FIELDS = (  # (pattern, has day, has month, has year), tried in order at the start of a range's side
    (rf"{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", True, True, True),
    (rf"{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", True, True, True),
    (rf"{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", False, True, True),
    (rf"(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}\b", True, True, False),
    (rf"{_MONTH}\s+{_DAY}\b", True, True, False),
    (rf"{_MONTH}\b", False, True, False),
    (rf"{_YEAR}\b", False, False, True),
    (rf"(?:the\s+)?{_DAY}\b", True, False, False),
)


@functools.cache
def _fields_re(i: int) -> re.Pattern[str]:
    return re.compile(_FIELDS[i][0], re.I)


_JOIN = r"\s*(?:and|to|until|till|through|thru|-|–)\s*"


def _fields(text: str, pos: int) -> tuple[dict, int] | None:
    """The day, month and year written at ``text[pos:]`` (those it gives) and where they end."""
    for i, (_, has_day, has_month, has_year) in enumerate(_FIELDS):
        m = _fields_re(i).match(text, pos)
        if m:
            g = m.groupdict()
            return ({"day": int(g["day"]) if has_day else None,
                     "month": MONTHS[g["month"].lower()] if has_month else None,
                     "year": int(g["year"]) if has_year else None}, m.end())
    return None


def _range_sides(rest: str) -> tuple[dict, dict, int] | None:
    first = _fields(rest, 0)
    if first is None:
        return None
    join = re.compile(_JOIN, re.I).match(rest, first[1])
    second = _fields(rest, join.end()) if join else None
    if second is None:
        return None
    return first[0], second[0], second[1]


def _range_text(m: re.Match) -> str:
    """The words of a range: from "between" to the end of its second side (the pattern only looks ahead at them,
    so that a "from" that starts no range leaves the next one to be tried)."""
    sides = _range_sides(m.group("rest"))
    return m.string[m.start() : m.start("rest") + (sides[2] if sides else 0)]


def _range(rest: str, today: date) -> tuple[date, date] | None:
    """"between May and July 2023", "from 3 to 7 May", "between August 11 and August 15 2023": from the first
    side's start to the second side's end, the first taking what it leaves out (month, year) from the second."""
    from datetime import date, timedelta

    sides = _range_sides(rest)
    if sides is None:
        return None
    a, b, _ = sides
    if b["month"] is None and b["year"] is None:
        return None  # "between 3 and 7": not a date
    if a["month"] is None and a["year"] is None:
        a["month"] = b["month"]
    if b["year"] is None:
        b["year"] = a["year"] if a["year"] is not None else _latest(b["month"], today)
    if a["year"] is None:
        a["year"] = b["year"] - (a["month"] is not None and b["month"] is not None and a["month"] > b["month"])
    start = date(a["year"], a["month"] or 1, a["day"] or 1)
    if b["day"] is not None:
        end = date(b["year"], b["month"] or 12, b["day"]) + timedelta(days=1)
    elif b["month"] is not None:
        end = _next_month(date(b["year"], b["month"], 1))
    else:
        end = date(b["year"] + 1, 1, 1)
    return (start, end) if start < end else None
