"""Reading the memsearch index: query parsing, the lexical and vector lists, fusion, dedup, the search API and the
injected context. Entry points live in :mod:`search_engine.cli`, :mod:`search_engine.serve` and
:mod:`search_engine.viewer`."""
