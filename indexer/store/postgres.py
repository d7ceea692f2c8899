"""The index on PostgreSQL + pgvector: the :class:`indexer.store.Store` contract for a team's shared server.

Engine parts, not re-implementations: psycopg 3 with its connection pool, the ``pgvector`` package's type
adapters, PostgreSQL full-text search and pgvector's HNSW index.

- **Lexical list**: ``chunks.fts`` is a ``tsvector`` built with the ``english`` configuration (stemming and
  stopwords) from the title (weight A), the body (B) and the context (D, an event's previous turn), each in
  :func:`indexer.base.cjk.index_form`, so a CJK run is indexed as its 2-character words, exactly as the SQLite index
  does; a GIN index serves ``memsearch.@@`` (the built-in match declared leakproof, so that row-level security
  lets the index answer a member's query: :data:`indexer.store.pg_schema.M006_LEAKPROOF_MATCH`). A query term
  becomes ``plainto_tsquery`` (a word) or ``phraseto_tsquery`` of its bigrams (a CJK run), ANDed or ORed; ranked
  like BM25 (:meth:`PgStore.lexical_top_k`): each term's ``ts_rank`` (the SQLite column weights, length-normalised)
  times its idf among the chunks the member sees, from counts the database keeps (migration 7).
- **Vector list**: one row per (content hash, model) in ``vectors``, whoever computed it, so a member reuses a
  vector another member's machine already paid for. A partial HNSW index (cosine) per model is made by
  :meth:`PgStore.ensure_vector_model` on ``embedding::vector(dim)``; each query sets ``hnsw.ef_search`` for its own
  transaction (``SET LOCAL``) with iterative scans on, so filters applied after the index cannot starve the list.
  A selective filter (kind, session, dates…) computes the exact distances of just the filtered chunks instead.
- **Team semantics** are the database's (:mod:`indexer.store.pg_schema`): the rows a method sees are what row-level
  security lets the connecting role see.

Selected by the ``db_url`` setting: :mod:`indexer.sync` fills it from the local index (:meth:`PgStore.replace_source`
per source), and search reads it (:mod:`search_engine.reading`), falling back to the local index when it cannot be
reached. The indexing pipeline itself writes only the local index.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from indexer.base.chunktext import fts_title
from indexer.base.cjk import index_form, query_bigrams
from indexer.base.errors import MemsearchError, UsageError, one_line
from indexer.base.storable import storable
from indexer.base.types import HIDDEN_STATUSES, KINDS
from indexer.store import (
    ChunkRow,
    FilterSpec,
    HitRow,
    PendingText,
    QueryTerm,
    Scored,
    SourceState,
    StoreHealth,
)
from indexer.store.pg_schema import (
    EXTENSION_SQL,
    MIGRATIONS,
    RECOUNT_SQL,
    SCHEMA,
    SCHEMA_VERSION,
    mask_url,
    member_sql,
    record_version_sql,
    vector_index_sql,
)

# The pool logs a connection it drops ("discarding closed connection") through logging's last-resort handler, i.e. on
# the user's stderr; what went wrong reaches the user as the one-line StoreUnavailable instead.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

#: ts_rank weights {D, C, B, A}: context 0.4, body and title 1 (the SQLite bm25() column weights).
RANK_WEIGHTS = "{0.4, 0, 1.0, 1.0}"
EF_SEARCH_RANGE = (1, 1000)
#: ``ts_rank``'s normalization of the lexical list: 1 divides a term's rank by 1 + log(the chunk's length).
LENGTH_NORMALIZATION = 1
#: The lexical list scores with ``ts_rank`` only the ``limit`` × this chunks of the highest sum of the idf of the
#: terms they hold (an upper bound of their score, cheap to compute for every candidate).
RESCORED = 4
#: An OR query's candidates are the chunks holding its rarest terms, as many terms as keep the sum of their
#: document frequencies within this (at least one term): the rows the query reads and ranks, whatever the size
#: of the store.
CANDIDATES = 5000
#: Seconds a store reuses its counts (health, vectors of a model, chunks) before asking the server again; its own
#: writes clear them at once. They are the kept counts of migration 7 (a few rows, ~1 ms), so this spares searches
#: round trips more than work.
COUNTS_TTL = 10.0
KNN_MAX = 4096
#: A filter that lets at most this many chunks through is read exactly; a wider one through the HNSW index first
#: (as :data:`indexer.store.sqlite_read.EXACT_MAX`)
EXACT_MAX = 4096
#: What the server raises for a row's own content (a value it cannot hold, a tsvector over 1 MB, an index entry too
#: large): a sync leaves that row out and says so (:meth:`PgStore.replace_sources`) rather than stop at it.
ROW_ERRORS: tuple[type[psycopg.Error], ...] = (psycopg.errors.DataError, psycopg.errors.ProgramLimitExceeded)
_HIT_COLUMNS = ("id, uid, kind, category, title, text, path, line_start, line_end, ts, session_id, project, "
                "status, event_id, speaker, owner, scope")


class StoreUnavailable(MemsearchError):
    """The database cannot be reached or used; the message names it with its password masked."""


def _one_row(cursor: psycopg.Cursor[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The row of a query that always returns exactly one (an aggregate, ``current_user``, ``to_regclass``)."""
    row = cursor.fetchone()
    if row is None:
        raise StoreUnavailable("the team database returned no row where it always returns one")
    return row


def schema_version(conn: psycopg.Connection) -> int:
    """The newest migration applied (0 on an empty database)."""
    exists = _one_row(conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.schema_version",)))[0]
    if exists is None:
        return 0
    return _one_row(conn.execute(f"SELECT coalesce(max(version), 0) FROM {SCHEMA}.schema_version"))[0]


def migrate(conn: psycopg.Connection) -> int:
    """Bring the schema up to :data:`~indexer.store.pg_schema.SCHEMA_VERSION` (needs the administrator's rights); each
    migration in its own transaction, serialised across machines by an advisory lock. Returns the version."""
    with conn.transaction():
        conn.execute(EXTENSION_SQL)
    for number, text in MIGRATIONS:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('memsearch-migrate'))")
            if schema_version(conn) >= number:
                continue
            conn.execute(text)
            conn.execute(record_version_sql(number))
    return schema_version(conn)


