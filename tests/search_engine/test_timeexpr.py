import re
from datetime import datetime

import orjson
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from conftest import write
from indexer.base.errors import UsageError
from indexer.pipeline import index
from search_engine.filters import parse_date
from search_engine.search import search
from search_engine.timeexpr import GRAMMAR, resolve, time_window

NOW = datetime(2026, 11, 23, 10, 0)  # a Monday


@pytest.mark.parametrize("query, start, end", [
    ("what changed on 2023-05-07", "2023-05-07", "2023-05-08"),
    ("what did Joanna finish on 7 May 2023?", "2023-05-07", "2023-05-08"),
    ("the outage of May 7th, 2023", "2023-05-07", "2023-05-08"),
    ("What did she accomplish in January 2022?", "2022-01-01", "2022-02-01"),
    ("deploys in dec. 2021", "2021-12-01", "2022-01-01"),
    ("plans for March of 2024", "2024-03-01", "2024-04-01"),
    ("what broke in 2023", "2023-01-01", "2024-01-01"),
    ("the 2024-02 release notes", "2024-02-01", "2024-03-01"),
    ("what did we decide yesterday", "2026-11-22", "2026-11-23"),
    ("the migration last week", "2026-11-16", "2026-11-23"),
    ("notes from this week", "2026-11-23", "2026-11-30"),
    ("what did I do last weekend", "2026-11-21", "2026-11-23"),
    ("the incident last month", "2026-10-01", "2026-11-01"),
    ("budget talks last year", "2025-01-01", "2026-01-01"),
    ("the bug from three days ago", "2026-11-19", "2026-11-22"),
    ("what did we ship 2 weeks ago", "2026-11-06", "2026-11-13"),
    ("the review on Friday", "2026-11-20", "2026-11-21"),
    ("the review last monday", "2026-11-16", "2026-11-17"),
    ("the trip in May", "2026-05-01", "2026-06-01"),
    ("the trip in December", "2025-12-01", "2026-01-01"),
    ("the call on March 3rd", "2026-03-03", "2026-03-04"),
    ("the call on the 3rd of December", "2025-12-03", "2025-12-04"),
    ("what happened on 31 February 2023", "2023-02-01", "2023-03-01"),  # no such day: its month
])
def test_time_expressions_become_windows(query, start, end):
    window = time_window(query, NOW)
    assert window is not None, query
    assert (window.start, window.end) == (f"{start}T00:00:00", f"{end}T00:00:00")
    assert window.text.lower() in query.lower()


@pytest.mark.parametrize("query", [
    "retry policy for the ledger", "it may fail under load", "error 2023 in the parser", "port 8080",
    "we may 2 times retry", "version 2.0.2023", "", "the comet 5000 years ago", "2023 year ago",
])
def test_no_window_without_a_time_expression(query):
    assert time_window(query, NOW) is None


@given(st.text(max_size=200))
def test_any_text_gives_a_window_or_none(text):
    window = time_window(text, NOW)
    assert window is None or window.start < window.end


_FRAGMENTS = st.sampled_from([
    "on", "the", "of", "in", "last", "this", "past", "since", "ago", "days", "weeks", "three", "a", "couple of",
    "May", "may", "dec.", "Sept", "JULY", "Friday", "sunday", "yesterday", "this morning", "weekend", "month",
    "year", "7", "7th", "31", "2023", "1999", "2023-05", "2023-05-07", ",", "-", "x", "é", "7july",
    "on ſunday", "FRİDAY", "ıN", "\u212aa",  # what re.I matches to an ASCII letter
])


def _first_match_of_every_pattern(query: str):
    """The grammar tried in full, every pattern compiled: what time_window answers must not differ from it."""
    for source, flags, kind, _ in GRAMMAR:
        for m in re.finditer(source, query, flags):
            span = resolve(kind, m, NOW.date())
            if span is not None:
                return f"{span[0].isoformat()}T00:00:00", f"{span[1].isoformat()}T00:00:00", m.group(0)
    return None


@given(st.lists(_FRAGMENTS, max_size=8), st.sampled_from([" ", "  ", "\n"]))
def test_skipping_patterns_by_their_words_changes_no_answer(parts, sep):
    query = sep.join(parts)
    window = time_window(query, NOW)
    assert (window and (window.start, window.end, window.text)) == (_first_match_of_every_pattern(query) or None)


def test_search_prefers_hits_inside_the_query_time_window(home, settings):

    from search_engine.filters import Filters

    lines = []
    for i, (day, text) in enumerate([
        ("2023-06-12", "We moved the ledger export job to the replica and raised the busy timeout."),
        ("2023-05-09", "We moved the ledger export job off the primary after the locked database errors."),
        ("2023-07-02", "We moved the ledger export job schedule to two in the morning."),
    ]):
        lines.append(orjson.dumps({"id": f"e{i}", "ts": f"{day}T10:00:00", "session_id": f"s{i}",
                                   "type": "prompt", "content": text}).decode())
    write(home / "events" / "2023-06-12.jsonl", "\n".join(lines) + "\n")
    index(settings, embedder=None)
    plain = search(settings, "when we moved the ledger export job", mode="bm25")
    dated = search(settings, "when we moved the ledger export job in May 2023", mode="bm25")
    assert plain.hits[0].event_id != "e1"
    assert dated.hits[0].event_id == "e1"
    assert {h.event_id for h in dated.hits} == {"e0", "e1", "e2"}  # a boost, not a filter
    # an explicit filter wins over what the query says
    june = search(settings, "ledger export job in May 2023", mode="bm25",
                  filters=Filters.build(since="2023-06-01", until="2023-06-30"))
    assert [h.event_id for h in june.hits] == ["e0"]


@hsettings(max_examples=200, deadline=None)
@given(text=st.text(max_size=30))
def test_any_date_text_parses_or_is_a_usage_error(text):
    try:
        parse_date(text)
    except UsageError:
        pass
