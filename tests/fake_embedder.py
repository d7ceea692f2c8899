"""A deterministic embedder for fast unit tests; it lives with the tests, never in the product.

Tests whose behaviour depends on the model use the real bundled one (the ``real_embedder`` fixture); this one is
for the many tests that only need *some* vectors that rank differently from BM25.
"""

from __future__ import annotations

import array
import hashlib
import math
import re
from collections.abc import Sequence


class FakeEmbedder:
    """A deterministic bag-of-words embedder: words hash into ``dim`` buckets, L2-normalised.

    It shares no knowledge with BM25 beyond the words themselves, so it ranks differently, which is all the
    fusion tests need. ``calls`` and ``embedded`` count ``embed_passages`` calls and texts.
    """

    def __init__(self, dim: int = 32, model_id: str | None = None):
        self.dim = dim
        self.model_id = model_id or f"fake-{dim}"
        self.calls = 0
        self.embedded = 0

    def _vector(self, text: str) -> bytes:
        vec = [0.0] * self.dim
        for word in re.findall(r"\w+", text.lower()):
            h = int(hashlib.blake2b(word.encode(), digest_size=8).hexdigest(), 16)
            vec[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vec)) or 1.0
        return array.array("f", [x / norm for x in vec]).tobytes()

    def embed_passages(self, texts: Sequence[str]) -> list[bytes]:
        self.calls += 1
        self.embedded += len(texts)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> bytes:
        return self._vector(text)