def _filter_sql(filters: FilterSpec, alias: str = "c") -> tuple[sql.Composable, list[Any]]:
    """The filters as a WHERE condition on ``alias`` (the twin of :meth:`search_engine.filters.Filters.sql`)."""
    conds: list[sql.Composable] = []
    params: list[Any] = []
    a = sql.Identifier(alias)
    for column, value in (("kind", filters.kind), ("category", filters.category),
                          ("session_id", filters.session), ("project", filters.project)):
        if value is not None:
            conds.append(sql.SQL("{}.{} = %s").format(a, sql.Identifier(column)))
            params.append(value)
    if filters.since:
        conds.append(sql.SQL("{}.ts >= %s").format(a))
        params.append(filters.since)
    if filters.until:
        conds.append(sql.SQL("{}.ts <= %s").format(a))
        params.append(filters.until)
    if not filters.all_status:
        conds.append(sql.SQL("coalesce({}.status, '') <> ALL(%s)").format(a))
        params.append(list(HIDDEN_STATUSES))
    if filters.exclude_session:
        conds.append(sql.SQL("coalesce({}.session_id, '') <> %s").format(a))
        params.append(filters.exclude_session)
    return (sql.SQL(" AND ").join(conds) if conds else sql.SQL("true")), params


def tsquery_sql(terms: Sequence[QueryTerm], op: str) -> tuple[sql.Composable, list[str]]:
    """A ``tsquery`` expression for ``terms`` joined by ``op`` (AND/OR), every term a bound parameter.

    A word goes through ``plainto_tsquery('english', …)`` (stemmed, never parsed as syntax); a CJK run becomes
    the phrase of its bigrams (a 1-character run: a prefix of the index's bigrams); a term's other forms
    (``alts``) are ORed.
    """
    if op not in ("AND", "OR"):
        raise ValueError(op)
    parts: list[sql.Composable] = []
    params: list[str] = []
    for term in terms:
        forms = [term.text, *term.alts]
        if not term.cjk:
            words = sql.SQL(" || ").join(sql.SQL("plainto_tsquery('english', %s)") for _ in forms)
            parts.append(sql.SQL("(") + words + sql.SQL(")") if term.alts else words)
            params.extend(forms)
            continue
        pieces = []
        for form in forms:
            if len(form) == 1:
                pieces.append(sql.SQL("to_tsquery('simple', quote_literal(%s) || ':*')"))
                params.append(form)
            else:
                pieces.append(sql.SQL("phraseto_tsquery('english', %s)"))
                params.append(" ".join(query_bigrams(form)))
        parts.append(sql.SQL("(") + sql.SQL(" || ").join(pieces) + sql.SQL(")"))
    joiner = sql.SQL(" && " if op == "AND" else " || ")
    return joiner.join(parts), params


def bm25_idf(total: int, df: int) -> float:
    """BM25's idf of a term held by ``df`` of ``total`` chunks: ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (never
    negative, as in Lucene and SQLite's FTS5), with ``N`` at least ``df``.

    >>> round(bm25_idf(100, 1), 3), round(bm25_idf(100, 100), 3)
    (4.21, 0.005)
    """
    n = max(total, df)
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def rarest_terms(dfs: Sequence[int], budget: int) -> list[int]:
    """The indexes of the terms an OR query reads the chunks of: the rarest first (by ``df``, then place), as many as
    keep the sum of their ``df`` within ``budget``, and at least the rarest one; in query order.

    >>> rarest_terms([900, 20, 4000, 300], 1500)
    [0, 1, 3]
    >>> rarest_terms([9000, 7000], 1500)
    [1]
    """
    chosen: list[int] = []
    spent = 0
    for i in sorted(range(len(dfs)), key=lambda i: (dfs[i], i)):
        if chosen and spent + dfs[i] > budget:
            break
        chosen.append(i)
        spent += dfs[i]
    return sorted(chosen)


_TSQUERY_TOKEN = re.compile(r"'((?:[^'\\]|''|\\.)*)'(:[*A-D]+)?|([|()])|[^'|()]+")


def tsquery_lexemes(text: str) -> list[list[tuple[str, bool]]]:
    """The lexemes of a tsquery as the server prints it, as alternatives (split at the ``|`` outside any parentheses)
    of lexemes that must all be held, each with whether it is a prefix (``:*``).

    >>> tsquery_lexemes("'covid-19' & 'covid' & '19'")
    [[('covid-19', False), ('covid', False), ('19', False)]]
    >>> tsquery_lexemes("'大学' <-> '学習' | '京':*")
    [[('大学', False), ('学習', False)], [('京', True)]]
    >>> tsquery_lexemes("'it''s'")
    [[("it's", False)]]
    """
    alternatives: list[list[tuple[str, bool]]] = [[]]
    depth = 0
    for m in _TSQUERY_TOKEN.finditer(text):
        lexeme, marks, op = m.group(1), m.group(2), m.group(3)
        if lexeme is not None:
            value = re.sub(r"\\(.)", r"\1", lexeme.replace("''", "'"))
            alternatives[-1].append((value, bool(marks and "*" in marks)))
        elif op == "(":
            depth += 1
        elif op == ")":
            depth -= 1
        elif op == "|" and depth == 0:
            alternatives.append([])
    return [alt for alt in alternatives if alt]


