"""Querying the memsearch index: lexical queries, vector KNN, fusion, dedup, the search API and the CLI."""
