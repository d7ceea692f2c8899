import re
from datetime import datetime

import orjson
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from conftest import write
from indexer.base.errors import UsageError
from indexer.base.settings import resolve_settings
from indexer.pipeline import index
from search_engine.filters import parse_date
from search_engine.search import search
from search_engine.timeexpr import GRAMMAR, TOLD_KINDS, event_anchor, read_time, time_window, window_of

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
    # relative forms
    ("what did I fix the day before yesterday", "2026-11-21", "2026-11-22"),
    ("what did we eat last night", "2026-11-22", "2026-11-24"),  # told late that evening or the next morning
    ("the deploy the week before last", "2026-11-09", "2026-11-16"),
    ("what did I ship in the past ten days", "2026-11-13", "2026-11-24"),
    ("notes from the last couple of weeks", "2026-11-09", "2026-11-24"),
    # open ranges
    ("what changed since March", "2026-03-01", "2026-11-24"),
    ("everything since 2025", "2025-01-01", "2026-11-24"),
    ("incidents after May 2023", "2023-06-01", "2026-11-24"),
    ("what did we use before June 2024", "1970-01-01", "2024-06-01"),
    ("the old schema until March 2024", "1970-01-01", "2024-04-01"),
    # ranges
    ("the trips between May and July 2023", "2023-05-01", "2023-08-01"),
    ("Where was John between August 11 and August 15 2023?", "2023-08-11", "2023-08-16"),
    ("leave from 3 to 7 May 2023", "2023-05-03", "2023-05-08"),
    ("budgets from 2021 to 2023", "2021-01-01", "2024-01-01"),
    ("notes from the planning meeting from May to July 2023", "2023-05-01", "2023-08-01"),
    ("the freeze between November and February", "2025-11-01", "2026-03-01"),
    # seasons, parts, quarters, weeks of a month
    ("the offsite in the summer of 2022", "2022-06-01", "2022-09-01"),
    ("what did we do last summer", "2026-06-01", "2026-09-01"),
    ("plans for this winter", "2026-12-01", "2027-03-01"),
    ("the outage last winter", "2025-12-01", "2026-03-01"),
    ("the ski trip in winter 2024", "2023-12-01", "2024-03-01"),  # the winter whose January is in 2024
    ("the reorg during the fall", "2026-09-01", "2026-12-01"),
    ("the trip in early June", "2026-06-01", "2026-06-16"),
    ("the migration in late 2022", "2022-09-01", "2023-01-01"),
    ("a mid-2023 release", "2023-04-01", "2023-10-01"),
    ("what shipped at the end of last year", "2025-11-01", "2026-01-01"),
    ("the Q3 2023 roadmap", "2023-07-01", "2023-10-01"),
    ("the first quarter of 2024", "2024-01-01", "2024-04-01"),
    ("what did we ship last quarter", "2026-07-01", "2026-10-01"),
    ("goals for this quarter", "2026-10-01", "2027-01-01"),
    ("the last week of February 2024", "2024-02-23", "2024-03-01"),
    ("Which country was Tim visiting in the second week of November?", "2026-11-08", "2026-11-15"),
    # an offset from a date: the window reaches that date, on which what happened before is often told
    ("Where was Tim in the week before 16 November 2023?", "2023-11-09", "2023-11-17"),
    ("the puppy she got two weeks before August 11, 2023", "2023-07-25", "2023-08-12"),
    ("on the Sunday before October 25, 2022", "2022-10-23", "2022-10-26"),
    ("what did Maria do the weekend before 10 April 2023", "2023-04-08", "2023-04-11"),
    ("three days after 2023-05-07", "2023-05-09", "2023-05-12"),
    ("the day after 1 March 2024", "2024-03-02", "2024-03-03"),
    ("three days after 2023/05/07", "2023-05-09", "2023-05-12"),
    ("what did we plan the week before Thanksgiving", "2025-11-20", "2025-11-28"),
    ("the day after Christmas 2024", "2024-12-26", "2024-12-27"),
    # numeric dates: year first, or a side over 12 (5/7/2023 is not read: see the test below)
    ("what did I order on 2023/05/20?", "2023-05-20", "2023-05-21"),
    ("the deploy of 2023-5-7", "2023-05-07", "2023-05-08"),
    ("what happened on 20/05/2023", "2023-05-20", "2023-05-21"),
    ("what did I do on 05/20/2023", "2023-05-20", "2023-05-21"),
    # a weekday with its date is read by the date
    ("what did I do on Tuesday, May 16?", "2026-05-16", "2026-05-17"),
    ("the call on Friday the 3rd of October", "2026-10-03", "2026-10-04"),
    # holidays: the latest not after now, or of the year given
    ("what did we eat at Christmas", "2025-12-25", "2025-12-26"),
    ("gifts for Christmas last year", "2025-12-25", "2025-12-26"),
    ("the party on New Year's Eve", "2025-12-31", "2026-01-01"),
    ("what did I cook for Thanksgiving", "2025-11-27", "2025-11-28"),
    ("the trip at Easter 2024", "2024-03-31", "2024-04-01"),
    ("the hike on Good Friday", "2026-04-03", "2026-04-04"),
    ("what did we do on Memorial Day", "2026-05-25", "2026-05-26"),
    ("the barbecue on the Fourth of July", "2026-07-04", "2026-07-05"),
    ("dinner on valentines day", "2026-02-14", "2026-02-15"),
    ("the parade on St. Patrick’s Day 2023", "2023-03-17", "2023-03-18"),
    # other relative forms
    ("where did I go two Saturdays ago", "2026-11-14", "2026-11-15"),
    ("what did I fix a few weeks back", "2026-10-28", "2026-11-08"),
    ("what did I read over the weekend", "2026-11-21", "2026-11-23"),
    ("what did I do on the 20th", "2026-11-20", "2026-11-21"),
    ("the invoice due on the 30th", "2026-10-30", "2026-10-31"),
    ("the thing I mentioned the other day", "2026-11-16", "2026-11-23"),
    ("the first weekend of May", "2026-05-02", "2026-05-04"),
    ("the last weekend of August 2023", "2023-08-26", "2023-08-28"),
    ("what did I change in the past month", "2026-10-24", "2026-11-24"),
    # weeks before a weekday, and the same time a unit ago (NOW is Monday 23 November 2026)
    ("what did I do a week ago Tuesday", "2026-11-10", "2026-11-11"),
    ("the call two weeks ago last Friday", "2026-11-06", "2026-11-07"),
    ("the bug from the Tuesday before last", "2026-11-10", "2026-11-11"),
    ("what was I working on around this time last year", "2025-11-08", "2025-12-09"),
    ("what did I fix this time last month", "2026-10-19", "2026-10-28"),
    ("what did I ship this day last year", "2025-11-23", "2025-11-24"),
    ("what did I commit a year ago today", "2025-11-23", "2025-11-24"),
    # an everyday phrase in lower case names its holiday where it stands as a time
    ("what did we ship on good friday", "2026-04-03", "2026-04-04"),
    ("the Easter egg hunt with the kids", "2026-04-05", "2026-04-06"),
])
def test_time_expressions_become_windows(query, start, end):
    window = time_window(query, NOW)
    assert window is not None, query
    assert (window.start, window.end) == (f"{start}T00:00:00", f"{end}T00:00:00")
    assert window.text.lower() in query.lower()


