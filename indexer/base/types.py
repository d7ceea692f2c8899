"""The data shapes of a search, shared by the indexer, the search engine, the CLI and the hooks; the reports of the
other commands are in :mod:`indexer.base.reports`.

The shapes of a search are named tuples, immutable like the frozen dataclasses of the reports: the prompt hook
imports them on every prompt, and without a server its path imports no ``dataclasses``. Measured in a new process:
``dataclasses`` (with the ``inspect``, ``ast`` and ``dis`` it imports) and the 19 frozen dataclasses of that path
cost ~15 ms of CPU, a fifth of the hook's; a named tuple is built in ~0.15 ms. :func:`to_json` serialises any of
them, dataclasses and named tuples (or lists of them), with orjson, so the ``--json`` output of every command has
one stable shape; :func:`plain` gives the same as built-in values.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, NamedTuple

KINDS = ("note", "fact", "event")
#: Statuses hidden from search unless ``--all-status`` is given.
HIDDEN_STATUSES = ("superseded", "archived", "retired")


class Health(NamedTuple):
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


class Hit(NamedTuple):
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


class Explanation(NamedTuple):
    """Why one hit (or hidden duplicate) is where it is: each list's rank and its contribution to the fused score,
    what the evidence of its group added (hybrid, ``session_share``: an event's group is its session, any other
    hit is a group of its own), and the factors it was then multiplied by (``boosts``: its speaker is named in the
    query, ``speaker 2``; its time is the one the query names, ``time 3``)."""

    id: str
    bm25_rank: int | None
    vector_rank: int | None
    bm25_contribution: float
    vector_contribution: float
    score: float
    duplicate_of: str | None = None
    similarity: float | None = None
    group_contribution: float = 0.0
    boosts: tuple[str, ...] = ()
    #: what the feedback list added (hybrid, ``feedback_share``); the two lists' contributions are then scaled by
    #: ``1 - feedback_share``, so the score before the group and the boosts is the sum of the three
    feedback_contribution: float = 0.0


class SearchResult(NamedTuple):
    query: str
    mode_requested: str
    mode_used: str
    fallback_reason: str | None
    health: Health
    hits: tuple[Hit, ...]
    hidden_duplicates: int
    lexical_query: str | None = None
    explain: tuple[Explanation, ...] | None = None

    @property
    def similarity_model(self) -> str | None:
        """The model whose cosines the hits carry (it chooses the prompt hook's gate); None when BM25 answered."""
        return self.health.model if self.mode_used != "bm25" else None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        """The result rebuilt from its JSON form (the warm server's answer), with the same nested types."""
        explain = data.get("explain")
        return cls(**{**data, "health": Health(**data["health"]), "hits": tuple(Hit(**h) for h in data["hits"]),
                      "explain": None if explain is None else tuple(Explanation(**e) for e in explain)})


def to_json(value: Any, *, pretty: bool = False) -> str:
    """Serialise dataclasses and named tuples (nested, tuples included) to JSON text.

    >>> to_json({"path": PurePath("a.md"), "kinds": {"note"}})
    '{"path":"a.md","kinds":["note"]}'
    """
    import orjson  # here, not at the top: the prompt hook rebuilds the warm server's answer as these types

    option = orjson.OPT_INDENT_2 if pretty else 0
    return orjson.dumps(value, default=_default, option=option | orjson.OPT_NON_STR_KEYS).decode()


def plain(value: Any) -> Any:
    """``value`` with its named tuples made dicts, at any depth (tuples and lists become lists): what the JSON
    of :func:`to_json` reads back as, for an answer another encoder writes.

    >>> plain([Explanation("a", 1, None, 0.5, 0.0, 0.5)])[0]["bm25_rank"]
    1
    """
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def _default(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_asdict"):  # a named tuple: an object, as a dataclass is
        return value._asdict()
    if isinstance(value, (PurePath, frozenset, set)):
        return str(value) if isinstance(value, PurePath) else sorted(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def index_note(state: Health) -> str | None:
    """Why a search of this index finds nothing, when the reason is the index itself: it was never built, or it
    was built from no sources (on the team database: it holds nothing the member can see). None when it holds
    chunks.

    >>> index_note(Health(False, 0, 0, None, None, False))
    'the index was never built; run `memsearch index`'
    """
    if not state.index_exists:
        return "the index was never built; run `memsearch index`"
    if state.chunks == 0 and state.store == "team":
        return ("nothing on the team database is visible to you yet: `memsearch index` sends your memory there, "
                "and what teammates share appears once they sync")
    if state.chunks == 0:
        return "the index is empty (no sources found); add notes and run `memsearch index`"
    return None


def result_notes(result: SearchResult) -> list[str]:
    """What a reader of the hits must know beside them, one line each, as the CLI prints them (``note: …``,
    ``No results: …``) and the MCP server sends them before its hits: that the team database could not be
    reached so the hits are local only, that the index was never built or is empty."""
    return [note for note in (result.health.store_reason, index_note(result.health)) if note]
