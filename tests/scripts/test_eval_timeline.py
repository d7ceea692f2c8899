"""The temporal question set ``make eval`` measures time expressions on (``scripts/eval_timeline.py``): the same on
every run, each question's gold the events a person reads its time as, and nothing else of that kind inside it."""

from __future__ import annotations

import json
from datetime import date

from scripts.eval_data import load_dataset
from scripts.eval_report import render
from scripts.eval_timeline import NOW, SPECS, build, memory_files


def test_the_memory_and_questions_are_the_same_on_every_run():
    assert build() == build()


def test_gold_is_every_event_of_the_kind_inside_the_time_a_person_reads():
    built = build()
    told = {e["id"]: e["ts"] for e in built.events}
    assert max(told.values()) < NOW.isoformat()
    assert len(built.questions) == len(SPECS)
    for spec, (_, text, gold, groups) in zip(SPECS, built.questions):
        assert spec.expression in text and spec.group in groups
        inside = {uid for kind, day, uid in built.told_by if kind == spec.kind and spec.start <= day < spec.end}
        assert gold and set(gold) == inside, text
        for uid in gold:  # told on the day or up to four days after, in the prompt that says what happened
            happened = next(day for _, day, u in built.told_by if u == uid)
            assert 0 <= (date.fromisoformat(told[uid][:10]) - happened).days <= 4
    kinds = {spec.kind for spec in SPECS}
    for kind in kinds:  # the questions ask about a few of many such events
        assert sum(1 for k, _, _ in built.told_by if k == kind) >= 8


def test_the_memory_is_written_as_daily_event_logs():
    files = memory_files(build().events)
    assert all(path.startswith("events/") and path.endswith(".jsonl") for path in files)
    lines = [json.loads(line) for blob in files.values() for line in blob.decode().splitlines()]
    assert {e["type"] for e in lines} == {"prompt", "response"}
    assert all(e["ts"][:10] == path[7:17] for path, blob in files.items()
               for e in map(json.loads, blob.decode().splitlines()))


def test_the_report_prints_recall_by_form_of_time_expression(tmp_path):
    ds = load_dataset(tmp_path, "timeline")
    mode = {"overall": {"recall@1": 0.5, "recall@5": 0.9},
            "groups": {"season": {"n": 4, "recall@1": 0.75, "recall@5": 1.0}}}
    results = {"datasets": {"timeline": {"queries": len(ds.queries), "index": {"chunks": 806}, "fetch_k": 10,
                                         "modes": {"bm25": mode, "hybrid": mode}}}}
    printed = render(results)
    assert f"Timeline: {len(SPECS)} temporal questions" in printed
    row = next(line for line in printed.splitlines() if line.startswith("season"))
    assert row.split() == ["season", "4", "0.750", "1.000", "0.750", "1.000"]