@pytest.mark.parametrize("query", [
    "retry policy for the ledger", "it may fail under load", "error 2023 in the parser", "port 8080",
    "we may 2 times retry", "version 2.0.2023", "", "the comet 5000 years ago", "2023 year ago",
    "between the two of us", "from the main branch", "the bug in the spring boot app", "late binding in python",
    "an early return", "the end of the file", "fall back to the cache", "the first quarter of the test suite",
    "two days before the concert",  # an offset from an event: see event_anchor
    "what did I do on 5/7/2023",  # May or July: the writer's order is unknown
    "pip 2024.1.3 broke the build", "a 3/4 share", "on the 3 servers", "the new year plan",
    "a christmasy theme", "a good friday deploy broke prod", "the easter egg in the CLI", "this time next year",
])
def test_no_window_without_a_time_expression(query):
    assert time_window(query, NOW) is None


@given(st.text(max_size=200))
def test_any_text_gives_a_window_or_none(text):
    window = time_window(text, NOW)
    assert window is None or window.start < window.end


_OFFSET_FRAGMENTS = st.sampled_from([
    "two days", "a week", "the day", "the Sunday", "before", "after", "prior to", "the", "my", "concert", "?", ",",
    "7 May 2023", "May 7", "the 3rd of June", "between", "from", "and", "to"])


