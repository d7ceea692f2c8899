"""What search reads from the local index: the BM25 list (FTS5), the vector candidates (sqlite-vec), hit rows,
and what browsing counts (the health every result carries is counted by the writing half). Part of :class:`indexer.store.local.SqliteStore`.

Every user query reaches FTS5 through :func:`fts5_query`, which quotes each term, so operators in user text are
just words; every filter value is bound (:func:`filter_sql`).

Rows go into the row types by iterating the cursor, which apsw types as ``Any``: ``fetchall()``'s rows are typed
``tuple[SQLiteValue, ...]``, which cannot say what the schema fixes column by column (``HitRow`` and the return
annotations do). One-value aggregates are read with ``Cursor.get``: they always return their one row.

>>> from collections import namedtuple
>>> Term = namedtuple("Term", "text cjk alts", defaults=(False, ()))
>>> fts5_query([Term("fix", alts=("fixes",)), Term("東京", cjk=True), Term("서울은", cjk=True, alts=("서울",))], "AND")
'("fix" OR "fixes") AND "東京" AND ("서울 울은" OR "서울")'
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import apsw

from indexer.base.cjk import query_bigrams
from indexer.base.errors import UsageError
from indexer.base.types import HIDDEN_STATUSES, KINDS
from indexer.store import FilterSpec, HitRow, QueryTerm, Scored, sqlite
from indexer.store.vector_matrix import VectorMatrix

if TYPE_CHECKING:  # the warm server's alone: a one-off process (the cold prompt hook) does not import it
    from indexer.store.lexicon import Lexicon

#: FTS5 column weights for bm25(): (title, body, context). The context column holds the previous turn of an event's
#: session: low weight, so a turn's own words count most, but a short reply ("Yes, every Sunday") is still found by
#: the question it answers (measured on LoCoMo: BM25 turn recall@5 0.530 -> 0.631).
TITLE_WEIGHT = 1.0
BODY_WEIGHT = 1.0
CONTEXT_WEIGHT = 0.4
#: The widest vec0 KNN asked for before the exact scan takes over.
KNN_MAX = 4096
#: A filter that lets at most this many chunks through has their distances computed exactly (~4 us a chunk: ~16 ms
#: at most); one that lets more through reads the nearest vectors first (a year of a large memory named in a query
#: would otherwise cost a scan of most of the index: ~0.4 s over 100,000 chunks).
EXACT_MAX = 4096
HIT_COLUMNS = ("id, uid, kind, category, title, text, path, line_start, line_end, ts, session_id, project, status, "
               "event_id, speaker")
_SCORE = f"-bm25(chunks_fts, {TITLE_WEIGHT}, {BODY_WEIGHT}, {CONTEXT_WEIGHT})"


def filter_sql(filters: FilterSpec, alias: str = "c") -> tuple[str, list]:
    """``(condition, params)`` for a WHERE clause on ``alias``; the condition is ``1`` when nothing filters."""
    conds: list[str] = []
    params: list = []
    for column, value in (("kind", filters.kind), ("category", filters.category),
                          ("session_id", filters.session), ("project", filters.project)):
        if value is not None:
            conds.append(f"{alias}.{column} = ?")
            params.append(value)
    if filters.since:
        conds.append(f"{alias}.ts >= ?")
        params.append(filters.since)
    if filters.until:
        conds.append(f"{alias}.ts <= ?")
        params.append(filters.until)
    if not filters.all_status:
        conds.append(f"coalesce({alias}.status, '') NOT IN ({','.join('?' * len(HIDDEN_STATUSES))})")
        params.extend(HIDDEN_STATUSES)
    if filters.exclude_session:
        conds.append(f"coalesce({alias}.session_id, '') != ?")
        params.append(filters.exclude_session)
    return (" AND ".join(conds) or "1"), params


def _cjk_phrase(run: str) -> str:
    """A CJK run as the index holds it: the phrase of its 2-character words (one character: a prefix of them)."""
    if len(run) == 1:
        return f'"{run}"*'
    return '"' + " ".join(query_bigrams(run)) + '"'


def term_phrases(term: QueryTerm) -> list[str]:
    """The FTS5 phrases that count for one term, quoted: a word as itself and its other forms, a CJK run as its
    bigram phrase and its other forms'."""
    if not term.cjk:
        return [f'"{form}"' for form in (term.text, *term.alts)]
    return [_cjk_phrase(form) for form in (term.text, *term.alts)]


