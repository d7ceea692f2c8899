"""The anchor scan (indexer/anchors.py) finds exactly the anchors a substring test per anchor finds: overlapping
ones, one inside another, at the text's edges, in any script; and the filter's own anchor sets agree on real texts."""

from hypothesis import given, settings, strategies as st

import indexer.anchors as anchors_module
from indexer import secret_ids, secret_rules
from indexer.anchors import AnchorSet

_ALPHABET = "abcpswordé密码 -_:"


@settings(max_examples=300, deadline=None)
@given(anchors=st.lists(st.text(_ALPHABET, min_size=1, max_size=6), min_size=1, max_size=30),
       text=st.text(_ALPHABET, max_size=200))
def test_the_automaton_finds_what_a_test_per_anchor_finds(anchors, text):
    assert AnchorSet(anchors).present(text) == {a for a in anchors if a in text}


def test_anchors_inside_one_another_and_at_the_edges_are_all_found():
    found = AnchorSet(("pass", "password", "word", "ord", "p", "xyz")).present("password")
    assert found == {"pass", "password", "word", "ord", "p"}
    assert AnchorSet(("a",)).present("") == set()
    assert AnchorSet(()).present("anything") == set()


def test_without_the_automaton_the_answer_is_the_same(monkeypatch):
    text = "my passwort ist Hunter2x, IBAN DE89 3704 0044 0532 0130 00, 密码: abc"
    with_automaton = AnchorSet(secret_rules._FORMAT_ANCHORS).present(text)
    monkeypatch.setattr(anchors_module, "ahocorasick", None)
    assert AnchorSet(secret_rules._FORMAT_ANCHORS).present(text) == with_automaton != set()


def test_the_filters_anchor_sets_agree_with_a_test_per_anchor():
    texts = ["kubectl get secret db -o yaml", "Kreditkarte 4556 7375 8689 9855 gültig bis 04/29", "RUN apt-get install",
             "パスワードは Sakura_2031 です", "my NIN is 48213957206", "x" * 5000 + " token=abc"]
    for text in texts:
        lower = secret_rules._ascii_lower(text)
        assert secret_rules._FORMAT_ANCHOR_SET.present(lower) == {a for a in secret_rules._FORMAT_ANCHORS if a in lower}
        expected = {a for a in secret_ids._ANCHORS if a in (text if a.isupper() else text.lower())}
        assert secret_ids._LOWER_ANCHORS.present(text.lower()) | secret_ids._UPPER_ANCHORS.present(text) == expected