@given(st.lists(st.one_of(_OFFSET_FRAGMENTS, st.text(max_size=8)), max_size=10))
def test_any_text_parses_with_its_time_phrase_inside_it(parts):
    """Offsets, ranges and anything else: what is read as a time is words of the query, and parsing never fails."""
    from search_engine.query import ParsedQuery

    text = " ".join(parts)
    time = read_time(text, NOW)
    assert time is None or time.text in text
    anchor = event_anchor(text)
    assert anchor is None or (anchor.text in text and anchor.phrase in text)
    parsed = ParsedQuery.parse(text, NOW)
    assert parsed.text == text and (parsed.topic == "" or len(parsed.topic) <= len(text))


_FRAGMENTS = st.sampled_from([
    "on", "the", "of", "in", "last", "this", "past", "since", "ago", "days", "weeks", "three", "a", "couple of",
    "May", "may", "dec.", "Sept", "JULY", "Friday", "sunday", "yesterday", "this morning", "weekend", "month",
    "year", "7", "7th", "31", "2023", "1999", "2023-05", "2023-05-07", ",", "-", "x", "é", "7july",
    "on ſunday", "FRİDAY", "ıN", "\u212aa",  # what re.I matches to an ASCII letter
    "before", "after", "since", "until", "between", "from", "and", "to", "summer", "fall", "winter", "Q3",
    "quarter", "first", "second", "week", "early", "mid-2023", "late", "end", "of the", "night", "few", "2022",
    "Christmas", "Christmas Eve", "Easter", "New Year's", "Memorial Day", "Fourth of July", "Thanksgiving",
    "other day", "back", "Saturdays", "2023/05/20", "20/05/2023", "5/7/2023", "the 20th", "weekend", "over",
    "Tuesday,", "St.", "Patrick's Day", "good friday", "egg", "this time", "this day", "around", "today",
])


def _first_match_of_every_pattern(query: str):
    """The grammar tried in full, every pattern compiled: what time_window answers must not differ from it."""
    for source, flags, kind, _ in GRAMMAR:
        for m in re.finditer(source, query, flags):
            span = window_of(kind, m, NOW.date())
            if span is not None:
                return f"{span[0].isoformat()}T00:00:00", f"{span[1].isoformat()}T00:00:00", span[2]
    return None


@given(st.lists(_FRAGMENTS, max_size=8), st.sampled_from([" ", "  ", "\n"]))
def test_skipping_patterns_by_their_words_changes_no_answer(parts, sep):
    query = sep.join(parts)
    window = time_window(query, NOW)
    assert (window and (window.start, window.end, window.text)) == (_first_match_of_every_pattern(query) or None)


@pytest.mark.parametrize("query, phrase, anchor_day, start, end", [
    ("what did I buy two days before the concert?", "the concert", "2025-06-14", "2025-06-11", "2025-06-15"),
    ("what did we decide a week after the offsite", "the offsite", "2025-09-18", "2025-09-24", "2025-09-27"),
    ("what did we decide the week after the offsite", "the offsite", "2025-09-18", "2025-09-19", "2025-09-26"),
    ("the day before my sister's visit", "my sister's visit", "2025-11-08", "2025-11-07", "2025-11-09"),
    ("what did I read the weekend after the launch", "the launch", "2025-03-05", "2025-03-08", "2025-03-10"),
    ("what did I fix three weeks after I started the job", "I started the job", "2025-03-03", "2025-03-19",
     "2025-03-30"),
])
def test_an_offset_from_an_event_is_read_with_the_event_s_words(query, phrase, anchor_day, start, end):
    from datetime import date

    anchor = event_anchor(query)
    assert anchor is not None and anchor.phrase == phrase and anchor.text in query
    window = anchor.window(date.fromisoformat(anchor_day))
    assert (window.start, window.end) == (f"{start}T00:00:00", f"{end}T00:00:00")
    assert read_time(query) == anchor


