"""Temporal questions in the style of LongMemEval, written for memsearch: one user's memory of a year and a half of
chats with a coding agent, where the same kinds of things happen again and again (dinner out, a deploy, a book
finished, a hike, a flaky test fixed…) and only the time a question names tells which one it asks about.

The memory is a Claude Code user's event log: the user's prompt tells what happened, on the day or one to four days
later in their own words ("On Saturday I went hiking at…"), and the agent answers. Each question names its time the
way people do ("last weekend", "in the summer of 2024", "the week before 1 August 2025", "two days before the
concert", "at Christmas last year"); its gold is the prompt that tells the event the question means, read by a
person, not by memsearch's grammar. The other events of the same kind fall outside that time, so a search that does
not understand the time can only guess. Some forms are ones the grammar does not read (Christmas): they are here
because people say them.

Every question belongs to a group for the form of its time expression, and to ``told-in-window`` or
``told-after-window``: whether the prompt telling its event was written inside the time it names.
The memory and the questions are made by a seeded generator: the same on every machine.
"""

from __future__ import annotations

import json
import random
from datetime import date, datetime, time, timedelta
from typing import NamedTuple

NOW = datetime(2025, 11, 20, 10, 0)  # a Thursday: when every question is asked
FIRST_DAY = date(2024, 5, 1)  # the memory's first day
PROJECT = "timeline"


class Kind(NamedTuple):
    """A kind of event: what the user says happened (``{x}`` the specific thing, ``{when}`` how they say when), the
    agent's answer, and the question's stem (``{t}`` the time expression)."""

    said: str
    answer: str
    question: str
    things: tuple[str, ...]


KINDS: dict[str, Kind] = {
    "dinner": Kind("{when} I had dinner at {x} with Sam. The food was great, remind me to book it again for Mom's "
                   "birthday.", "Noted: I'll remind you to book it for your mom's birthday.",
                   "Which restaurant did I have dinner at {t}?",
                   ("Luigi's Trattoria", "Sakura Sushi Bar", "The Green Fork", "El Camino Cantina", "Bombay Spice",
                    "Harbor Grill", "Pho Saigon", "Le Petit Bistro", "Smokehouse 88")),
    "deploy": Kind("{when} I deployed the {x} to production. Can you draft the release note for the changelog?",
                   "Here is a draft release note for the changelog.",
                   "Which service did I deploy to production {t}?",
                   ("billing service", "search indexer", "auth gateway", "notification worker", "payments API",
                    "reporting dashboard", "image resizer", "feature-flag service")),
    "book": Kind("{when} I finished reading {x}. Give me three discussion questions for my book club.",
                 "Here are three discussion questions for your book club.",
                 "Which book did I finish reading {t}?",
                 ("Project Hail Mary", "The Pragmatic Programmer", "Dune", "Educated", "Thinking, Fast and Slow",
                  "The Overstory", "Designing Data-Intensive Applications", "Piranesi")),
    "hike": Kind("{when} I went hiking at {x}. My knees hurt a bit on the way down, any stretching tips?",
                 "A few stretches for sore knees after a long descent.",
                 "Where did I go hiking {t}?",
                 ("Mount Tam", "Eagle Peak", "the Pine Ridge trail", "Cedar Falls", "Lost Lake", "Granite Canyon",
                  "Bear Mountain")),
    "flaky": Kind("{when} I fixed the flaky test {x}: it depended on the wall clock. How do I freeze time in pytest?",
                  "Use a fixture that freezes time, for example with time-machine.",
                  "Which flaky test did I fix {t}?",
                  ("test_invoice_rounding", "test_login_redirect", "test_cache_expiry", "test_webhook_retry",
                   "test_csv_export", "test_rate_limiter", "test_session_timeout")),
    "visit": Kind("{when} {x} came to visit and stayed for the weekend. Suggest a quick weeknight recipe for guests.",
                  "Here is a quick weeknight recipe for guests.",
                  "Who came to visit me {t}?",
                  ("my sister Anna", "my parents", "my cousin Leo", "my brother Tom", "my old roommate Priya",
                   "my aunt Ruth")),
    "dentist": Kind("{when} the dentist said I need {x}. What questions should I ask before booking it?",
                    "Questions to ask your dentist before booking the treatment.",
                    "What did the dentist say I need {t}?",
                    ("a crown on a molar", "a deep cleaning", "a wisdom tooth out", "a night guard",
                     "two small fillings", "a root canal")),
    "movie": Kind("{when} I watched {x}. Recommend something similar for next time.",
                  "A few films in a similar vein.",
                  "Which movie did I watch {t}?",
                  ("Arrival", "Knives Out", "Spirited Away", "The Martian", "Past Lives", "Heat", "Paddington 2")),
    "purchase": Kind("{when} I bought {x}. How do I register it for the warranty?",
                     "Steps to register it for the warranty.",
                     "What did I buy {t}?",
                     ("a standing desk", "noise-cancelling headphones", "a new road bike", "an espresso machine",
                      "a mechanical keyboard", "a robot vacuum", "a 4K monitor")),
    "talk": Kind("{when} I went to a meetup talk about {x}. Summarise the key ideas I should follow up on.",
                 "The key ideas to follow up on.",
                 "What was the meetup talk I went to {t} about?",
                 ("WebAssembly on the server", "Postgres query planning", "Rust async runtimes",
                  "observability with OpenTelemetry", "property-based testing", "feature flags at scale")),
}