class PgStore:
    """The team index on one PostgreSQL database, seen as the role in the URL."""

    def __init__(self, url: str, *, max_size: int = 4, timeout: float = 10.0):
        """Connect to ``url`` (a pool of up to ``max_size`` connections). The schema must be at
        :data:`~indexer.store.pg_schema.SCHEMA_VERSION` (``memsearch team init --apply`` makes it so)."""
        self.display_url = mask_url(url)
        try:  # one plain connection first: a refused login or an old schema is one clear line, not pool retries
            with psycopg.connect(url, connect_timeout=max(1, int(timeout))) as conn:
                version = schema_version(conn)
                self.role = _one_row(conn.execute("SELECT current_user"))[0]
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot reach the team database {self.display_url}: {one_line(exc)}") from None
        if version != SCHEMA_VERSION:
            raise StoreUnavailable(f"the team database {self.display_url} has schema version {version}, this "
                                   f"memsearch needs {SCHEMA_VERSION}: ask its administrator to run "
                                   f"`memsearch team init --apply`")
        self._counts: dict[tuple, tuple[float, Any]] = {}
        self.pool = ConnectionPool(url, min_size=1, max_size=max_size, timeout=timeout, open=False,
                                   configure=register_vector, kwargs={"connect_timeout": max(1, int(timeout))})
        try:
            self.pool.open(wait=True, timeout=timeout)
        except PoolTimeout:
            self.pool.close()
            raise StoreUnavailable(f"cannot open connections to the team database {self.display_url}") from None

    def close(self) -> None:
        self.pool.close()

    def _cached(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()``, remembered for :data:`COUNTS_TTL` seconds under ``key``."""
        now = time.monotonic()
        hit = self._counts.get(key)
        if hit is not None and now - hit[0] < COUNTS_TTL:
            return hit[1]
        value = compute()
        self._counts[key] = (now, value)
        return value

    # -- writing ------------------------------------------------------------------------------------------------

    def write_batch(self, source: SourceState, chunks: Sequence[ChunkRow]) -> int:
        self._counts.clear()
        with self.pool.connection() as conn, conn.transaction():
            return self._write(conn, source, chunks)

    @staticmethod
    def _write(conn: psycopg.Connection, source: SourceState, chunks: Sequence[ChunkRow]) -> int:
        """Record ``source`` and add ``chunks`` (uids already held are skipped) in the caller's transaction."""
        _upsert_sources(conn, [source])
        return _copy_chunks(conn, [(source.path, c) for c in chunks])

    def replace_source(self, source: SourceState, chunks: Sequence[ChunkRow]) -> tuple[int, int]:
        """Make the connecting member's copy of ``source`` hold exactly ``chunks``, in one transaction: chunks of
        the source whose uid is not among them are deleted, the source state recorded, and only the chunks it
        lacks are sent (an event log that grew sends its new events, not the whole log); a chunk held with another
        scope gets the one given. Returns (added, removed).
        What ``memsearch sync`` sends per source: a sync stopped anywhere leaves each source as it was or as it is."""
        return self.replace_sources([(source, chunks)])

    def replace_sources(self, items: Sequence[tuple[SourceState, Sequence[ChunkRow]]],
                        removed_hashes: set[str] | None = None,
                        skipped: list[str] | None = None) -> tuple[int, int]:
        """:meth:`replace_source` for several sources in one transaction (all of them, or none, are replaced):
        what is held is read in one query, the deletions and scope changes are one statement each, and the new
        chunks go in with one binary ``COPY`` into a staging table and one ``INSERT … SELECT``, so a sync makes
        a few round trips per batch of sources rather than several per source. Returns (added, removed); the
        content hashes of the removed chunks go into ``removed_hashes`` (a sync drops their vectors once it is
        done: :meth:`drop_orphan_vectors`). With ``skipped``, a chunk the server refuses for its own content
        (:data:`ROW_ERRORS`) is left out, described there in one line, and the others go in (see
        :func:`_copy_chunks`); without it, the whole transaction fails."""
        if not items:
            return 0, 0
        paths = [source.path for source, _ in items]
        self._counts.clear()
        with self.pool.connection() as conn, conn.transaction():
            held: dict[tuple[str, str], str] = {(r[0], r[1]): r[2] for r in conn.execute(
                f"SELECT source, uid, scope FROM {SCHEMA}.chunks WHERE owner = current_user AND source = ANY(%s)",
                (paths,))}
            wanted = {(source.path, c.uid): c.scope for source, chunks in items for c in chunks}
            gone = sorted(set(held) - set(wanted))
            removed = 0
            if gone:
                hashes = [r[0] for r in conn.execute(
                    f"DELETE FROM {SCHEMA}.chunks c USING unnest(%s::text[], %s::text[]) AS g(source, uid)"
                    " WHERE c.owner = current_user AND c.source = g.source AND c.uid = g.uid RETURNING c.hash",
                    ([g[0] for g in gone], [g[1] for g in gone]))]
                removed = len(hashes)
                if removed_hashes is not None:
                    removed_hashes.update(hashes)
            moved = sorted(k for k, scope in wanted.items() if k in held and held[k] != scope)
            if moved:  # a source shared or unshared since it was sent
                conn.execute(
                    f"UPDATE {SCHEMA}.chunks c SET scope = g.scope FROM unnest(%s::text[], %s::text[], %s::text[])"
                    " AS g(source, uid, scope) WHERE c.owner = current_user AND c.source = g.source AND c.uid = g.uid",
                    ([k[0] for k in moved], [k[1] for k in moved], [wanted[k] for k in moved]))
            _upsert_sources(conn, [source for source, _ in items])
            added = _copy_chunks(conn, [(source.path, c) for source, chunks in items for c in chunks
                                        if (source.path, c.uid) not in held], skipped)
        return added, removed

    def delete_source(self, path: str, removed_hashes: set[str] | None = None) -> int:
        """Delete the member's chunks of the source at ``path`` (their content hashes into ``removed_hashes``, as
        :meth:`replace_sources`), in one transaction; returns the chunks removed."""
        self._counts.clear()
        with self.pool.connection() as conn, conn.transaction():
            hashes = [r[0] for r in conn.execute(
                f"DELETE FROM {SCHEMA}.chunks WHERE owner = current_user AND source = %s RETURNING hash", (path,))]
            conn.execute(f"DELETE FROM {SCHEMA}.sources WHERE path = %s", (path,))
            if removed_hashes is not None:
                removed_hashes.update(hashes)
            return len(hashes)

    def drop_orphan_vectors(self, hashes: Iterable[str]) -> int:
        """Delete the vectors of these contents that no chunk holds any more, whoever's chunk that was (the
        schema's ``drop_orphan_vectors``, with the administrator's rights: a vector another member's chunk, or this
        member's other machine's, still uses stays). A sync calls it once its chunks are all written, so content
        that only moved (a renamed file: its old source deleted, its new one written) keeps its vector. Returns
        the vectors deleted."""
        wanted = sorted(set(hashes))
        if not wanted:
            return 0
        self._counts.clear()
        with self.pool.connection() as conn, conn.transaction():
            return int(_one_row(conn.execute(f"SELECT {SCHEMA}.drop_orphan_vectors(%s)", (wanted,)))[0])

    def sources(self) -> dict[str, SourceState]:
        with self.pool.connection() as conn:
            rows = conn.execute(f"SELECT path, source, mtime_ns, size, content_hash, consumed, head_hash"
                                f" FROM {SCHEMA}.sources ORDER BY path").fetchall()
        return {r[0]: SourceState(*r) for r in rows}

    # -- vectors ------------------------------------------------------------------------------------------------

    def ensure_vector_model(self, model: str, dim: int) -> None:
        """Make the HNSW index for ``model``'s ``dim``-wide vectors if it is missing. Creating an index needs the
        tables' owner, so ``memsearch team init`` does it for the configured model; without it a member's
        searches are still answered, by an exact scan."""
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(vector_index_sql(model, dim))

    def pending_embeddings(self, model: str, limit: int | None = None, after: int = 0) -> list[PendingText]:
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT DISTINCT ON (c.hash) c.hash, c.title, c.text, c.speaker, c.ts, c.id, c.reply_to"
                f" FROM {SCHEMA}.chunks c"
                f" WHERE NOT EXISTS (SELECT 1 FROM {SCHEMA}.vectors v WHERE v.hash = c.hash AND v.model = %s)"
                " ORDER BY c.hash, c.id", (model,)).fetchall()
        rows = sorted((r for r in rows if r[5] > after), key=lambda r: r[5])
        return [PendingText(*r) for r in rows[:limit]]

    def pending_hashes(self, model: str) -> list[str]:
        """The content hashes :meth:`pending_embeddings` lists, without their texts (what a sync asks for: it sends
        vectors the local index holds, it does not embed)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT c.hash FROM {SCHEMA}.chunks c WHERE NOT EXISTS (SELECT 1 FROM {SCHEMA}.vectors v"
                " WHERE v.hash = c.hash AND v.model = %s) GROUP BY c.hash ORDER BY min(c.id)", (model,)).fetchall()
        return [r[0] for r in rows]

    def put_embeddings(self, model: str, vectors: Sequence[tuple[str, Sequence[float] | None]]) -> int:
        """Binary ``COPY`` of the vectors into a staging table, then one ``INSERT … SELECT`` (a (hash, model)
        held already is skipped; row-level security checks each row as it would a plain insert)."""
        if not vectors:
            return 0
        self._counts.clear()
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(_STAGE_VECTORS_SQL)
            with conn.cursor() as cur:
                with cur.copy(f"COPY {_STAGE_VECTORS}(hash, embedding) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types(["text", "vector"])
                    for h, vec in vectors:
                        copy.write_row((h, None if vec is None else _as_vector(vec)))
                added = cur.execute(f"INSERT INTO {SCHEMA}.vectors(hash, model, embedding) SELECT hash, %s,"
                                    f" embedding FROM {_STAGE_VECTORS} ON CONFLICT (hash, model) DO NOTHING",
                                    (model,)).rowcount
        return max(added, 0)

    def vector_candidates(self, vector: Sequence[float], model: str, filters: FilterSpec, limit: int,
                          *, ef_search: int = 40) -> list[Scored]:
        if not EF_SEARCH_RANGE[0] <= ef_search <= EF_SEARCH_RANGE[1]:
            raise ValueError(f"ef_search must be within {EF_SEARCH_RANGE}")
        q = _as_vector(vector)
        dim = int(q.shape[0])
        where, params = _filter_sql(filters)
        with self.pool.connection() as conn, conn.transaction():
            if filters.selective and self._count_passing(conn, where, params, EXACT_MAX + 1) <= EXACT_MAX:
                return self._exact(conn, q, dim, model, where, params, limit)
            conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(int(ef_search))))
            conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            # the visible contents with a vector (kept counts): at least the vectors the member can find
            total = int(self._cached(("vectors", model), lambda: _one_row(conn.execute(
                f"SELECT coalesce(sum(vectors), 0) FROM {SCHEMA}.contents WHERE model = %s", (model,)))[0]))
            k = min(total, max(limit * 2, 64))
            while k:
                found = conn.execute(self.knn_sql(dim, where), [q, model, q, min(k, KNN_MAX), *params, limit])
                rows = [Scored(r[0], float(r[1])) for r in found]
                if len(rows) >= limit or k >= total:
                    return rows
                if k >= KNN_MAX:
                    break
                k = min(total, k * 4)
            return self._exact(conn, q, dim, model, where, params, limit)

    def similarities(self, vector: bytes | Sequence[float], model: str, ids: Sequence[int]) -> dict[int, float]:
        if not ids:
            return {}
        q = _as_vector(vector)
        d = sql.Literal(int(q.shape[0]))
        query = sql.SQL(
            "SELECT c.id, 1 - (v.embedding::vector({d}) <=> %s::vector({d})) FROM {s}.chunks c"
            " JOIN {s}.vectors v ON v.hash = c.hash AND v.model = %s AND v.embedding IS NOT NULL"
            " WHERE c.id = ANY(%s)").format(d=d, s=sql.Identifier(SCHEMA))
        with self.pool.connection() as conn:
            rows = conn.execute(query, [q, model, list(ids)])
            return {r[0]: float(r[1]) for r in rows if r[1] is not None and r[1] == r[1]}  # NaN: a zero vector

    @staticmethod
    def knn_sql(dim: int, where: sql.Composable) -> sql.Composed:
        """The approximate query: the ``k`` nearest vectors by the HNSW index, then their chunks within the
        filters. Params: query vector, model, query vector, k, filter params…, limit."""
        d = sql.Literal(int(dim))
        return sql.SQL(
            "WITH near AS MATERIALIZED (SELECT v.hash, v.embedding::vector({d}) <=> %s::vector({d}) AS distance"
            " FROM {s}.vectors v WHERE v.model = %s AND v.embedding IS NOT NULL"
            " ORDER BY v.embedding::vector({d}) <=> %s::vector({d}) LIMIT %s)"
            " SELECT c.id, near.distance FROM near JOIN {s}.chunks c ON c.hash = near.hash WHERE {w}"
            " ORDER BY near.distance, c.id LIMIT %s").format(d=d, s=sql.Identifier(SCHEMA), w=where)

    @staticmethod
    def _count_passing(conn, where, params, most: int) -> int:
        """How many chunks the condition ``where`` lets through, counted up to ``most``."""
        query = sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {s}.chunks c WHERE {w} LIMIT %s) passing").format(
            s=sql.Identifier(SCHEMA), w=where)
        return int(_one_row(conn.execute(query, [*params, most]))[0])

    @staticmethod
    def _exact(conn, q, dim: int, model: str, where, params, limit: int) -> list[Scored]:
        d = sql.Literal(int(dim))
        query = sql.SQL(
            "SELECT c.id, v.embedding::vector({d}) <=> %s::vector({d}) AS distance FROM {s}.chunks c"
            " JOIN {s}.vectors v ON v.hash = c.hash AND v.model = %s AND v.embedding IS NOT NULL"
            " WHERE {w} ORDER BY distance, c.id LIMIT %s").format(d=d, s=sql.Identifier(SCHEMA), w=where)
        return [Scored(r[0], float(r[1])) for r in conn.execute(query, [q, model, *params, limit])]

    # -- lexical ------------------------------------------------------------------------------------------------

    def lexical_top_k(self, terms: Sequence[QueryTerm], op: str, filters: FilterSpec, limit: int) -> list[Scored]:
        """Chunks matching all (AND) or any (OR) of ``terms``, best first, scored like BM25 from the engine's parts:
        each term's ``ts_rank`` (its tf part: saturating in the term's occurrences, the column weights, divided by
        1 + log of the chunk's length) times its idf, ``ln(1 + (N - df + 0.5) / (df + 0.5))``, with ``df`` and
        ``N`` among the chunks the member sees (kept counts: :meth:`term_frequencies`). ``ts_rank`` alone has no
        idf: a chunk full of the query's common words would outrank one holding its rare one.

        Only some matches are scored, all found through the GIN index (:data:`CANDIDATES`, :data:`RESCORED`):

        - OR: the chunks holding the rarest terms, as many terms as keep their summed ``df`` within
          :data:`CANDIDATES` (at least the rarest); among them the :data:`RESCORED` × ``limit`` with the highest
          sum of the idf of the terms they hold (an upper bound of their score, cheap to compute) get the
          ``ts_rank`` calls. A chunk holding only the query's common terms is not ranked when rarer terms fill the
          list (their idf is what it would lose to); when they are too few to, up to :data:`CANDIDATES` chunks of
          the other terms join the candidates (the first the index returns).
        - AND: every chunk holding all the terms, the :data:`RESCORED` × ``limit`` with the best single ``ts_rank``
          of the terms together rescored."""
        if op not in ("AND", "OR"):
            raise ValueError(op)
        if not terms:
            return []
        pieces = [tsquery_sql([term], "AND") for term in terms]
        with self.pool.connection() as conn:
            # each term's tsquery, as the server parses it: a stopword-only term is empty and matches nothing
            texts = _one_row(conn.execute(sql.SQL("SELECT ") + sql.SQL(", ").join(
                sql.SQL("({})::text").format(p) for p, _ in pieces), [x for _, ps in pieces for x in ps]))
            queries = [t for t in texts if t]
            if not queries or (op == "AND" and len(queries) < len(texts)):
                return []
            total, dfs = self.term_frequencies(conn, queries)
            idfs = [bm25_idf(total, df) for df in dfs]
            where, params = _filter_sql(filters)
            s = sql.Identifier(SCHEMA)
            if op == "AND":
                found = " & ".join(f"({q})" for q in queries)
                coarse: sql.Composable = sql.SQL("ts_rank(%s::float4[], c.fts, %s::tsquery, {})").format(
                    sql.Literal(LENGTH_NORMALIZATION))
                coarse_args: list[Any] = [RANK_WEIGHTS, " | ".join(f"({q})" for q in queries)]
                read = list(range(len(queries)))
            else:
                coarse = sql.SQL(" + ").join(sql.SQL("CASE WHEN c.fts @@ %s::tsquery THEN %s ELSE 0 END")
                                             for _ in queries)
                coarse_args = [x for q, idf in zip(queries, idfs) for x in (q, idf)]
                read = rarest_terms(dfs, CANDIDATES)
                found = " | ".join(f"({queries[i]})" for i in read)
            candidates = sql.SQL("SELECT c.id, c.fts, {coarse} AS coarse FROM {s}.chunks c"
                                 " WHERE c.fts OPERATOR({s}.@@) %s::tsquery AND {w}").format(
                coarse=coarse, s=s, w=where)
            args: list[Any] = [*coarse_args, found, *params]
            if op == "OR" and len(read) < len(queries) and sum(dfs[i] for i in read) < limit * RESCORED:
                # the rare terms' chunks are too few to fill the list: at most CANDIDATES of the others' join them
                rest = " | ".join(f"({q})" for i, q in enumerate(queries) if i not in read)
                candidates = candidates + sql.SQL(
                    " UNION ALL SELECT * FROM (SELECT c.id, c.fts, {coarse} AS coarse FROM {s}.chunks c"
                    " WHERE c.fts OPERATOR({s}.@@) %s::tsquery AND NOT c.fts @@ %s::tsquery AND {w} LIMIT %s) AS more"
                ).format(coarse=coarse, s=s, w=where)
                args += [*coarse_args, rest, found, *params, CANDIDATES]
            score = sql.SQL(" + ").join(sql.SQL("%s * ts_rank(%s::float4[], top.fts, %s::tsquery, {})").format(
                sql.Literal(LENGTH_NORMALIZATION)) for _ in queries)
            query = sql.SQL(
                "WITH top AS MATERIALIZED (SELECT * FROM ({candidates}) AS found ORDER BY coarse DESC, id LIMIT %s)"
                " SELECT top.id, {score} AS score FROM top ORDER BY score DESC, top.id LIMIT %s"
            ).format(candidates=candidates, score=score)
            args += [limit * RESCORED, *[x for q, idf in zip(queries, idfs) for x in (idf, RANK_WEIGHTS, q)], limit]
            rows = conn.execute(query, args).fetchall()
        return [Scored(r[0], float(r[1])) for r in rows]

    def term_frequencies(self, conn: psycopg.Connection, queries: Sequence[str]) -> tuple[int, list[int]]:
        """(N, each query's df): the chunks the member sees, and of them how many hold each of ``queries`` (one
        term's tsquery text each), from the kept counts of :mod:`indexer.store.pg_schema` (migration 7) instead of
        a count of the matches. A term of several lexemes (a compound word, a CJK phrase) counts as its rarest
        lexeme, a prefix as all the lexemes it starts (at most N): estimates from above, as a ``df`` for an idf
        needs to be."""
        parsed = [tsquery_lexemes(q) for q in queries]
        exact = sorted({lex for alts in parsed for alt in alts for lex, prefix in alt if not prefix})
        prefixes = sorted({lex for alts in parsed for alt in alts for lex, prefix in alt if prefix})
        total = int(self._cached(("chunks",), lambda: _one_row(conn.execute(
            f"SELECT coalesce(sum(chunks), 0) FROM {SCHEMA}.counts"))[0]))
        df: dict[tuple[str, bool], int] = {}
        if exact:
            df.update(((lex, False), int(n)) for lex, n in conn.execute(
                f"SELECT lexeme, sum(chunks) FROM {SCHEMA}.lexemes WHERE lexeme = ANY(%s) GROUP BY lexeme",
                (exact,)))
        for prefix in prefixes:
            df[(prefix, True)] = int(_one_row(conn.execute(
                f"SELECT coalesce(sum(chunks), 0) FROM {SCHEMA}.lexemes WHERE lexeme >= %s AND lexeme < %s",
                (prefix, prefix + "\U0010ffff")))[0])
        return total, [min(total, sum(min((df.get(x, 0) for x in alt), default=0) for alt in alts))
                       for alts in parsed]

    def lexical_expression(self, terms: Sequence[QueryTerm], op: str) -> str:
        """The tsquery :meth:`lexical_top_k` builds, written out with its terms (for ``--explain``)."""
        if op not in ("AND", "OR"):
            raise ValueError(op)
        parts = []
        for term in terms:
            forms = [term.text, *term.alts]
            if not term.cjk:
                parts.append("(" + " || ".join(f"plainto_tsquery({f!r})" for f in forms) + ")" if term.alts
                             else f"plainto_tsquery({term.text!r})")
                continue
            parts.append("(" + " || ".join(f"{f!r}:*" if len(f) == 1 else f"phraseto_tsquery({' '.join(query_bigrams(f))!r})"
                                           for f in forms) + ")")
        return (" && " if op == "AND" else " || ").join(parts)

    def lexical_native(self, expression: str, filters: FilterSpec, limit: int) -> list[Scored]:
        """``expression`` in ``to_tsquery`` syntax (``&``, ``|``, ``!``, ``<->``, ``:*``), English configuration."""
        where, params = _filter_sql(filters)
        query = sql.SQL(
            "WITH q AS (SELECT to_tsquery('english', %s) AS q) SELECT c.id, ts_rank(%s::float4[], c.fts, q.q) AS score"
            " FROM {s}.chunks c, q WHERE c.fts OPERATOR({s}.@@) q.q AND {w} ORDER BY score DESC, c.id LIMIT %s"
        ).format(s=sql.Identifier(SCHEMA), w=where)
        try:
            with self.pool.connection() as conn:
                rows = conn.execute(query, [expression, RANK_WEIGHTS, *params, limit]).fetchall()
        except psycopg.errors.SyntaxError as exc:
            raise UsageError(f"invalid tsquery {expression!r}: {one_line(exc)}; drop --raw to search plain text"
                             ) from None
        return [Scored(r[0], float(r[1])) for r in rows]

    # -- reading ------------------------------------------------------------------------------------------------

    def vector_model(self) -> str | None:
        """The model most of the vectors the member sees are of (from the kept counts, migration 7), whoever sent
        them; None while they see none. Not the member's own last sync's model: a member who synced nothing (a
        new machine, an empty memory) still searches the vectors of what others shared."""
        return self._cached(("vector_model",), self._vector_model)

    def _vector_model(self) -> str | None:
        with self.pool.connection() as conn:
            row = conn.execute(f"SELECT model FROM {SCHEMA}.contents WHERE model <> '' GROUP BY model"
                               " HAVING sum(vectors) > 0 ORDER BY sum(vectors) DESC, model LIMIT 1").fetchone()
        return row[0] if row else None

    def holds_vectors(self, model: str) -> bool:
        """Whether the member sees vectors of ``model``: :meth:`health`'s count, which a search reads anyway (the
        same cached figure, no further round trip)."""
        return self.health(model).vectors > 0

    def fetch_hits(self, ids: Sequence[int]) -> dict[int, HitRow]:
        if not ids:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(f"SELECT {_HIT_COLUMNS} FROM {SCHEMA}.chunks WHERE id = ANY(%s)",
                                (list(ids),)).fetchall()
        return {r[0]: HitRow(*r) for r in rows}

    # -- browsing (show, timeline, recent, sessions, stats, the standing context) --------------------------------

    def find_uid_prefix(self, prefix: str, limit: int = 2) -> list[tuple[HitRow, str, int]]:
        """Up to ``limit`` chunk ids starting with ``prefix``, each with its source (``owner:source``, the team
        store's name of a file: two members' machines may hold the same path) and its place in it. The same id
        held by several sources (one member's two machines) is one answer: the member's own copy first."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT * FROM (SELECT DISTINCT ON (uid) {_HIT_COLUMNS}, source, seq FROM {SCHEMA}.chunks"
                " WHERE uid >= %s AND uid < %s ORDER BY uid, owner <> current_user, id) u ORDER BY uid LIMIT %s",
                (prefix, prefix + "g", limit)).fetchall()
        return [(row, f"{row.owner}:{r[-2]}", r[-1]) for r in rows for row in (HitRow(*r[:-2]),)]

    def neighbours(self, file: str, seq: int) -> tuple[str | None, str | None, int]:
        """The ids of the visible chunks before and after place ``seq`` of ``file`` (as
        :meth:`find_uid_prefix` names it), and how many visible chunks it has."""
        owner, _, source = file.partition(":")
        where = f"FROM {SCHEMA}.chunks WHERE owner = %s AND source = %s"
        with self.pool.connection() as conn:
            prev = conn.execute(f"SELECT uid {where} AND seq < %s ORDER BY seq DESC LIMIT 1",
                                (owner, source, seq)).fetchone()
            nxt = conn.execute(f"SELECT uid {where} AND seq > %s ORDER BY seq LIMIT 1", (owner, source, seq)).fetchone()
            count = _one_row(conn.execute(f"SELECT count(*) {where}", (owner, source)))[0]
        return prev and prev[0], nxt and nxt[0], count

    def around(self, center: HitRow, window: int) -> tuple[list[HitRow], list[HitRow]]:
        """The ``window`` visible chunks before and after ``center`` in time (by ts, then id), oldest first: of
        its session when it has one, else of everything dated."""
        ts = center.ts or ""
        scope, params = ("session_id = %s", [center.session_id]) if center.session_id else ("ts IS NOT NULL", [])
        with self.pool.connection() as conn:
            before = conn.execute(
                f"SELECT {_HIT_COLUMNS} FROM {SCHEMA}.chunks WHERE {scope} AND (ts < %s OR (ts = %s AND id < %s))"
                " ORDER BY ts DESC, id DESC LIMIT %s", [*params, ts, ts, center.id, window]).fetchall()
            after = conn.execute(
                f"SELECT {_HIT_COLUMNS} FROM {SCHEMA}.chunks WHERE {scope} AND (ts > %s OR (ts = %s AND id > %s))"
                " ORDER BY ts, id LIMIT %s", [*params, ts, ts, center.id, window]).fetchall()
        return [HitRow(*r) for r in reversed(before)], [HitRow(*r) for r in after]

    def recent_rows(self, *, session: str | None = None, type: str | None = None, project: str | None = None,
                    limit: int = 20, offset: int = 0) -> list[HitRow]:
        """The latest visible items, newest first, one per event (a long event's first chunk). ``type`` is a kind
        or an event type (a category)."""
        conds = ["coalesce(status, '') <> ALL(%s)", "(kind <> 'event' OR seq %% 1000 = 0)"]
        params: list[Any] = [list(HIDDEN_STATUSES)]
        for column, value in (("session_id", session), ("project", project)):
            if value is not None:
                conds.append(f"{column} = %s")
                params.append(value)
        if type is not None:
            conds.append("kind = %s" if type in KINDS else "category = %s")
            params.append(type)
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_HIT_COLUMNS} FROM {SCHEMA}.chunks WHERE {' AND '.join(conds)}"
                " ORDER BY ts IS NULL, ts DESC, id DESC LIMIT %s OFFSET %s", [*params, limit, offset]).fetchall()
        return [HitRow(*r) for r in rows]

    def session_event_counts(self, project: str | None = None) -> list[tuple[str, str, int, str | None, str | None,
                                                                             str | None]]:
        """``(session, event type, events, first ts, last ts, project)`` per session and type; with ``project``,
        the sessions that have an event of it."""
        where, params = "kind = 'event' AND session_id IS NOT NULL", []
        if project is not None:
            where += f" AND session_id IN (SELECT session_id FROM {SCHEMA}.chunks WHERE kind = 'event' AND project = %s)"
            params.append(project)
        with self.pool.connection() as conn:
            return [tuple(r) for r in conn.execute(
                "SELECT session_id, category, count(DISTINCT coalesce(event_id, uid)), min(ts), max(ts), max(project)"
                f" FROM {SCHEMA}.chunks WHERE {where} GROUP BY session_id, category", params)]

    def session_prompts(self, sessions: Sequence[str]) -> Iterator[tuple[str, str]]:
        """``(session, prompt text)`` of ``sessions``' prompts, each session's in time order."""
        with self.pool.connection() as conn:
            rows = conn.execute(f"SELECT session_id, text FROM {SCHEMA}.chunks WHERE kind = 'event' AND category ="
                                " 'prompt' AND session_id = ANY(%s) ORDER BY ts, seq", (list(sessions),)).fetchall()
        yield from (tuple(r) for r in rows)

    def event_counts(self) -> tuple[dict[str, int], dict[str, int], int]:
        """Visible events (once each, however many chunks) by type and by day, and the sessions they belong to."""
        events = f"FROM {SCHEMA}.chunks WHERE kind = 'event'"
        with self.pool.connection() as conn:
            by_type = dict(conn.execute(f"SELECT category, count(DISTINCT coalesce(event_id, uid)) {events}"
                                        " GROUP BY category ORDER BY category").fetchall())
            by_day = dict(conn.execute(f"SELECT substr(ts, 1, 10) AS day, count(DISTINCT coalesce(event_id, uid))"
                                       f" {events} AND ts IS NOT NULL GROUP BY day ORDER BY day").fetchall())
            sessions = _one_row(conn.execute(f"SELECT count(DISTINCT session_id) {events}"))[0]
        return by_type, by_day, sessions

    def redacted_texts(self) -> Iterator[tuple[str, str, str | None, str | None, str]]:
        """``(kind, source, event id, session, text)`` of visible chunks holding a redaction marker, session
        summaries left out, in source order."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT kind, owner || ':' || source, event_id, session_id, text FROM {SCHEMA}.chunks"
                " WHERE strpos(text, '[REDACTED:') > 0 AND NOT (kind = 'note' AND category = 'session')"
                " ORDER BY owner, source, seq").fetchall()
        yield from (tuple(r) for r in rows)

    def latest_session_summary(self, project: str) -> tuple[str, str, str] | None:
        """``(first chunk id, path, whole text)`` of ``project``'s most recent visible session summary note."""
        with self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT owner, source, path, min(uid) FROM {SCHEMA}.chunks WHERE kind = 'note' AND category ="
                " 'session' AND project = %s GROUP BY owner, source, path ORDER BY max(ts) DESC NULLS LAST,"
                " source DESC LIMIT 1", (project,)).fetchone()
            if not row:
                return None
            texts = [t for (t,) in conn.execute(f"SELECT text FROM {SCHEMA}.chunks WHERE owner = %s AND source = %s"
                                                " ORDER BY seq", (row[0], row[1]))]
        return row[3], row[2], "\n".join(texts)

    def active_facts(self, project: str, limit: int) -> list[tuple[str, str | None, str]]:
        """``(id, ts, text)`` of ``project``'s visible active facts, newest first."""
        with self.pool.connection() as conn:
            return [tuple(r) for r in conn.execute(
                f"SELECT uid, ts, text FROM {SCHEMA}.chunks WHERE kind = 'fact' AND project = %s AND"
                " coalesce(status, 'active') = 'active' ORDER BY ts DESC NULLS LAST, id DESC LIMIT %s",
                (project, limit))]

    def delete_uids(self, uids: Sequence[str]) -> int:
        """Delete the connecting member's own chunks with these ids (from every source of theirs that holds
        them: ``memsearch forget`` on the team store), in one transaction; a shared chunk of another member is
        never deleted (row-level security allows a member to delete only their own rows). The vectors of the
        content no chunk holds any more go in the same transaction (the schema's ``drop_orphan_vectors``: a vector
        another member's chunk still uses stays). Returns the chunks removed."""
        if not uids:
            return 0
        self._counts.clear()
        with self.pool.connection() as conn, conn.transaction():
            hashes = [r[0] for r in conn.execute(
                f"DELETE FROM {SCHEMA}.chunks WHERE owner = current_user AND uid = ANY(%s) RETURNING hash",
                (list(uids),))]
            if hashes:
                conn.execute(f"SELECT {SCHEMA}.drop_orphan_vectors(%s)", (sorted(set(hashes)),))
            return len(hashes)

    def health(self, model: str | None) -> StoreHealth:
        """The counts of what the member sees (cached for :data:`COUNTS_TTL` seconds)."""
        return self._cached(("health", model), lambda: self._health(model))

    def _health(self, model: str | None) -> StoreHealth:
        """From the kept counts (migration 7), a few rows whatever the size of the store: content awaiting a vector
        is the distinct contents the member sees less those with a vector of ``model``."""
        by_kind: dict[str, int] = {}
        own = others = 0
        with self.pool.connection() as conn:
            for kind, mine, n in conn.execute(f"SELECT kind, owner = current_user, sum(chunks) FROM {SCHEMA}.counts"
                                              " GROUP BY 1, 2 ORDER BY 1, 2"):
                if n:
                    by_kind[kind] = by_kind.get(kind, 0) + int(n)
                    own, others = (own + int(n), others) if mine else (own, others + int(n))
            sources = _one_row(conn.execute(f"SELECT count(*) FROM {SCHEMA}.sources"))[0]
            vectors = pending = 0
            if model is not None:
                contents, held, vectors = (int(x) for x in _one_row(conn.execute(
                    "SELECT coalesce(sum(hashes) FILTER (WHERE model = ''), 0),"
                    " coalesce(sum(hashes) FILTER (WHERE model = %s), 0),"
                    f" coalesce(sum(vectors) FILTER (WHERE model = %s), 0) FROM {SCHEMA}.contents", (model, model))))
                pending = max(0, contents - held)
        return StoreHealth(chunks=own + others, by_kind=by_kind, sources=sources, pending_embeddings=pending,
                           vectors=vectors, own_chunks=own, shared_by_others=others)

    def get_meta(self, key: str) -> str | None:
        with self.pool.connection() as conn:
            row = conn.execute(f"SELECT value FROM {SCHEMA}.meta WHERE key = %s", (key,)).fetchone()
        return row[0] if row else None

    def meta_items(self, prefix: str) -> dict[str, str]:
        """The connecting member's meta keys starting with ``prefix``, with their values (a sync reads the records of
        the member's memory roots on one machine: :func:`indexer.sync.root_meta_key`)."""
        with self.pool.connection() as conn:
            rows = conn.execute(f"SELECT key, value FROM {SCHEMA}.meta WHERE owner = current_user AND starts_with(key, %s)"
                                " ORDER BY key", (prefix,)).fetchall()
        return {r[0]: r[1] for r in rows}

    def set_meta(self, key: str, value: str | None) -> None:
        self._counts.clear()
        with self.pool.connection() as conn, conn.transaction():
            if value is None:
                conn.execute(f"DELETE FROM {SCHEMA}.meta WHERE key = %s", (key,))
            else:
                conn.execute(f"INSERT INTO {SCHEMA}.meta(key, value) VALUES (%s, %s)"
                             " ON CONFLICT (owner, key) DO UPDATE SET value = excluded.value", (key, storable(value)))