def test_the_time_words_are_left_out_of_what_the_vector_list_embeds():
    from search_engine.query import ParsedQuery

    parsed = ParsedQuery.parse("Which service did I deploy to production last week?", NOW)
    assert parsed.embedded == "Which service did I deploy to production ?"
    assert [t.text for t in parsed.terms] == ["service", "deploy", "production", "last", "week"]
    assert ParsedQuery.parse("what did I do yesterday", NOW).embedded == "what did I do yesterday"
    # a month or a year stays: events are embedded with their date spelled out ("7 May 2023")
    assert ParsedQuery.parse("what did Mel paint in May 2023?", NOW).embedded == "what did Mel paint in May 2023?"
    assert ParsedQuery.parse("what did I buy two days before the concert?", NOW).embedded == "what did I buy ?"
    assert ParsedQuery.parse("retry policy", NOW).embedded == "retry policy"


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


def test_a_hit_s_own_time_is_read_in_the_forms_a_memory_tells_it():
    written = datetime(2026, 11, 18, 12, 0)
    assert time_window("On Saturday I went hiking", written, TOLD_KINDS)[:2] == ("2026-11-14T00:00:00",
                                                                              "2026-11-15T00:00:00")
    assert time_window("we ate out yesterday", written, TOLD_KINDS).text == "yesterday"
    for text in ("the week before Christmas", "between May and July", "in the summer of 2022"):
        assert time_window(text, written) is not None and time_window(text, written, TOLD_KINDS) is None, text


def test_an_event_counts_in_the_window_of_the_time_it_tells(home, settings):
    """Told on Wednesday 18 November of a hike on Saturday the 14th: the hike happened "the weekend before last"
    (14-15 November, seen from Monday the 23rd) though it is dated after it."""
    lines = [orjson.dumps({"id": f"e{i}", "ts": ts, "session_id": f"s{i}", "type": "prompt", "content": text}).decode()
             for i, (ts, text) in enumerate([
                 ("2026-11-02T09:00:00", "Today I went hiking at Pine Ridge."),
                 ("2026-11-18T12:00:00", "On Saturday I went hiking at Lost Lake; the ridge was windy and the trail was "
                                         "muddy after two days of rain, so we turned back early."),
                 ("2026-11-18T12:30:00", "A year ago I went hiking at Eagle Peak with my brother."),
                 ("2026-11-16T08:00:00", "Yesterday I went hiking at Bear Creek and lost the trail in the woods "
                                         "for an hour before we found the river again."),
                 *((f"2026-10-{10 + i:02d}T10:00:00", text) for i, text in enumerate(FILLER)),
             ])]
    write(home / "events" / "2026-11-18.jsonl", "\n".join(lines) + "\n")
    index(settings, embedder=None)
    plain = search(settings, "where did I go hiking", mode="bm25", now=NOW)
    dated = search(settings, "where did I go hiking the weekend before last", mode="bm25", now=NOW, explain=True)
    assert [h.event_id for h in plain.hits].index("e1") >= 2
    assert {h.event_id for h in dated.hits[:2]} == {"e1", "e3"}  # the two that tell of that weekend
    boosts = {h.event_id: e.boosts for h, e in zip(dated.hits, dated.explain)}
    assert boosts["e1"] == ("time 3",)
    assert boosts["e0"] == boosts["e2"] == ()  # "a year ago" does not lie inside that weekend
    assert {"e0", "e2"} <= set(boosts)
    # told the day after, of the day before: raised once, by the time it tells, not again as told after the window
    assert boosts["e3"] == ("time 3",)


def test_a_night_told_the_next_morning_counts_in_the_day_it_began(home, settings):
    """"Last night", written on the morning of the 12th, is the evening of the 11th: a query naming the 11th raises
    it as of that day (its own window runs to the morning after); a night told on the 13th does not count."""
    lines = [orjson.dumps({"id": f"e{i}", "ts": ts, "session_id": f"s{i}", "type": "prompt", "content": text}).decode()
             for i, (ts, text) in enumerate([
                 ("2026-11-12T08:30:00", "Hey, I finally watched the whole space documentary series last night, "
                                         "all four episodes in one go, and the ending was great."),
                 ("2026-11-13T08:30:00", "I watched another documentary last night, about deep sea fish."),
                 ("2026-11-02T20:00:00", "We watched a documentary about volcanoes."),
                 *((f"2026-10-{10 + i:02d}T10:00:00", text) for i, text in enumerate(FILLER)),
             ])]
    write(home / "events" / "2026-11-12.jsonl", "\n".join(lines) + "\n")
    index(settings, embedder=None)
    dated = search(settings, "which documentary did I watch on 11 November 2026", mode="bm25", now=NOW, explain=True)
    boosts = {h.event_id: e.boosts for h, e in zip(dated.hits, dated.explain)}
    assert boosts["e0"] == ("time 3",)
    assert "time 3" not in boosts["e1"] and "time 3" not in boosts["e2"]
    assert dated.hits[0].event_id == "e0"


