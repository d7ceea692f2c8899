"""The data shapes of a search, shared by the indexer, the search engine, the CLI and the hooks; the reports of the
other commands are in :mod:`indexer.base.reports` (the prompt hook imports this module: each frozen dataclass
costs its import ~0.5 ms).

All are frozen dataclasses; :func:`to_json` serialises any of them (or lists of them) with orjson, so the
``--json`` output of every command has one stable shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

KINDS = ("note", "fact", "event")
#: Statuses hidden from search unless ``--all-status`` is given.
HIDDEN_STATUSES = ("superseded", "archived", "retired")


@dataclass(frozen=True)
class Health:
    """What a result set needs to say so that an empty answer is never ambiguous."""

    index_exists: bool
    chunks: int
    pending_embeddings: int
    last_indexed: str | None
    model: str | None
    model_available: bool
    model_reason: str | None = None
    #: which index answered: ``local`` (the SQLite file) or ``team`` (the PostgreSQL of ``db_url``)
    store: str = "local"
    #: why a search meant for the team database read the local index (it could not be reached), else None
    store_reason: str | None = None


@dataclass(frozen=True)
class Hit:
    id: str
    kind: str
    category: str
    title: str
    text: str
    path: str
    line_start: int | None
    line_end: int | None
    ts: str | None
    session_id: str | None
    project: str | None
    status: str | None
    score: float
    bm25_rank: int | None
    vector_rank: int | None
    event_id: str | None = None
    bm25_score: float | None = None  # FTS5 BM25, higher is better
    similarity: float | None = None  # cosine similarity to the query vector


@dataclass(frozen=True)
class Explanation:
    """Why one hit (or hidden duplicate) is where it is: each list's rank and its contribution to the fused score,
    and what the evidence of its group added (hybrid, ``session_share``: an event's group is its session, any other
    hit is a group of its own)."""

    id: str
    bm25_rank: int | None
    vector_rank: int | None
    bm25_contribution: float
    vector_contribution: float
    score: float
    duplicate_of: str | None = None
    similarity: float | None = None
    group_contribution: float = 0.0


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode_requested: str
    mode_used: str
    fallback_reason: str | None
    health: Health
    hits: tuple[Hit, ...]
    hidden_duplicates: int
    lexical_query: str | None = None
    explain: tuple[Explanation, ...] | None = field(default=None)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        """The result rebuilt from its JSON form (the warm server's answer), with the same nested types."""
        explain = data.get("explain")
        return cls(**{**data, "health": Health(**data["health"]), "hits": tuple(Hit(**h) for h in data["hits"]),
                      "explain": None if explain is None else tuple(Explanation(**e) for e in explain)})


def to_json(value: Any, *, pretty: bool = False) -> str:
    """Serialise dataclasses (nested, tuples included) to JSON text.

    >>> to_json({"path": PurePath("a.md"), "kinds": {"note"}})
    '{"path":"a.md","kinds":["note"]}'
    """
    import orjson  # here, not at the top: the prompt hook rebuilds the warm server's answer as these types

    option = orjson.OPT_INDENT_2 if pretty else 0
    return orjson.dumps(value, default=_default, option=option | orjson.OPT_NON_STR_KEYS).decode()


def _default(value: Any) -> Any:
    if isinstance(value, (PurePath, frozenset, set)):
        return str(value) if isinstance(value, PurePath) else sorted(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")