#: One-off events that other questions take their time from ("two days before the concert").
ANCHORS = (
    (date(2025, 6, 14), "Tonight I finally saw Arctic Monkeys in concert at the Greek Theatre! Help me write a "
                        "short post about the concert.", "Here is a short post about the concert."),
    (date(2025, 9, 18), "Our team offsite was today at Half Moon Bay: planning for next year. Summarise the "
                        "offsite decisions from my notes.", "A summary of the offsite decisions."),
)


class Spec(NamedTuple):
    kind: str
    expression: str  # how the question says when
    group: str  # the expression's form
    day: date  # when the event the question means happened
    start: date  # the window a person reads the expression as: [start, end)
    end: date
    question: str = ""  # when the kind's question stem does not fit


def _d(text: str) -> date:
    return date.fromisoformat(text)


def _spec(kind: str, expression: str, group: str, day: str, start: str | None = None,
          end: str | None = None, question: str = "") -> Spec:
    d = _d(day)
    return Spec(kind, expression, group, d, _d(start) if start else d, _d(end) if end else d + timedelta(days=1),
                question)


#: The questions, with the window a person reads each expression as, seen from NOW (Thursday 20 November 2025).
SPECS = (
    _spec("dinner", "yesterday", "relative day", "2025-11-19"),
    _spec("dinner", "on 14 March 2025", "date", "2025-03-14"),
    _spec("dinner", "last weekend", "relative week", "2025-11-15", "2025-11-15", "2025-11-17"),
    _spec("dinner", "in the summer of 2024", "season", "2024-07-20", "2024-06-01", "2024-09-01"),
    _spec("deploy", "the day before yesterday", "relative day", "2025-11-18"),
    _spec("deploy", "last week", "relative week", "2025-11-12", "2025-11-10", "2025-11-17"),
    _spec("deploy", "in early October", "part of a month", "2025-10-03", "2025-10-01", "2025-10-16"),
    _spec("deploy", "in Q2 2025", "quarter", "2025-05-20", "2025-04-01", "2025-07-01"),
    _spec("deploy", "before June 2024", "open range", "2024-05-10", "2024-05-01", "2024-06-01"),
    _spec("book", "last month", "relative month", "2025-10-21", "2025-10-01", "2025-11-01"),
    _spec("book", "in 2024", "year", "2024-09-10", "2024-01-01", "2025-01-01"),
    _spec("book", "the week before 1 August 2025", "offset from a date", "2025-07-28", "2025-07-25", "2025-08-01"),
    _spec("book", "a couple of months ago", "ago", "2025-09-20", "2025-09-05", "2025-10-06"),
    _spec("hike", "last summer", "season", "2025-07-12", "2025-06-01", "2025-09-01"),
    _spec("hike", "in the spring of 2024", "season", "2024-05-18", "2024-03-01", "2024-06-01"),
    _spec("hike", "three weeks ago", "ago", "2025-10-30", "2025-10-26", "2025-11-03"),
    _spec("hike", "on Sunday", "weekday", "2025-11-16"),
    _spec("flaky", "this morning", "relative day", "2025-11-20"),
    _spec("flaky", "on Monday", "weekday", "2025-11-17"),
    _spec("flaky", "in late 2024", "part of a year", "2024-11-05", "2024-09-01", "2025-01-01"),
    _spec("flaky", "in April", "month", "2025-04-09", "2025-04-01", "2025-05-01"),
    _spec("visit", "the week before last", "relative week", "2025-11-08", "2025-11-03", "2025-11-10"),
    _spec("visit", "at Christmas last year", "holiday", "2024-12-25", "2024-12-23", "2024-12-28"),
    _spec("visit", "in March 2025", "month and year", "2025-03-08", "2025-03-01", "2025-04-01"),
    _spec("visit", "between August and October 2024", "range", "2024-09-21", "2024-08-01", "2024-11-01"),
    _spec("dentist", "two weeks ago", "ago", "2025-11-06", "2025-11-02", "2025-11-10"),
    _spec("dentist", "in January", "month", "2025-01-15", "2025-01-01", "2025-02-01"),
    _spec("dentist", "in the first week of September", "week of a month", "2025-09-03", "2025-09-01", "2025-09-08"),
    _spec("dentist", "in late June", "part of a month", "2025-06-24", "2025-06-16", "2025-07-01"),
    _spec("movie", "last night", "relative day", "2025-11-19"),
    _spec("movie", "on Friday", "weekday", "2025-11-14"),
    _spec("movie", "in December 2024", "month and year", "2024-12-28", "2024-12-01", "2025-01-01"),
    _spec("movie", "in the fall of 2024", "season", "2024-10-12", "2024-09-01", "2024-12-01"),
    _spec("purchase", "two days before the concert", "offset from an event", "2025-06-12", "2025-06-11",
          "2025-06-14"),
    _spec("purchase", "the day after the offsite", "offset from an event", "2025-09-19"),
    _spec("purchase", "in the past few days", "past n", "2025-11-18", "2025-11-16", "2025-11-21"),
    _spec("purchase", "in mid-2024", "part of a year", "2024-06-22", "2024-05-01", "2024-09-01"),
    _spec("talk", "earlier this month", "relative month", "2025-11-05", "2025-11-01", "2025-11-21"),
    _spec("talk", "two weeks before 1 March 2025", "offset from a date", "2025-02-15", "2025-02-12", "2025-02-19"),
    _spec("talk", "between May and July 2025", "range", "2025-06-05", "2025-05-01", "2025-08-01"),
    _spec("talk", "since October", "open range", "2025-10-16", "2025-10-01", "2025-11-21",
          "Which meetup talks have I been to {t}?"),
    _spec("dinner", "on Thanksgiving", "holiday", "2024-11-28"),
    _spec("book", "over the weekend", "relative week", "2025-11-16", "2025-11-15", "2025-11-17"),
    _spec("movie", "two Saturdays ago", "weekday", "2025-11-08"),
    _spec("hike", "on 26/04/2025", "date", "2025-04-26"),
    _spec("flaky", "a few weeks back", "ago", "2025-10-29", "2025-10-16", "2025-11-06"),
    _spec("dentist", "a week ago Tuesday", "weekday", "2025-11-11"),
    _spec("purchase", "around this time last year", "this time last year", "2024-11-14", "2024-11-05", "2024-12-06"),
)

