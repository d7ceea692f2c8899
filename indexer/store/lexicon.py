"""The warm server's BM25 list in memory: the postings of the phrases its searches used, scored in numpy by the
formula of FTS5's ``bm25()``, bit for bit. FTS5 ranks an OR of common words by visiting every row that holds any
of them (~0.45 µs a row in C: 13 ms p50, 38 ms p95 at 100k chunks); with each phrase's rows, weighted frequencies
and row lengths in arrays, the same ranking is a few array operations. FTS5 stays the index and the judge of what
matches: a phrase's postings are read from it through an auxiliary function, and the rows added since are read the
same way when the phrase is used again. The warm server reads the most common words' postings while idle
(:meth:`Lexicon.warm`); a search whose words are not held yet and hold many rows is ranked by FTS5, and its words
are read next time the server is idle. Phrases are held by the tokens FTS5 makes of them (the table's own
tokenizer), so "tests" and "test" share one entry.

Exact by construction, and checked against FTS5 by a property test:

- ``bm25()`` sums, phrase by phrase in the expression's order, ``idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D /
  avgdl))`` where ``f`` adds the column weight of each of the phrase's instances in the row (by column, then
  offset), ``D`` is the row's token count, ``idf = log((N - n + 0.5) / (n + 0.5))`` (1e-6 when not positive) with
  ``n`` the rows holding the phrase, and ``N`` and ``avgdl`` the table's. The same operations in the same order
  give the same doubles; a row without the phrase adds 0.0.
- ``N`` and the table's token total are FTS5's own (``row_count``, ``column_total_size``), read in the same read
  transaction as the postings. Rows are only ever added above the highest row id, until a row is deleted or an FTS
  row rewritten (the ``removed`` count the index keeps, :func:`indexer.store.sqlite.m004_counts`), a rebuild swaps
  the file in (the schema version), or a forget: then every phrase is read anew.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import apsw

from indexer.base.chunktext import fts_title

if TYPE_CHECKING:
    import numpy as np

#: FTS5's bm25() constants (fts5_aux.c)
K1 = 1.2
B = 0.75
#: Postings kept at most (16 bytes each: row id, weighted frequency, row length): at 100k chunks the words in 1,000
#: rows or more hold ~8M postings, 75 % of all. Over it, the phrases with the fewest rows go first.
BUDGET = 8_000_000
#: The most common words :meth:`Lexicon.warm` reads, at most, and the chunks it counts them in.
COMMON_WORDS = 20_000
SAMPLE = 5_000
#: A search reads the postings of phrases not held yet when they hold at most this many rows together (~1 µs a
#: row); above it, FTS5 ranks that search and the phrases are read while the server is idle.
READ_INLINE = 5_000

#: (prefix, tokens): a phrase as FTS5 matches it
Key = tuple[bool, tuple[str, ...]]


class _Postings:
    """One phrase's rows up to row id ``top``: ids ascending, weighted frequencies, row lengths."""

    __slots__ = ("phrase", "top", "ids", "freqs", "lengths")

    def __init__(self, phrase: str, top: int, ids: np.ndarray, freqs: np.ndarray, lengths: np.ndarray):
        self.phrase, self.top, self.ids, self.freqs, self.lengths = phrase, top, ids, freqs, lengths


