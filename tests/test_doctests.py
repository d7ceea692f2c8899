"""The examples in the docstrings are part of the documentation: they must stay true. Every module of the product
that holds one is found and run, so a new module's examples are checked without being listed."""

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("indexer", "search_engine", "hooks")
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for package in PACKAGES for path in (ROOT / package).rglob("*.py")
    if path.name != "__init__.py" and ">>> " in path.read_text(encoding="utf-8")
)


def test_the_modules_with_examples_are_found():
    assert {"search_engine.query", "search_engine.timeexpr", "indexer.secret_rules", "indexer.privacy"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