#: Per-connection staging tables of the binary ``COPY`` writes: temporary (each connection has its own), emptied
#: at every commit, created once per connection.
_STAGE_CHUNKS = "memsearch_stage_chunks"
_STAGE_VECTORS = "memsearch_stage_vectors"
_STAGED_CHUNK_COLUMNS: tuple[tuple[str, str], ...] = (
    ("scope", "text"), ("uid", "text"), ("hash", "text"), ("source", "text"), ("path", "text"), ("seq", "int4"),
    ("kind", "text"), ("category", "text"), ("title", "text"), ("text", "text"), ("line_start", "int4"),
    ("line_end", "int4"), ("event_id", "text"), ("ts", "text"), ("session_id", "text"), ("project", "text"),
    ("status", "text"), ("speaker", "text"), ("reply_to", "text"), ("fts_title", "text"), ("fts_text", "text"),
    ("fts_context", "text"))
_STAGE_CHUNKS_SQL = (f"CREATE TEMP TABLE IF NOT EXISTS {_STAGE_CHUNKS}("
                     + ", ".join(f"{name} {kind}" for name, kind in _STAGED_CHUNK_COLUMNS) + ") ON COMMIT DELETE ROWS")
_STAGE_VECTORS_SQL = (f"CREATE TEMP TABLE IF NOT EXISTS {_STAGE_VECTORS}(hash text, embedding vector)"
                      " ON COMMIT DELETE ROWS")
