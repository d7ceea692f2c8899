"""scripts.eval_data: the fixed split of a dataset's questions into two halves."""

import hashlib

from scripts.eval_data import Query, half_queries


def test_the_halves_split_every_question_once_by_its_id():
    queries = [Query(f"conv-{i % 5}#{i}", "q", {"d": 1.0}, "r") for i in range(200)]
    a, b = half_queries(queries, "A"), half_queries(queries, "b")
    assert sorted(q.qid for q in a + b) == sorted(q.qid for q in queries)  # each once, none lost
    assert 70 < len(a) < 130  # a split, not one side
    assert all(int(hashlib.md5(q.qid.encode()).hexdigest(), 16) % 2 == 0 for q in a)
    assert half_queries(list(reversed(queries)), "A") == list(reversed(a))  # by the id, not the position
    assert half_queries(queries, None) == queries