def fts5_term(term: QueryTerm) -> str:
    """One term as an FTS5 expression: its phrase, or its phrases ORed."""
    phrases = term_phrases(term)
    return phrases[0] if len(phrases) == 1 else f"({' OR '.join(phrases)})"


def fts5_query(terms: Sequence[QueryTerm], op: str = "AND") -> str:
    """An FTS5 MATCH expression joining the quoted terms with ``op`` (AND or OR); '' when there are none."""
    if op not in ("AND", "OR"):
        raise ValueError(op)
    return f" {op} ".join(fts5_term(t) for t in terms)


def texts_holding_every(docs: Iterable[tuple[str, str]], terms: Sequence[QueryTerm]) -> list[int]:
    """The places in ``docs`` (``(title, body)`` pairs) whose title or body holds every term, read as
    :meth:`SqliteReader.holding_every` reads the index's chunks (the same tokenizer, the same expression): what
    ``forget --match`` takes of the text that is not indexed (archived event logs). In a memory database.

    >>> from collections import namedtuple
    >>> Term = namedtuple("Term", "text cjk alts", defaults=(False, ()))
    >>> texts_holding_every([("prompt", "rotate the staging passwords"), ("note", "staging only")],
    ...                     [Term("staging"), Term("password")])
    [0]
    """
    if not terms:
        return []
    conn = apsw.Connection(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize='{sqlite.FTS_TOKENIZE}')")
        with conn:
            conn.executemany("INSERT INTO docs(rowid, title, body) VALUES (?, ?, ?)",
                             ((i, title, body) for i, (title, body) in enumerate(docs)))
        expression = f"{{title body}} : ({fts5_query(terms, 'AND')})"
        return [row[0] for row in conn.execute("SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY rowid",
                                               (expression,))]
    finally:
        conn.close()


def _as_blob(vector: bytes | Sequence[float]) -> bytes:
    return bytes(vector) if isinstance(vector, (bytes, bytearray, memoryview)) else array("f", vector).tobytes()