_CHUNK_COLUMNS = ", ".join(name for name, _ in _STAGED_CHUNK_COLUMNS[:-3])


def _upsert_sources(conn: psycopg.Connection, sources: Sequence[SourceState]) -> None:
    """Record the connecting member's ``sources`` (one statement, in the caller's transaction)."""
    conn.execute(
        f"INSERT INTO {SCHEMA}.sources(path, source, mtime_ns, size, content_hash, consumed, head_hash)"
        " SELECT * FROM unnest(%s::text[], %s::text[], %s::int8[], %s::int8[], %s::text[], %s::int8[], %s::text[])"
        " ON CONFLICT (owner, path) DO UPDATE SET"
        " source = excluded.source, mtime_ns = excluded.mtime_ns, size = excluded.size,"
        " content_hash = excluded.content_hash, consumed = excluded.consumed,"
        " head_hash = excluded.head_hash, indexed_at = now()",
        [[s.path for s in sources], [s.source for s in sources], [s.mtime_ns for s in sources],
         [s.size for s in sources], [s.content_hash for s in sources], [s.consumed for s in sources],
         [s.head_hash for s in sources]])


def _copy_chunks(conn: psycopg.Connection, rows: Sequence[tuple[str, ChunkRow]], skipped: list[str] | None = None
                 ) -> int:
    """Add ``(source path, chunk)`` rows in the caller's transaction: a binary ``COPY`` into the staging table,
    then one ``INSERT … SELECT`` that builds the tsvectors on the server; a uid the source holds already is
    skipped. Every text is sent :func:`~indexer.base.storable.storable` (a NUL an older version stored locally
    still syncs). Returns the chunks added.

    With ``skipped``, the rows go in under a savepoint; when the server refuses one for its content
    (:data:`ROW_ERRORS`), each half is tried again the same way, down to the rows refused alone, which are left
    out and described in ``skipped``: one bad chunk costs a few round trips, never the rest of the sync."""
    if not rows:
        return 0
    if skipped is None:
        return _copy_rows(conn, rows)
    try:
        with conn.transaction():  # a savepoint: a refused row takes back this attempt only
            return _copy_rows(conn, rows)
    except ROW_ERRORS as exc:
        if len(rows) == 1:
            skipped.append(_refused(rows[0][1], exc))
            return 0
        half = len(rows) // 2
        return _copy_chunks(conn, rows[:half], skipped) + _copy_chunks(conn, rows[half:], skipped)


