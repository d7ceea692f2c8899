"""Writing the memsearch index: sources, chunking, privacy, capture of events, the indexing pipeline, rebuild,
forget and maintenance. The shared base is :mod:`indexer.base`; the index backends are :mod:`indexer.store`."""