class SqliteReader:
    """The reading half of :class:`indexer.store.local.SqliteStore`."""

    conn: apsw.Connection
    #: the warm server's in-memory copy of the vectors (:meth:`keep_vectors_in_memory`), else None: vec0's KNN
    matrix: VectorMatrix | None = None
    #: the warm server's in-memory BM25 postings (:meth:`keep_lexicon_in_memory`), else None: FTS5 ranks
    lexicon: Lexicon | None = None

    # -- the BM25 list ------------------------------------------------------------------------------------------

    def lexical_top_k(self, terms: Sequence[QueryTerm], op: str, filters: FilterSpec, limit: int) -> list[Scored]:
        if not terms:
            return []
        if self.lexicon is not None and not filters.selective:
            ranked = self._bm25_in_memory(self.lexicon, terms, op, filters, limit)
            if ranked is not None:
                return ranked
        return self._bm25(fts5_query(terms, op), filters, limit)

    def holding_every(self, terms: Sequence[QueryTerm], filters: FilterSpec, limit: int | None = None) -> list[Scored]:
        """Chunks whose own title or text holds every term (not the turn before them, which the context column
        holds), within ``filters``, best BM25 first; all of them when ``limit`` is None. What ``forget --match``
        takes: a selection by what the chunks say, never by nearness."""
        if not terms:
            return []
        where, params = filter_sql(filters)
        sql = (
            f"SELECT c.id, {_SCORE} AS score FROM chunks_fts "
            f"JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ? AND {where} "
            f"ORDER BY score DESC LIMIT ?"
        )
        expression = f"{{title body}} : ({fts5_query(terms, 'AND')})"
        return [Scored(row[0], row[1]) for row in self.conn.execute(sql, [expression, *params, limit or -1])]

    def keep_lexicon_in_memory(self) -> Lexicon:
        """Rank the BM25 list from the postings of the phrases searches use, held in memory (:class:`Lexicon`,
        for a long-lived process): the same scores as FTS5's bm25(), without visiting every matching row."""
        if self.lexicon is None:
            from indexer.store.lexicon import Lexicon

            self.lexicon = Lexicon(self.conn, (TITLE_WEIGHT, BODY_WEIGHT, CONTEXT_WEIGHT), sqlite.FTS_TOKENIZE)
        return self.lexicon

    def _bm25_in_memory(self, lexicon: Lexicon, terms: Sequence[QueryTerm], op: str, filters: FilterSpec,
                        limit: int) -> list[Scored] | None:
        """:meth:`_bm25`'s first step from the lexicon: the best ``2 * limit`` rows, then the filters; None when the
        lexicon cannot rank it now, or the filters dropped so many that the ranking must run with them inside
        (FTS5 does both)."""
        inner = limit * 2
        ranked_here = lexicon.top(self.conn, [term_phrases(t) for t in terms], op, inner)
        if ranked_here is None:
            return None
        best, matching = ranked_here
        ranked = self._passing(best, filters, limit)
        return ranked if len(ranked) >= limit or matching <= inner else None

    def _passing(self, best: Sequence[tuple[int, float]], filters: FilterSpec, limit: int) -> list[Scored]:
        """The first ``limit`` of ``best`` (``(id, score)``, best first) whose chunks pass ``filters``."""
        if not best:
            return []
        where, params = filter_sql(filters)
        ids = f"[{','.join(str(cid) for cid, _ in best)}]"
        passing = {row[0] for row in self.conn.execute(
            f"SELECT c.id FROM chunks c WHERE c.id IN (SELECT value FROM json_each(?)) AND {where}", [ids, *params])}
        return [Scored(cid, score) for cid, score in best if cid in passing][:limit]

    def lexical_expression(self, terms: Sequence[QueryTerm], op: str) -> str:
        """The FTS5 expression :meth:`lexical_top_k` runs for ``terms`` (shown by ``--explain`` and ``--json``)."""
        return fts5_query(terms, op)

    def lexical_native(self, expression: str, filters: FilterSpec, limit: int) -> list[Scored]:
        """Like :meth:`lexical_top_k` for an FTS5 expression written by the user (``--raw``), passed through."""
        try:
            return self._bm25(expression, filters, limit)
        except apsw.SQLError as exc:
            reason = " ".join(str(exc).split())  # one line, whatever SQLite echoes back of the query
            raise UsageError(f"invalid FTS5 query {expression!r}: {reason}; drop --raw to search plain text") from None

    def _bm25(self, expression: str, filters: FilterSpec, limit: int) -> list[Scored]:
        """Chunks matching ``expression`` by FTS5's bm25(), negated so that higher is better, best first."""
        if not filters.selective:
            # Rank inside FTS5 first and filter only the best few (joining every match before sorting cost 2.5x at
            # 100k chunks); only the status filter can drop rows here, so a small overfetch nearly always suffices,
            # and the row past it tells whether FTS5 had more to give.
            inner = limit * 2
            best = list(self.conn.execute(
                f"SELECT rowid, {_SCORE} AS score FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score DESC LIMIT ?",
                (expression, inner + 1)))
            ranked = self._passing(best, filters, limit)
            if len(ranked) >= limit or len(best) <= inner:
                return ranked
        where, params = filter_sql(filters)
        sql = (
            f"SELECT c.id, {_SCORE} AS score FROM chunks_fts "
            f"JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ? AND {where} "
            f"ORDER BY score DESC LIMIT ?"
        )
        return [Scored(row[0], row[1]) for row in self.conn.execute(sql, [expression, *params, limit])]

    # -- the vector list ----------------------------------------------------------------------------------------

    def vector_model(self) -> str | None:
        """The model whose vectors the index holds; None while it holds none."""
        model = sqlite.get_meta(self.conn, "vector_model")
        return model if model is not None and sqlite.vec_table_exists(self.conn) else None

    def holds_vectors(self, model: str) -> bool:
        """Whether the index's vectors are of ``model`` (it holds one model's at a time)."""
        return self.vector_model() == model

    def keep_vectors_in_memory(self, model: str) -> VectorMatrix | None:
        """Hold the vectors of ``model`` in memory (:class:`VectorMatrix`, for a long-lived process), kept up to
        date at each call (new vectors appended, loaded again after a rebuild or a forget); :meth:`vector_candidates`
        then ranks with it. None (and the matrix dropped) while the index holds no vectors."""
        if self.matrix is not None and self.matrix.model_id == model and self.matrix.catch_up(self.conn):
            return self.matrix
        if not sqlite.vec_table_exists(self.conn):
            return self.matrix if self.matrix is not None and self.matrix.model_id == model else None
        self.matrix = VectorMatrix(self.conn, model)
        return self.matrix

    def vector_candidates(self, vector: bytes | Sequence[float], model: str, filters: FilterSpec, limit: int,
                          *, ef_search: int = 40) -> list[Scored]:
        """Vectors are stored once per content hash, so a KNN hit maps to every chunk holding that content.
        Unfiltered, vec0's KNN (or the in-memory matrix) is widened until ``limit`` chunks pass the filters; when
        a filter narrows the set (kind, session, dates…) to at most :data:`EXACT_MAX` chunks, the distances of just
        those are computed exactly, so a selective filter can never starve the list (a wider one is read by the
        widened KNN, and exactly if that still starves). ``ef_search`` is unused: both are exact."""
        qvec = _as_blob(vector)
        if filters.selective and self._count_passing(filters, EXACT_MAX + 1) <= EXACT_MAX:
            return self._exact(qvec, filters, limit, model)
        matrix = self.matrix if self.matrix is not None and self.matrix.model_id == model else None
        if matrix is not None:
            total = len(matrix.ids)
        else:
            total = self.conn.execute("SELECT count(*) FROM embeddings WHERE model = ?", (model,)).get
        k = min(total, max(limit * 2, 64))
        while k:
            found = self._knn(qvec, filters, limit, min(k, KNN_MAX), matrix)
            if len(found) >= limit or k >= total:
                return found
            if k >= KNN_MAX:
                break
            k = min(total, k * 4)
        return self._exact(qvec, filters, limit, model)

    def _count_passing(self, filters: FilterSpec, most: int) -> int:
        """How many chunks ``filters`` let through, counted up to ``most``."""
        where, params = filter_sql(filters)
        return self.conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM chunks c WHERE {where} LIMIT ?)",
                                 [*params, most]).get

    def _exact(self, qvec: bytes, filters: FilterSpec, limit: int, model: str) -> list[Scored]:
        where, params = filter_sql(filters)
        sql = (
            "SELECT c.id, vec_distance_cosine(v.embedding, ?) AS d FROM chunks c "
            "JOIN embeddings e ON e.hash = c.hash AND e.model = ? "
            f"JOIN vec_chunks v ON v.rowid = e.id WHERE {where} ORDER BY d, c.id LIMIT ?"
        )
        return [Scored(row[0], row[1]) for row in self.conn.execute(sql, [qvec, model, *params, limit])]

    def _knn(self, qvec: bytes, filters: FilterSpec, limit: int, k: int,
             matrix: VectorMatrix | None) -> list[Scored]:
        if matrix is not None:
            neighbours = matrix.nearest(qvec, k)
        else:
            neighbours = list(self.conn.execute(
                "SELECT rowid, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ? ORDER BY distance", (qvec, k)
            ))
        if not neighbours:
            return []
        order = {row[0]: i for i, row in enumerate(neighbours)}
        distance = dict(neighbours)
        where, params = filter_sql(filters)
        marks = ",".join("?" * len(order))
        rows = list(self.conn.execute(
            f"SELECT e.id, c.id FROM embeddings e JOIN chunks c ON c.hash = e.hash WHERE e.id IN ({marks}) AND {where}",
            [*order, *params],
        ))
        rows.sort(key=lambda r: (order[r[0]], r[1]))
        return [Scored(chunk_id, distance[eid]) for eid, chunk_id in rows][:limit]

    def similarities(self, vector: bytes | Sequence[float], model: str, ids: Sequence[int]) -> dict[int, float]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        sql = ("SELECT c.id, 1.0 - vec_distance_cosine(v.embedding, ?) FROM chunks c "
               "JOIN embeddings e ON e.hash = c.hash AND e.model = ? "
               f"JOIN vec_chunks v ON v.rowid = e.id WHERE c.id IN ({marks})")
        return {row[0]: row[1] for row in self.conn.execute(sql, [_as_blob(vector), model, *ids]) if row[1] is not None}

    # -- rows ---------------------------------------------------------------------------------------------------

    def fetch_hits(self, ids: Sequence[int]) -> dict[int, HitRow]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return {row[0]: HitRow(*row) for row in
                self.conn.execute(f"SELECT {HIT_COLUMNS} FROM chunks WHERE id IN ({marks})", list(ids))}

    def find_uid_prefix(self, prefix: str, limit: int = 2) -> list[tuple[HitRow, str, int]]:
        """Up to ``limit`` chunks whose uid starts with ``prefix`` (lower-case hex), each with its source file
        and its place in it."""
        rows = self.conn.execute(
            f"SELECT {HIT_COLUMNS}, file, seq FROM chunks WHERE uid >= ? AND uid < ? LIMIT ?",
            (prefix, prefix + "g", limit))
        return [(HitRow(*row[:-2]), row[-2], row[-1]) for row in rows]

    def neighbours(self, file: str, seq: int) -> tuple[str | None, str | None, int]:
        """The uids of the chunks before and after place ``seq`` of ``file``, and how many chunks it has."""
        prev = self.conn.execute(
            "SELECT uid FROM chunks WHERE file = ? AND seq < ? ORDER BY seq DESC LIMIT 1", (file, seq)).fetchone()
        nxt = self.conn.execute(
            "SELECT uid FROM chunks WHERE file = ? AND seq > ? ORDER BY seq LIMIT 1", (file, seq)).fetchone()
        count = self.conn.execute("SELECT count(*) FROM chunks WHERE file = ?", (file,)).get
        return prev and prev[0], nxt and nxt[0], count

    def around(self, center: HitRow, window: int) -> tuple[list[HitRow], list[HitRow]]:
        """The ``window`` chunks before and after ``center`` in time (by ts, then id), oldest first: of its
        session when it has one, else of everything dated."""
        ts = center.ts or ""
        scope, params = ("session_id = ?", [center.session_id]) if center.session_id else ("ts IS NOT NULL", [])
        before = list(self.conn.execute(
            f"SELECT {HIT_COLUMNS} FROM chunks WHERE {scope} AND (ts < ? OR (ts = ? AND id < ?))"
            " ORDER BY ts DESC, id DESC LIMIT ?", [*params, ts, ts, center.id, window]))
        after = self.conn.execute(
            f"SELECT {HIT_COLUMNS} FROM chunks WHERE {scope} AND (ts > ? OR (ts = ? AND id > ?))"
            " ORDER BY ts, id LIMIT ?", [*params, ts, ts, center.id, window])
        return [HitRow(*r) for r in reversed(before)], [HitRow(*r) for r in after]

    # -- browsing -----------------------------------------------------------------------------------------------

    def recent_rows(self, *, session: str | None = None, type: str | None = None, project: str | None = None,
                    limit: int = 20, offset: int = 0) -> list[HitRow]:
        """The latest visible items, newest first, one per event (a long event's first chunk). ``type`` is a kind
        or an event type (a category)."""
        conds = [f"coalesce(status, '') NOT IN ({','.join('?' * len(HIDDEN_STATUSES))})",
                 "(kind != 'event' OR seq % 1000 = 0)"]
        params: list = list(HIDDEN_STATUSES)
        for column, value in (("session_id", session), ("project", project)):
            if value is not None:
                conds.append(f"{column} = ?")
                params.append(value)
        if type is not None:
            conds.append("kind = ?" if type in KINDS else "category = ?")
            params.append(type)
        rows = self.conn.execute(
            f"SELECT {HIT_COLUMNS} FROM chunks WHERE {' AND '.join(conds)}"
            " ORDER BY ts IS NULL, ts DESC, id DESC LIMIT ? OFFSET ?", [*params, limit, offset])
        return [HitRow(*r) for r in rows]

    def session_event_counts(self, project: str | None = None) -> list[tuple[str, str, int, str | None, str | None,
                                                                             str | None]]:
        """``(session, event type, events, first ts, last ts, project)`` per session and type; with ``project``,
        the sessions that have an event of it."""
        where, params = "kind = 'event' AND session_id IS NOT NULL", []
        if project is not None:
            where += " AND session_id IN (SELECT session_id FROM chunks WHERE kind = 'event' AND project = ?)"
            params.append(project)
        return list(self.conn.execute(
            f"SELECT session_id, category, count(DISTINCT coalesce(event_id, uid)), min(ts), max(ts), max(project)"
            f" FROM chunks WHERE {where} GROUP BY session_id, category", params))

    def session_prompts(self, sessions: Sequence[str]) -> Iterator[tuple[str, str]]:
        """``(session, prompt text)`` of ``sessions``' prompts, each session's in time order."""
        for i in range(0, len(sessions), 500):
            part = list(sessions[i : i + 500])
            marks = ",".join("?" * len(part))
            yield from self.conn.execute(
                f"SELECT session_id, text FROM chunks WHERE kind = 'event' AND category = 'prompt'"
                f" AND session_id IN ({marks}) ORDER BY ts, seq", part)

    def event_counts(self) -> tuple[dict[str, int], dict[str, int], int]:
        """Events (once each, however many chunks) by type and by day, and the sessions they belong to."""
        events = "FROM chunks WHERE kind = 'event'"
        by_type = dict(self.conn.execute(
            f"SELECT category, count(DISTINCT coalesce(event_id, uid)) {events} GROUP BY category ORDER BY category"))
        by_day = dict(self.conn.execute(
            f"SELECT substr(ts, 1, 10) AS day, count(DISTINCT coalesce(event_id, uid)) {events} AND ts IS NOT NULL"
            " GROUP BY day ORDER BY day"))
        sessions = self.conn.execute(f"SELECT count(DISTINCT session_id) {events}").get
        return by_type, by_day, sessions

    def redacted_texts(self) -> Iterator[tuple[str, str, str | None, str | None, str]]:
        """``(kind, file, event id, session, text)`` of chunks holding a redaction marker, session summaries left
        out (they repeat their events), in source order."""
        yield from self.conn.execute(
            "SELECT kind, file, event_id, session_id, text FROM chunks WHERE text LIKE '%[REDACTED:%'"
            " AND NOT (kind = 'note' AND category = 'session') ORDER BY file, seq")

    def latest_session_summary(self, project: str) -> tuple[str, str, str] | None:
        """``(first chunk uid, path, whole text)`` of ``project``'s most recent session summary note."""
        row = self.conn.execute(
            "SELECT file, path, min(uid) FROM chunks WHERE kind = 'note' AND category = 'session' AND project = ?"
            " GROUP BY file ORDER BY max(ts) DESC, (SELECT mtime_ns FROM files WHERE files.path = file) DESC, file DESC"
            " LIMIT 1", (project,)).fetchone()  # summaries dated by their day only: the one written last
        if not row:
            return None
        texts = [t for (t,) in self.conn.execute("SELECT text FROM chunks WHERE file = ? ORDER BY seq", (row[0],))]
        return row[2], row[1], "\n".join(texts)

    def active_facts(self, project: str, limit: int) -> list[tuple[str, str | None, str]]:
        """``(uid, ts, text)`` of ``project``'s active facts, newest first."""
        return list(self.conn.execute(
            "SELECT uid, ts, text FROM chunks WHERE kind = 'fact' AND project = ? AND coalesce(status, 'active') ="
            " 'active' ORDER BY ts DESC, id DESC LIMIT ?", (project, limit)))
