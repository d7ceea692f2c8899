"""Everything that writes the memsearch index: settings, store, sources, chunker, privacy, embedder, pipeline."""
