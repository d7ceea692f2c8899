"""Which embedder a search uses, decided in one place.

A search is given an embedder already loaded (the warm server, tests with a fake one), ``None`` (BM25 only: the
prompt hook's cold path), or nothing, which means the configured model, loaded only if the vector list is needed.
:class:`QueryEmbedder` holds that decision and the model it leads to, loaded at most once, so a long-lived
caller (the viewer) keeps one and pays for loading once.

>>> from indexer.base.settings import resolve_settings
>>> QueryEmbedder.resolve(resolve_settings("/tmp/memsearch-doctest-embedding"), None).choice.reason
'embeddings disabled for this search'
"""

from __future__ import annotations

import _thread
from typing import Literal, Union, cast

from indexer.base.embedder import Embedder, ModelChoice, load_embedder, resolve_model
from indexer.base.errors import ModelUnavailable
from indexer.base.settings import Settings

#: What a caller may pass as a search's embedder (see the module docstring).
EmbedderArg = Union[Embedder, "QueryEmbedder", None, Literal["configured"]]


class QueryEmbedder:
    """The embedder of a search: :attr:`choice` says which model (and if none, why) without loading anything;
    :meth:`load` loads it on first use."""

    def __init__(self, settings: Settings, choice: ModelChoice, embedder: Embedder | None = None):
        self.settings, self.choice, self._embedder = settings, choice, embedder
        self._lock = _thread.allocate_lock()  # threading.Lock itself, without importing threading (~0.8 ms)

    @classmethod
    def resolve(cls, settings: Settings, embedder: EmbedderArg = "configured") -> QueryEmbedder:
        if isinstance(embedder, QueryEmbedder):
            return embedder
        if embedder == "configured":
            return cls(settings, resolve_model(settings))
        if embedder is None:
            return cls(settings, ModelChoice(False, None, reason="embeddings disabled for this search"))
        return cls(settings, ModelChoice(True, embedder.model_id, dim=embedder.dim), embedder)

    def load(self) -> Embedder:
        """The model, loaded once; raises :class:`ModelUnavailable` (with the reason) when there is none."""
        if not self.choice.available:
            raise ModelUnavailable(f"no embedding model: {self.choice.reason}")
        with self._lock:
            if self._embedder is None:
                self._embedder = cast(Embedder, load_embedder(self.settings))
            return self._embedder