def _refused(c: ChunkRow, exc: Exception) -> str:
    """One line naming a chunk the server refused and why: ``notes/a.md chunk 3f2a… (lines 4-9): <reason>``."""
    where = (f"lines {c.line_start}-{c.line_end}" if c.line_start is not None
             else f"event {c.event_id}" if c.event_id else f"part {c.seq}")
    return f"{c.path} chunk {c.uid} ({where}): {one_line(exc)}"


def _copy_rows(conn: psycopg.Connection, rows: Sequence[tuple[str, ChunkRow]]) -> int:
    # emptied first: the rows of a half :func:`_copy_chunks` sent before are staged still (until the commit), and
    # the INSERT below would read them again
    conn.execute(f"{_STAGE_CHUNKS_SQL}; DELETE FROM {_STAGE_CHUNKS}")
    with conn.cursor() as cur:
        with cur.copy(f"COPY {_STAGE_CHUNKS} FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([kind for _, kind in _STAGED_CHUNK_COLUMNS])
            for path, c in rows:
                copy.write_row(tuple(storable(v) if isinstance(v, str) else v for v in (
                    c.scope, c.uid, c.hash, path, c.path, c.seq, c.kind, c.category, c.title, c.text, c.line_start,
                    c.line_end, c.event_id, c.ts, c.session_id, c.project, c.status, c.speaker, c.reply_to,
                    index_form(fts_title(c.kind, c.title, c.ts)), index_form(c.text), index_form(c.context))))
        added = cur.execute(
            f"INSERT INTO {SCHEMA}.chunks({_CHUNK_COLUMNS}, fts) SELECT {_CHUNK_COLUMNS},"
            " setweight(to_tsvector('english', fts_title), 'A') || setweight(to_tsvector('english', fts_text), 'B')"
            f" || setweight(to_tsvector('english', fts_context), 'D') FROM {_STAGE_CHUNKS}"
            " ON CONFLICT (owner, source, uid) DO NOTHING").rowcount
    return max(added, 0)


def apply_team_init(admin_url: str, members: Sequence[str], vector_models: Sequence[tuple[str, int]] = ()) -> int:
    """Run the administrator's script (:func:`indexer.store.pg_schema.team_init_sql`) on ``admin_url``: the extension,
    the migrations, the vector indexes, then the member roles. Returns the schema version."""
    try:
        conn = psycopg.connect(admin_url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise StoreUnavailable(f"cannot reach {mask_url(admin_url)}: {one_line(exc)}") from None
    try:
        with conn:
            version = migrate(conn)
            with conn.transaction():  # the kept counts set from the rows again (a repair, should they drift)
                conn.execute(RECOUNT_SQL)
            for model, dim in vector_models:
                conn.execute(vector_index_sql(model, dim))
            for name in dict.fromkeys(members):
                conn.execute(member_sql(name))
    except psycopg.Error as exc:
        raise StoreUnavailable(f"team init on {mask_url(admin_url)} failed: {one_line(exc)}") from None
    return version


def _as_vector(value: Sequence[float] | bytes):
    """A float32 array from a sequence of floats or the float32 bytes the embedders return."""
    import numpy as np

    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(value, dtype=np.float32)
    return np.asarray(value, dtype=np.float32)
