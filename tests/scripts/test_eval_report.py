"""The goals ``make eval`` prints as met or not (``scripts.eval_report.targets``), on hand-built results."""

from __future__ import annotations

from scripts.eval_report import MULTI_HOP, targets


def _locomo(turn: float, session: float, multi: float, buried: int, gained: int) -> dict:
    def mode(r5: float, s5: float) -> dict:
        return {"overall": {"recall@5": r5, "session_recall@5": s5}}

    hybrid = {**mode(turn, session), "groups": {MULTI_HOP: {"recall@5": multi}},
              "fusion_top10": {"buried": buried, "gained": gained}}
    return {"modes": {"hybrid": hybrid, "bm25": mode(0.64, 0.84), "vector": mode(0.53, 0.75)}}


def _verdicts(ds: dict) -> dict[str, bool]:
    return {c["target"]: c["ok"] for c in targets(ds)}


def test_locomo_goals_read_the_hybrid_figures():
    missed = _verdicts({"locomo": _locomo(0.692, 0.852, 0.361, 49, 3)})
    assert missed["locomo hybrid turn R@5 >= 0.70"] is False
    assert missed["locomo hybrid session R@5 >= 0.92"] is False
    assert missed["locomo hybrid multi-hop turn R@5 >= 0.45"] is False
    assert missed["locomo fusion buried <= gained (delta)"] is False
    assert missed["locomo hybrid recall@5 > bm25 and vector"] is True

    met = _verdicts({"locomo": _locomo(0.70, 0.92, 0.45, 3, 3)})
    for goal in ("turn R@5 >= 0.70", "session R@5 >= 0.92", "multi-hop turn R@5 >= 0.45"):
        assert met[f"locomo hybrid {goal}"] is True
    assert met["locomo fusion buried <= gained (delta)"] is True


def test_a_missing_category_is_a_missed_goal_not_an_error():
    ds = {"locomo": _locomo(0.75, 0.95, 0.5, 0, 0)}
    del ds["locomo"]["modes"]["hybrid"]["groups"]
    checks = {c["target"]: c for c in targets(ds)}
    assert checks["locomo hybrid multi-hop turn R@5 >= 0.45"] == {
        "target": "locomo hybrid multi-hop turn R@5 >= 0.45", "value": None, "ok": False}


def test_cjk_goals_compare_with_the_trigram_reference():
    def cjk(r5: float, r1: float) -> dict:
        return {"overall": {"recall@5": r5, "recall@1": r1}}

    ds = {"jsquad": {"modes": {"bm25": cjk(0.968, 0.908), "hybrid": cjk(0.974, 0.918),
                               "fts5-trigram": cjk(0.933, 0.877)}}}
    got = _verdicts(ds)
    assert got["jsquad bm25 R@5 >= 0.97"] is False
    assert got["jsquad hybrid R@5 >= 0.97"] is True
    assert got["jsquad bm25 R@5 >= fts5 trigram reference (delta)"] is True
    assert _verdicts({"jsquad": {"modes": {"bm25": cjk(0.93, 0.9), "fts5-trigram": cjk(0.933, 0.877)}}})[
        "jsquad bm25 R@5 >= fts5 trigram reference (delta)"] is False