#: Other things the user asks the agent about, on other days: the rest of the memory.
FILLER = (
    "Help me write a regex that matches ISO dates in log lines.",
    "How should I structure pytest fixtures for a database that is slow to start?",
    "Explain the difference between a process pool and a thread pool in Python.",
    "Review this SQL query: it scans the whole orders table.",
    "What is a good naming scheme for feature branches?",
    "Draft an email asking the platform team for more CI runners.",
    "Why does my Docker image rebuild every layer after a small change?",
    "Suggest a structure for a README of an internal CLI tool.",
    "How do I profile memory use of a long-running Python worker?",
    "Write a bash one-liner that finds the ten largest files in a folder.",
    "What are the trade-offs of UUIDv7 keys against serial integers?",
    "Help me plan a one-week sprint for migrating the logging library.",
    "How do I make a Git hook that runs the linter only on changed files?",
    "Explain how HTTP caching headers interact with a CDN.",
    "What should a good incident postmortem template contain?",
    "Summarise the pros and cons of monorepos for a ten-person team.",
    "How do I paginate a large API result without missing rows?",
    "Write a haiku about waiting for a build.",
    "What is the cleanest way to retry a flaky network call with backoff?",
    "Give me a checklist for reviewing a pull request that touches authentication.",
    "How can I speed up my Jest tests that spin up a server each time?",
    "Help me estimate how much disk the metrics database needs for a year.",
    "How do I rotate a leaked API key safely across three services?",
    "Outline a talk on what our team learned from the last outage.",
    "What is a reasonable on-call rotation for four engineers?",
    "Explain vector clocks as if I were new to distributed systems.",
    "Compare two approaches for schema migrations with zero downtime.",
    "How do I stop my laptop fan spinning up during video calls?",
    "Suggest a weekly routine to keep my inbox under control.",
    "Turn these meeting notes into a list of action items.",
)