class Lexicon:
    """The postings of the phrases searches used and of the most common words, for :meth:`top`; held by the warm
    server's store. numpy is imported only here, as for the vector matrix."""

    def __init__(self, conn: apsw.Connection, weights: Sequence[float], tokenize: str, budget: int = BUDGET,
                 read_inline: int = READ_INLINE):
        self.weights = tuple(float(w) for w in weights)
        self.budget, self.read_inline = budget, read_inline
        self.held: dict[Key, _Postings] = {}
        self.size = 0
        self.stamp: tuple | None = None
        self.wanted: dict[Key, str] = {}  # phrases a search could not wait for, read when idle
        self.common: list[str] | None = None  # the most common words still to read (None: not listed yet)
        name, *args = tokenize.split()
        self._tokenizer = conn.fts5_tokenizer(name, args)
        # the tokenizer a wrapper such as porter wraps, for the plain words of :meth:`_common_words`
        self._words = conn.fts5_tokenizer(args[0], args[1:]) if name == "porter" and args else None
        self._found: list[tuple] = []
        conn.register_fts5_function("memsearch_postings", self._collect)
        conn.register_fts5_function("memsearch_totals", self._totals)

    # -- FTS5 auxiliary functions: they hand what FTS5 knows of a row to this process -----------------------------

    def _collect(self, api: apsw.FTS5ExtensionApi, *_: Any) -> None:
        """The row's id, the weighted frequency of phrase 0 (added up as bm25() does) and the row's length."""
        weights = self.weights
        freq = 0.0
        for column, offsets in enumerate(api.phrase_locations(0)):
            w = weights[column] if column < len(weights) else 1.0
            for _offset in offsets:
                freq += w
        self._found.append((api.rowid, freq, api.column_size(-1)))

    def _totals(self, api: apsw.FTS5ExtensionApi, *_: Any) -> None:
        self._found.append((api.row_count, api.column_total_size(-1)))

    def _run(self, conn: apsw.Connection, sql: str, params: tuple) -> list[tuple]:
        self._found = []
        conn.execute(sql, params).fetchall()
        found, self._found = self._found, []
        return found

    # -- keeping up with the index --------------------------------------------------------------------------------

    def key(self, phrase: str) -> Key:
        """The tokens FTS5 matches for a quoted phrase (``"..."``, or ``"..."*`` for a prefix)."""
        prefix = phrase.endswith("*")
        text = phrase.rstrip("*")[1:-1].replace('""', '"')
        tokens = self._tokenizer(text.encode(), apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False,
                                 include_colocated=False)
        return prefix, tuple(t for t in tokens if isinstance(t, str))  # plain tokens, with these flags

    @staticmethod
    def current_stamp(conn: apsw.Connection) -> tuple:
        """Changes when rows other than new ones change: a rebuild swapped in, a forget, a deletion or rewrite."""
        epoch = conn.execute("SELECT value FROM meta WHERE key = 'forget_epoch'").fetchone()
        removed = conn.execute("SELECT n FROM counts WHERE name = 'removed'").fetchone()
        return conn.pragma("schema_version"), epoch[0] if epoch else None, removed[0] if removed else 0

    def _same_rows(self, conn: apsw.Connection) -> None:
        """Drop every held phrase when rows other than new ones changed (in the caller's read transaction)."""
        stamp = self.current_stamp(conn)
        if stamp != self.stamp:
            self.held.clear()
            self.size, self.stamp = 0, stamp

    @staticmethod
    def _top(conn: apsw.Connection) -> int:
        return conn.execute("SELECT rowid FROM chunks_fts ORDER BY rowid DESC LIMIT 1").get or 0

    def _read(self, conn: apsw.Connection, phrase: str, after: int | None) -> tuple[np.ndarray, ...]:
        import numpy as np

        sql = "SELECT memsearch_postings(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?"
        found = self._run(conn, sql, (phrase,)) if after is None else self._run(conn, sql + " AND rowid > ?",
                                                                               (phrase, after))
        if not found:
            return np.zeros(0, np.int32), np.zeros(0, np.float64), np.zeros(0, np.int32)
        ids, freqs, lengths = zip(*found)  # row ids below 2**31: top() says so first
        return (np.fromiter(ids, np.int32, len(ids)), np.fromiter(freqs, np.float64, len(ids)),
                np.fromiter(lengths, np.int32, len(ids)))

    def _postings(self, conn: apsw.Connection, key: Key, phrase: str, top: int) -> _Postings:
        """``phrase``'s postings up to row ``top``: read, or brought up to date with the rows added since."""
        import numpy as np

        held = self.held.get(key)
        if held is None:
            held = _Postings(phrase, top, *self._read(conn, phrase, None))
            self.held[key] = held
            self.size += len(held.ids)
        elif held.top < top:
            ids, freqs, lengths = self._read(conn, held.phrase, held.top)
            if len(ids):
                held.ids = np.concatenate([held.ids, ids])
                held.freqs = np.concatenate([held.freqs, freqs])
                held.lengths = np.concatenate([held.lengths, lengths])
                self.size += len(ids)
            held.top = top
        return held

    def _evict(self, keep: set[Key]) -> None:
        """Over budget, drop the phrases with the fewest rows (the cheapest to read again, within a search) down to
        95 % of it."""
        if self.size <= self.budget:
            return
        for key in sorted((k for k in self.held if k not in keep), key=lambda k: len(self.held[k].ids)):
            if self.size <= self.budget * 0.95:
                break
            self.size -= len(self.held.pop(key).ids)

    @property
    def warming(self) -> bool:
        """Whether :meth:`warm` has postings left to read."""
        return bool(self.wanted) or self.common is None or bool(self.common and self.size < self.budget)

    def warm(self, conn: apsw.Connection, seconds: float) -> bool:
        """Read postings for about ``seconds``: the phrases searches could not wait for, then the most common words
        of the index while the budget allows; True when nothing is left to read."""
        deadline = time.monotonic() + seconds
        with conn:
            self._same_rows(conn)
            top = self._top(conn)
            if self.common is None:
                self.common = self._common_words(conn)[::-1]  # popped from the end: the most common first
            while time.monotonic() < deadline and (self.wanted or (self.common and self.size < self.budget)):
                if self.wanted:
                    key, phrase = self.wanted.popitem()
                else:
                    phrase = self.common.pop()
                    key = self.key(phrase)
                    if key in self.held:
                        continue
                self._postings(conn, key, phrase, top)
        self._evict(set())
        return not self.warming

    def _common_words(self, conn: apsw.Connection) -> list[str]:
        """Phrases for the index's most common tokens, most common first, counted in a sample of the chunks (every
        n-th row id; FTS5's own list of tokens is a scan of them all, ~0.4 s at 100k chunks). Each is a word as
        written that the tokenizer turns into the token: FTS5 stores "diseas" for "disease", and "diseas" itself
        would be stemmed again."""
        if self._words is None:
            return []
        rows = conn.execute("SELECT count(*) FROM chunks").get
        counts: dict[str, int] = {}
        word_of: dict[str, str] = {}
        flags = apsw.FTS5_TOKENIZE_DOCUMENT
        for kind, title, ts, text in conn.execute("SELECT kind, title, ts, text FROM chunks WHERE id % ? = 0 LIMIT ?",
                                                  (max(1, rows // SAMPLE), SAMPLE)):
            data = f"{fts_title(kind, title, ts)}\n{text}".encode()  # the title column as indexed: events' dates
            words = [w for w in self._words(data, flags, None, include_offsets=False, include_colocated=False)
                     if isinstance(w, str)]
            tokens = [t for t in self._tokenizer(data, flags, None, include_offsets=False, include_colocated=False)
                      if isinstance(t, str)]
            if len(words) != len(tokens):  # a tokenizer that is not one token for one word: no pairs to trust
                continue
            for word, token in zip(words, tokens):
                if token not in word_of and '"' not in word:
                    word_of[token] = word
            for token in set(tokens):
                counts[token] = counts.get(token, 0) + 1
        common = sorted((t for t in counts if t in word_of), key=counts.__getitem__, reverse=True)
        return [f'"{word_of[t]}"' for t in common[:COMMON_WORDS]]

    # -- ranking --------------------------------------------------------------------------------------------------

    def top(self, conn: apsw.Connection, groups: Sequence[Sequence[str]], op: str,
            k: int) -> tuple[list[tuple[int, float]], int] | None:
        """The ``k`` best rows matching the query and the number of rows matching it: ``groups`` are the query's
        terms, each the phrases that count for it (a CJK term's two forms), in the order of the FTS5 expression;
        ``op`` "AND" needs every term, "OR" any. ``(row id, bm25 score)`` best first (higher is better, as
        ``-bm25()``), ties by id. None when phrases not held yet hold too many rows to read now (they are read
        when the server is idle): FTS5 ranks this one."""
        import numpy as np

        if op not in ("AND", "OR"):
            raise ValueError(op)
        keyed = [[(self.key(phrase), phrase) for phrase in group] for group in groups]
        order = [pair for group in keyed for pair in group]
        with conn:  # one read transaction: the totals, the top row id and the postings agree
            self._same_rows(conn)
            totals = self._run(conn, "SELECT memsearch_totals(chunks_fts) FROM chunks_fts LIMIT 1", ())
            if not totals or not order:
                return [], 0
            rows, tokens = totals[0]
            missing = {key: phrase for key, phrase in order if key not in self.held}
            if missing and sum(conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                                            (phrase,)).get for phrase in missing.values()) > self.read_inline:
                self.wanted.update(missing)
                return None
            top = self._top(conn)
            if top >= 2**31 - 1:
                return None
            held = {key: self._postings(conn, key, phrase, top) for key, phrase in dict(order).items()}
        self._evict(set(held))
        scores = np.zeros(top + 1)
        avgdl = tokens / rows  # (double) total / (double) rows, as FTS5
        for key, _ in order:  # phrase by phrase, as bm25() adds them
            p = held[key]
            n = len(p.ids)
            idf = math.log((rows - n + 0.5) / (n + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            scores[p.ids] += idf * ((p.freqs * (K1 + 1.0)) / (p.freqs + K1 * (1 - B + B * p.lengths / avgdl)))
        if op == "OR":
            matching = np.zeros(top + 1, dtype=bool)
            for p in held.values():
                matching[p.ids] = True
        else:
            matching = np.ones(top + 1, dtype=bool)
            for group_keys in keyed:
                has = np.zeros(top + 1, dtype=bool)
                for key, _ in group_keys:
                    has[held[key].ids] = True
                matching &= has
        ids = np.flatnonzero(matching)
        found = scores[ids]
        if k < len(ids):
            cut = np.partition(-found, k - 1)[k - 1]  # the k-th best score: every row at least as good, by id
            keep = -found <= cut
            ids, found = ids[keep], found[keep]
        best = np.lexsort((ids, -found))[:k]
        return [(int(ids[i]), float(found[i])) for i in best], int(matching.sum())

    def describe(self) -> dict[str, Any]:
        """What the lexicon holds, for ``memsearch serve --status`` and the bench."""
        return {"phrases": len(self.held), "postings": self.size, "mb": round(self.size * 16 / 2**20, 1),
                "wanted": len(self.wanted), "warming": self.warming}
