"""Search filters. The store applies them inside both the lexical and the vector query (on the local index:
:func:`indexer.store.sqlite_read.filter_sql`), so a selective filter never starves a list."""

from __future__ import annotations

import re
from typing import NamedTuple

from indexer.base.errors import UsageError
from indexer.base.types import KINDS

_RELATIVE_RE = re.compile(r"^(\d+)([dwmy])$")


def parse_date(value: str | None, *, end: bool = False) -> str | None:
    """A filter bound as a local ISO timestamp: ``YYYY-MM-DD``, a full ISO timestamp, ``today``, ``yesterday`` or
    a relative age such as ``7d``, ``2w``, ``3m``, ``1y``. An ``end`` date covers that whole day.

    >>> parse_date("2026-11-02", end=True)
    '2026-11-02T23:59:59'
    """
    if value is None or not value.strip():
        return None
    from datetime import date, datetime, timedelta  # here: the prompt hook's filters take no dates

    text = value.strip().lower()
    today = date.today()
    m = _RELATIVE_RE.match(text)
    if text in ("today", "yesterday"):
        day = today - timedelta(days=1 if text == "yesterday" else 0)
    elif m:
        n, unit = int(m.group(1)), m.group(2)
        try:
            day = today - timedelta(days=n * {"d": 1, "w": 7, "m": 30, "y": 365}[unit])
        except (OverflowError, ValueError):  # 9999999d: before the year 1
            raise UsageError(f"invalid date {value!r}: {value.strip()} reaches before the year 1; use a smaller "
                             "age or a date") from None
    else:
        try:
            if len(text) == 10:
                day = date.fromisoformat(text)
            else:
                return datetime.fromisoformat(value.strip()).strftime("%Y-%m-%dT%H:%M:%S")
        except ValueError:
            raise UsageError(f"invalid date {value!r}: use YYYY-MM-DD, an ISO timestamp, today, or 7d/2w/3m/1y") from None
    return f"{day.isoformat()}T23:59:59" if end else f"{day.isoformat()}T00:00:00"


class Filters(NamedTuple):
    """What narrows a search. :meth:`build` makes them from what a user typed (dates read, the kind checked);
    :func:`search_engine.search.search` checks the kind of any it is given (:meth:`checked`)."""

    kind: str | None = None
    category: str | None = None
    session: str | None = None
    project: str | None = None
    since: str | None = None
    until: str | None = None
    all_status: bool = False
    exclude_session: str | None = None

    def checked(self) -> Filters:
        """These filters, once their kind is known to exist (else a :class:`UsageError` that names it)."""
        if self.kind is not None and self.kind not in KINDS:
            raise UsageError(f"invalid kind {self.kind!r}: use one of {', '.join(KINDS)}")
        return self

    @classmethod
    def build(cls, *, since: str | None = None, until: str | None = None, **kw) -> Filters:
        """Filters from what a user typed; a :class:`UsageError` for a range that ends before it starts (it
        would match nothing, and say nothing of why).

        >>> Filters.build(since="2026-11-20", until="2026-11-02")
        Traceback (most recent call last):
        ...
        indexer.base.errors.UsageError: --since 2026-11-20 is after --until 2026-11-02: nothing can match; swap them
        """
        start, end = parse_date(since), parse_date(until, end=True)
        if start is not None and end is not None and start > end:
            raise UsageError(f"--since {start[:10] if start.endswith('T00:00:00') else start} is after --until "
                             f"{end[:10] if end.endswith('T23:59:59') else end}: nothing can match; swap them")
        return cls(since=start, until=end, **kw).checked()

    @property
    def selective(self) -> bool:
        """True when something beyond the default status filter narrows the set."""
        return any((self.kind, self.category, self.session, self.project, self.since, self.until))