@hsettings(max_examples=200, deadline=None)
@given(text=st.text(max_size=30))
def test_any_date_text_parses_or_is_a_usage_error(text):
    try:
        parse_date(text)
    except UsageError:
        pass


FILLER = ("rotate the staging database password", "the export job timed out twice", "lunch with the design team",
          "review the retry policy", "renew the TLS certificate", "the flaky login test again", "plan the sprint",
          "book a dentist appointment", "the CI cache is cold", "write the quarterly summary")


def _purchases(home, with_concert: bool = True):
    lines = [orjson.dumps({"id": f"e{i}", "ts": f"{day}T18:00:00", "session_id": f"s{i}", "type": "prompt",
                           "content": text}).decode()
             for i, (day, text) in enumerate([
                 ("2025-03-02", "I ordered new headphones for the office, the noise-cancelling kind."),
                 ("2025-06-12", "For running I ordered new headphones: the old earbuds kept falling out on the long "
                                "weekend runs along the river, and the left one stopped charging."),
                 ("2025-09-20", "I ordered new headphones, the old ones broke again, noise-cancelling this time."),
                 *([("2025-06-14", "Saw the Arctic Monkeys concert tonight, what a show"),
                    ("2025-06-14", "Write me a short post about the concert")] if with_concert else []),
                 *((f"2025-0{1 + n % 9}-1{n % 10}", f"Note {n}: {topic}") for n, topic in enumerate(FILLER)),
             ])]
    write(home / "events" / "2025-06-12.jsonl", "\n".join(lines) + "\n")
    index(resolve_settings(home), embedder=None)
    return resolve_settings(home)


def test_search_dates_the_event_a_query_counts_from(home):
    """"two days before the concert": the memory's best match for "the concert" dates the window, and the
    headphones ordered then rise above those that match the words better (BM25 on the real index). The concert's
    own events, on its day, are not raised: they are what the query counts from."""
    settings = _purchases(home)
    query = "which headphones did I order two days before the concert?"
    now = datetime(2025, 11, 20)
    found = search(settings, query, mode="bm25", k=6, explain=True, now=now)
    assert found.hits[0].event_id == "e1"
    assert found.explain[0].boosts == ("time 3",)
    why = {h.event_id: e.boosts for h, e in zip(found.hits, found.explain)}
    assert why["e3"] == () and why["e4"] == ()  # the concert and the post about it, both dated 14 June
    plain = search(settings, "which headphones did I order", mode="bm25", k=5, now=now)
    assert [h.event_id for h in plain.hits].index("e1") >= 2


def test_an_event_the_memory_does_not_hold_dates_nothing(home):
    settings = _purchases(home, with_concert=False)
    found = search(settings, "which headphones did I order two days before the concert?", mode="bm25", k=5,
                   explain=True, now=datetime(2025, 11, 20))
    assert all(not e.boosts for e in found.explain)


def test_a_parsed_query_given_another_now_is_read_as_of_that_now(home):
    """The prompt hook passes a query parsed already; a caller that also passes ``now`` gets its time read as of
    that ``now``, not as of when it was parsed ("last week" of 18 June 2025 holds the order of 12 June)."""
    from search_engine.query import ParsedQuery

    settings = _purchases(home)
    query = "which headphones did I order last week"
    then = datetime(2025, 6, 18)
    by_text = search(settings, query, mode="bm25", k=5, explain=True, now=then)
    by_parsed = search(settings, ParsedQuery.parse(query), mode="bm25", k=5, explain=True, now=then)
    assert by_text.hits[0].event_id == by_parsed.hits[0].event_id == "e1"
    assert by_parsed.explain[0].boosts == ("time 3",)