def _when(day: date, told: date) -> str:
    lag = (told - day).days
    return "Today" if lag == 0 else "Yesterday" if lag == 1 else f"On {day.strftime('%A')}"


#: Events of each kind besides those the questions ask about, on days outside every window its questions name.
EXTRA = 6


class Built(NamedTuple):
    events: list[dict]  # the memory's events, oldest first
    questions: list[tuple[str, str, dict[str, float], tuple[str, ...]]]  # (qid, text, gold, groups)
    told_by: list[tuple[str, date, str]]  # (kind, the day it happened, the id of the prompt that tells it)


def build(seed: int = 7) -> Built:
    """The memory and its questions. Each question's event is told on its day or up to four days later (never
    after NOW); each kind gets :data:`EXTRA` more events on days outside every window its questions name."""
    rng = random.Random(seed)
    by_kind: dict[str, list[Spec]] = {}
    for spec in SPECS:
        by_kind.setdefault(spec.kind, []).append(spec)
    span_days = (NOW.date() - FIRST_DAY).days
    happenings: list[tuple[date, str, str, Spec | None]] = []  # (day, kind, thing, spec it answers)
    for kind, specs in by_kind.items():
        things = list(KINDS[kind].things)
        rng.shuffle(things)
        things *= 2  # people go back to the same restaurant
        for spec in specs:
            happenings.append((spec.day, kind, things.pop(), spec))
        extra = 0
        while extra < EXTRA:
            day = FIRST_DAY + timedelta(days=rng.randrange(span_days - 5))
            if any(s.start - timedelta(days=5) <= day < s.end + timedelta(days=5) for s in specs):
                continue
            happenings.append((day, kind, things.pop(), None))
            extra += 1
    events: list[dict] = []
    told_by: list[tuple[str, date, str]] = []  # (kind, day it happened, the prompt telling it)
    sessions = 0

    def session(when: datetime, said: str, answer: str) -> str:
        nonlocal sessions
        sessions += 1
        sid = f"s{sessions:04d}"
        events.append({"id": f"{sid}-u", "ts": when.isoformat(), "session_id": sid, "project": PROJECT,
                       "type": "prompt", "content": said})
        events.append({"id": f"{sid}-a", "ts": (when + timedelta(minutes=1)).isoformat(), "session_id": sid,
                       "project": PROJECT, "type": "response", "content": answer})
        return f"{sid}-u"

    for day, kind, thing, _spec_of in sorted(happenings, key=lambda h: (h[0], h[1])):
        k = KINDS[kind]
        latest = (NOW.date() - day).days
        lag = 0 if latest <= 0 else min(rng.choice((0, 0, 1, 2, 3, 4)), latest - 1 if latest > 1 else 0)
        told = day + timedelta(days=lag)
        hour = 21 if lag == 0 and kind in ("dinner", "movie") else (8 if told == NOW.date() else rng.randrange(9, 19))
        said = k.said.format(when=_when(day, told), x=thing)
        uid = session(datetime.combine(told, time(hour, rng.randrange(60))), said, k.answer)
        told_by.append((kind, day, uid))
    for day, said, answer in ANCHORS:
        session(datetime.combine(day, time(20, 30)), said, answer)
    for _ in range(240):
        day = FIRST_DAY + timedelta(days=rng.randrange(span_days))
        session(datetime.combine(day, time(rng.randrange(8, 20), rng.randrange(60))), rng.choice(FILLER),
                "Here is what I would do.")
    events.sort(key=lambda e: e["ts"])
    told_day = {e["id"]: e["ts"][:10] for e in events}
    questions: list[tuple[str, str, dict[str, float], tuple[str, ...]]] = []
    for i, spec in enumerate(SPECS):
        gold = {uid: 1.0 for kind, happened, uid in told_by if kind == spec.kind and spec.start <= happened < spec.end}
        in_time = all(told_day[uid] < spec.end.isoformat() for uid in gold)
        text = (spec.question or KINDS[spec.kind].question).format(t=spec.expression)
        questions.append((f"t{i:02d}", text, gold,
                          (spec.group, "told-in-window" if in_time else "told-after-window")))
    return Built(events, questions, told_by)


def memory_files(events: list[dict]) -> dict[str, bytes]:
    """The events as the product's daily log files."""
    by_day: dict[str, list[str]] = {}
    for e in events:
        by_day.setdefault(e["ts"][:10], []).append(json.dumps(e))
    return {f"events/{day}.jsonl": ("\n".join(lines) + "\n").encode() for day, lines in sorted(by_day.items())}
