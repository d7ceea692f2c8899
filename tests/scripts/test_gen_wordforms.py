"""The word-forms table search ships (``search_engine/wordtable.py``) is what its generator makes of lemminflect's
inflection table, stemmed by the index's own tokenizer."""

import pytest

pytest.importorskip("lemminflect", reason="lemminflect (a development dependency) is not installed")

from scripts.gen_wordforms import LIGHT, TARGET, render  # noqa: E402
from search_engine import wordforms, wordtable  # noqa: E402


def test_the_shipped_table_is_what_the_generator_writes():
    assert wordtable.__file__ == str(TARGET) and TARGET.read_text(encoding="utf-8") == render()


def test_forms_are_found_both_ways_and_light_verbs_are_left_out():
    assert wordforms.other_forms("bought") == ("buy",) and "bought" in wordforms.other_forms("buying")
    assert set(wordforms.other_forms("broke")) == {"break", "broken"}
    assert wordforms.other_forms("mice") == ("mouse",)
    lines = wordtable.TABLE.splitlines()
    assert lines == sorted(lines) and all(len(line.split()) > 1 for line in lines)
    assert all(wordforms.other_forms(verb) == () for verb in LIGHT)
    assert wordforms.other_forms("felt") == () and wordforms.other_forms("made") == ()
    assert wordforms.other_forms("retry") == () and wordforms.other_forms("") == ()
