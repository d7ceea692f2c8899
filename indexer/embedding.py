"""The embedding backfill: every content hash the model has not embedded gets its vector, a window at a time.

Vectors are keyed by (content hash, model), so each distinct content is embedded once whoever computes it (the
index run, the warm server between searches); text the model cannot represent (CJK for an English-only model)
is recorded without a vector, so it is no longer pending and BM25 alone serves it.
"""

from __future__ import annotations

import apsw

from indexer.base.cjk import model_reads
from indexer.base.embedder import Embedder
from indexer.store.local import SqliteStore, as_store
from indexer.writer import Progress

#: Chunks read, embedded (the embedder sorts them by length into batches) and committed at a time.
EMBED_WINDOW = 256


def embed_pending(
    store: SqliteStore | apsw.Connection, embedder: Embedder, *, batch: int = 256, progress: Progress | None = None,
    limit: int | None = None,
) -> tuple[int, str | None]:
    """Embed every content hash the model has not embedded (at most ``limit``); returns (count, note about a
    model change).

    Each window is read from the index just before it is embedded, so a chunk another writer replaced meanwhile
    (an ingest, a full rebuild swapped in) is never embedded under another content's hash.
    """
    store = as_store(store)
    model = embedder.model_id
    note = store.ensure_vector_model(model, embedder.dim)
    total = store.pending_count(model) if progress or limit is None else limit
    if limit is not None:
        total = min(total, limit)
    done = after = 0
    while done < total:
        part = store.pending_embeddings(model, min(batch, total - done), after)
        if not part:
            break
        # Text the model cannot represent gets an embeddings row and no vector: it is no longer pending, the
        # vector list never sees noise for it, and BM25 carries it (JSQuAD: 56.5 s of embedding for vectors no CJK
        # query used).
        unread = [p for p in part if not model_reads(model, p.text)]
        read = [p for p in part if model_reads(model, p.text)]
        vectors = embedder.embed_passages([p.input for p in read]) if read \
            else []
        store.put_embeddings(model, [(p.hash, None) for p in unread] + list(zip((p.hash for p in read), vectors)))
        done, after = done + len(part), part[-1].id
        if progress:
            progress("embed", done, total)
    return done, note


def pending_count(store: SqliteStore | apsw.Connection, model_id: str | None) -> int:
    """Content hashes without a vector of ``model_id`` (exact; see :meth:`SqliteWriter.pending_count`)."""
    return as_store(store).pending_count(model_id)


def pending_estimate(store: SqliteStore | apsw.Connection, model_id: str | None) -> int:
    """The cheap count every result's health reports (see :meth:`SqliteWriter.pending_estimate`)."""
    return as_store(store).pending_estimate(model_id)


def drop_orphan_vectors(store: SqliteStore | apsw.Connection) -> int:
    """Vectors whose content hash no chunk holds any more."""
    return as_store(store).drop_orphan_vectors()
