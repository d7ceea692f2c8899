"""The dashboard's events-per-day chart as plain geometry, drawn as inline SVG by a template.

Rendered on the server, so the page needs no chart library, no CDN and no script; the template escapes every
label like any other value.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta


@dataclass(frozen=True)
class Bar:
    day: str
    count: int
    x: float
    y: float
    width: float
    height: float


def day_bars(by_day: dict[str, int], *, days: int = 30, end: date | None = None, width: float = 600,
             height: float = 120) -> list[Bar]:
    """One bar per day for the ``days`` days ending at ``end`` (the latest day with events, else today), days
    without events included at zero; the tallest bar fills ``height``.

    >>> [(b.day, b.count, b.height) for b in day_bars({"2026-11-20": 4, "2026-11-22": 2}, days=3)]
    [('2026-11-20', 4, 120.0), ('2026-11-21', 0, 0.0), ('2026-11-22', 2, 60.0)]
    """
    if end is None:
        known = [d for d in by_day if _is_day(d)]
        end = date.fromisoformat(max(known)) if known else date.today()
    slot = width / days
    top = max([by_day.get((end - timedelta(days=i)).isoformat(), 0) for i in range(days)] + [1])
    bars = []
    for i in range(days):
        day = (end - timedelta(days=days - 1 - i)).isoformat()
        count = by_day.get(day, 0)
        h = round(height * count / top, 1)
        bars.append(Bar(day, count, round(i * slot + 1, 1), round(height - h, 1), round(max(slot - 2, 1), 1), h))
    return bars


def _is_day(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True
