"""The shared base every layer uses: settings, the data shapes, errors, state-file paths, the embedder protocol,
locks and private file writing. It imports nothing from the rest of the project."""
