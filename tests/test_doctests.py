"""The examples in the docstrings are part of the documentation: they must stay true."""

import doctest
import importlib

import pytest

MODULES = ["indexer.privacy", "indexer.chunker", "indexer.base.cjk", "indexer.base.locks", "indexer.base.types", "indexer.sources",
           "indexer.base.chunktext", "search_engine.fusion", "search_engine.filters", "search_engine.context",
           "search_engine.search", "indexer.transcripts", "indexer.base.private", "indexer.base.lost", "indexer.base.errors", "indexer.base.settings",
           "search_engine.serve.mcp_server", "search_engine.serve.server", "indexer.observations", "indexer.eventread", "indexer.store.sqlite_read",
           "search_engine.embedding", "search_engine.query"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
