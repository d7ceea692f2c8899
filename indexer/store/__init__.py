"""The store contract: every operation the indexer and the search engine need from an index, and nothing else.

A backend is a class that satisfies :class:`Store`: :class:`indexer.store.local.SqliteStore` (the local index,
its writing half :mod:`indexer.store.sqlite_write` and its reading half :mod:`indexer.store.sqlite_read`, the
file opened by :mod:`indexer.store.sqlite`) and :class:`indexer.store.postgres.PgStore` (a team's PostgreSQL +
pgvector). The shapes it takes and returns are the named tuples below (the prompt hook reads through them: see
:mod:`indexer.base.types`), so nothing above the store sees a connection, a cursor or SQL.
``tests/indexer/store/test_store.py`` is the suite every backend passes.

The contract, for any backend:

- **Chunks** belong to a *source* (the file they were read from, by absolute path). :meth:`Store.write_batch`
  records the source's state and adds its chunks in one transaction; a chunk whose ``uid`` the writer already
  stored is left as it is (writes are idempotent, so a sync that is re-run after a fault adds no duplicates).
  :meth:`Store.delete_source` removes a source's chunks and its state in one transaction (a source not there
  removes nothing); vectors stay, so content that comes back (an edited or moved file) is not embedded again.
- **Vectors** are keyed by (content hash, model): :meth:`Store.pending_embeddings` lists content the model has
  not seen yet (one row per hash, whichever chunks hold it, oldest first), :meth:`Store.put_embeddings` stores
  them; a hash stored with ``None`` is content the model cannot represent (it is no longer pending and never a
  vector hit); a caller embeds window by window (``limit``, ``after``). Putting a (hash, model) that exists already is a no-op, so two writers embedding the same content
  is harmless. :meth:`Store.holds_vectors` says whether a search embedded by a model has vectors to read (on a
  team store, those any member sent).
- **Ranking** is done inside the store with the filters inside the same query (a selective filter can never starve
  a list): :meth:`Store.lexical_top_k` ranks the chunks matching the AND (or OR) of query terms (higher score is
  better), :meth:`Store.vector_candidates` the chunks nearest a query vector (cosine distance, lower is better).
  Both return chunk ids, best first, ties by id; :meth:`Store.fetch_hits` turns ids into rows.
- **Visibility**: a backend shared by several people returns only what the connecting member may see; every
  operation above is subject to it, so the layers above need no notion of members.
- **Browsing** (``show``, ``timeline``, ``recent``, ``sessions``, ``stats``, the standing context) reads visible
  rows by id prefix, place in a source, time, session and project; :meth:`Store.delete_uids` is ``forget`` on a
  store the member does not own the files of (the team store): only the writer's own rows go.
- :meth:`Store.health` counts what :class:`indexer.base.types.Health` reports (no pending content without a
  model); :meth:`Store.get_meta` / :meth:`Store.set_meta` keep small per-index strings (``last_indexed``,
  ``chunker``, ``vector_model``).

What the local index does beyond it (a backend does not need these): ``write_batch`` and ``delete_source`` join
a transaction the caller opened, so a scan writes many sources per commit; it holds the vectors of one model
(putting another model's vectors replaces them, as a change of the configured model does), drops vectors no
chunk holds at the end of a run, and its ``health`` estimates the pending count from two index-only counts
(exact while no orphan vector is left), since every search reports it. ``forget``, ``scrub`` and maintenance use
its upkeep methods (delete chunks by id, FTS merge, VACUUM, checkpoint, integrity check).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Literal, NamedTuple, Protocol, runtime_checkable

from indexer.base.chunktext import embed_input

Scope = Literal["private", "shared"]


class ChunkRow(NamedTuple):
    """One chunk as the store keeps it: :class:`indexer.base.types.Chunk`'s columns plus what the writer derives.

    ``context`` is the text the lexical index also sees at low weight (an event's previous turn in its session);
    ``reply_to`` the turn an event replies to, shortened (:func:`indexer.base.chunktext.reply_of`): part of what
    it is embedded as, and so of its ``hash``, never indexed for BM25; ``scope`` is ``shared`` only for a note or
    fact from a source its owner marked shared (a store that has no members ignores it).
    """

    uid: str
    hash: str
    kind: str
    text: str
    path: str
    seq: int = 0
    category: str = ""
    title: str = ""
    line_start: int | None = None
    line_end: int | None = None
    event_id: str | None = None
    ts: str | None = None
    session_id: str | None = None
    project: str | None = None
    status: str | None = None
    speaker: str | None = None
    context: str = ""
    reply_to: str = ""
    scope: Scope = "private"


class SourceState(NamedTuple):
    """What the indexer remembers of one source file to re-read only what changed (``consumed``: bytes of an
    append-only event log already indexed; ``head_hash``: a hash of its first bytes, to notice a rewrite)."""

    path: str
    source: str
    mtime_ns: int
    size: int
    content_hash: str | None = None
    consumed: int = 0
    head_hash: str | None = None


class PendingText(NamedTuple):
    """Content to embed: its hash and the fields :func:`indexer.base.chunktext.embed_input` builds the text from;
    ``id`` is the chunk they were read from (the oldest holding the hash), what ``after`` reads on from."""

    hash: str
    title: str
    text: str
    speaker: str | None = None
    ts: str | None = None
    id: int = 0
    reply_to: str = ""

    @property
    def input(self) -> str:
        """What the model is given: :func:`indexer.base.chunktext.embed_input` of these fields."""
        return embed_input(self.title, self.text, self.speaker, self.ts, self.reply_to)


class Scored(NamedTuple):
    """A chunk id and its score in one list: BM25-like relevance (higher is better) or cosine distance (lower)."""

    id: int
    score: float


class HitRow(NamedTuple):
    """The columns a search hit is built from."""

    id: int
    uid: str
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
    event_id: str | None
    #: who wrote an event (its metadata's speaker, else its role: see :func:`indexer.sources.event_speaker`)
    speaker: str | None = None
    owner: str | None = None
    scope: Scope = "private"


class StoreHealth(NamedTuple):
    """Counts over what the connecting member can see; ``own``/``shared_by_others`` split them on a team store."""

    chunks: int
    by_kind: Mapping[str, int] = MappingProxyType({})
    sources: int = 0
    pending_embeddings: int = 0
    vectors: int = 0
    own_chunks: int = 0
    shared_by_others: int = 0


class QueryTerm(Protocol):
    """One searchable term (:class:`search_engine.query.Term` has these fields): a lower-cased word, or a CJK run
    (``cjk``) matched as the phrase of its 2-character words; ``alts`` are other forms that also count (a Korean
    word without its particle, "bought" for "buy")."""

    @property
    def text(self) -> str: ...
    @property
    def cjk(self) -> bool: ...
    @property
    def alts(self) -> tuple[str, ...]: ...


class FilterSpec(Protocol):
    """The search filters (:class:`search_engine.filters.Filters` has these fields): ``None`` filters nothing;
    ``since``/``until`` are local ISO timestamps, inclusive; unless ``all_status``, chunks whose status is in
    :data:`indexer.base.types.HIDDEN_STATUSES` are left out; ``exclude_session`` drops one session's chunks."""

    @property
    def kind(self) -> str | None: ...
    @property
    def category(self) -> str | None: ...
    @property
    def session(self) -> str | None: ...
    @property
    def project(self) -> str | None: ...
    @property
    def since(self) -> str | None: ...
    @property
    def until(self) -> str | None: ...
    @property
    def all_status(self) -> bool: ...
    @property
    def exclude_session(self) -> str | None: ...
    @property
    def selective(self) -> bool: ...


@runtime_checkable
class Store(Protocol):
    """The operations of an index; see the module docstring for the contract every backend keeps."""

    def write_batch(self, source: SourceState, chunks: Sequence[ChunkRow]) -> int:
        """Record ``source`` and add ``chunks`` (uids already stored are skipped), in one transaction; returns
        the number of chunks added."""
        ...

    def delete_source(self, path: str) -> int:
        """Remove the source at ``path`` and its chunks, in one transaction; returns the chunks removed."""
        ...

    def sources(self) -> dict[str, SourceState]:
        """Every recorded source of the connecting writer, by path."""
        ...

    def pending_embeddings(self, model: str, limit: int | None = None, after: int = 0) -> list[PendingText]:
        """Content hashes of visible chunks without a vector of ``model`` (one row per hash, read from the oldest
        chunk that holds it), oldest first; ``after``: only those whose chunk id is above it (the last row's ``id``
        reads on from a previous window, past what the caller left pending)."""
        ...

    def put_embeddings(self, model: str, vectors: Sequence[tuple[str, Sequence[float] | None]]) -> int:
        """Store ``(hash, vector or None)`` for ``model``; returns how many were new."""
        ...

    def lexical_top_k(self, terms: Sequence[QueryTerm], op: str, filters: FilterSpec, limit: int) -> list[Scored]:
        """Chunks matching the AND (``op="AND"``) or OR of ``terms`` within ``filters``, best first."""
        ...

    def lexical_expression(self, terms: Sequence[QueryTerm], op: str) -> str:
        """The query :meth:`lexical_top_k` runs for ``terms``, as text (what ``--explain`` shows)."""
        ...

    def lexical_native(self, expression: str, filters: FilterSpec, limit: int) -> list[Scored]:
        """Like :meth:`lexical_top_k` for a query written in the backend's own syntax (``--raw``); raises
        :class:`indexer.base.errors.UsageError` with a one-line reason when it is not valid."""
        ...

    def vector_model(self) -> str | None:
        """The model whose vectors the index holds (None: none yet); a store holding several models' vectors (a
        team's: each member embeds with the model they configured) names the one most of them are of."""
        ...

    def holds_vectors(self, model: str) -> bool:
        """Whether the index holds vectors of ``model`` the reader can see: what a vector search with a query
        embedded by ``model`` needs (on a team store, vectors other members sent count too)."""
        ...

    def vector_candidates(self, vector: bytes | Sequence[float], model: str, filters: FilterSpec, limit: int,
                          *, ef_search: int = 40) -> list[Scored]:
        """Chunks whose content is nearest ``vector`` (floats, or float32 bytes as the embedders return them;
        cosine distance) within ``filters``, nearest first. ``ef_search`` is the approximate index's search width
        for this query (ignored by exact backends)."""
        ...

    def similarities(self, vector: bytes | Sequence[float], model: str, ids: Sequence[int]) -> dict[int, float]:
        """The cosine similarity to ``vector`` of each chunk of ``ids`` that has a vector of ``model``: what the
        prompt hook's gate weighs for a hit the vector list did not reach."""
        ...

    def fetch_hits(self, ids: Sequence[int]) -> dict[int, HitRow]:
        """The visible rows of ``ids`` (ids that do not exist or are not visible are absent)."""
        ...

    # browsing: show, timeline, recent, sessions, stats and the standing context read these

    def find_uid_prefix(self, prefix: str, limit: int = 2) -> list[tuple[HitRow, str, int]]:
        """Up to ``limit`` visible chunks whose id starts with ``prefix`` (lower-case hex; one per id), each with
        its source as the store names it (what :meth:`neighbours` takes) and its place in it."""
        ...

    def neighbours(self, file: str, seq: int) -> tuple[str | None, str | None, int]:
        """The ids of the visible chunks before and after place ``seq`` of source ``file``, and its count."""
        ...

    def around(self, center: HitRow, window: int) -> tuple[list[HitRow], list[HitRow]]:
        """The ``window`` visible chunks before and after ``center`` in time (ts, then id), oldest first: of its
        session when it has one, else of everything dated."""
        ...

    def recent_rows(self, *, session: str | None = None, type: str | None = None, project: str | None = None,
                    limit: int = 20, offset: int = 0) -> list[HitRow]:
        """The latest visible items, newest first, one per event, after the first ``offset`` of them; ``type`` a
        kind or an event type."""
        ...

    def session_event_counts(self, project: str | None = None) -> list[tuple[str, str, int, str | None, str | None,
                                                                             str | None]]:
        """``(session, event type, events, first ts, last ts, project)`` per session and type."""
        ...

    def session_prompts(self, sessions: Sequence[str]) -> Iterator[tuple[str, str]]:
        """``(session, prompt text)`` of ``sessions``' prompts, each session's in time order."""
        ...

    def event_counts(self) -> tuple[dict[str, int], dict[str, int], int]:
        """Visible events (once each) by type and by day, and how many sessions they belong to."""
        ...

    def redacted_texts(self) -> Iterator[tuple[str, str, str | None, str | None, str]]:
        """``(kind, source, event id, session, text)`` of visible chunks holding a redaction marker (session
        summaries left out), in source order."""
        ...

    def latest_session_summary(self, project: str) -> tuple[str, str, str] | None:
        """``(first chunk id, path, whole text)`` of ``project``'s most recent session summary."""
        ...

    def active_facts(self, project: str, limit: int) -> list[tuple[str, str | None, str]]:
        """``(id, ts, text)`` of ``project``'s active facts, newest first."""
        ...

    def delete_uids(self, uids: Sequence[str]) -> int:
        """Delete the connecting writer's own chunks with these ids, in one transaction (on a shared store,
        never another member's); returns how many were removed."""
        ...

    def health(self, model: str | None) -> StoreHealth:
        """Counts of visible chunks, sources, vectors and content pending for ``model``."""
        ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str | None) -> None:
        """Set ``key`` (``None`` deletes it)."""
        ...

    def close(self) -> None: ...
