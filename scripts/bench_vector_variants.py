"""Vector-search variants measured beside the product's, on the same vectors and query vectors.

Answers "what would close the gap to NumPy brute force": the bare vec0 KNN statement (what the product's
``vector_ranking`` adds on top), the same with a large page cache and mmap, sqlite-vec binary quantization
(``bit[384]`` with the float vector kept as an auxiliary column and rescored by cosine over the top R x k
candidates), and int8 quantization with the same rescoring. Quantized tables live in a scratch database next to
the index and are deleted afterwards; the product's index is only read.
"""

from __future__ import annotations

import time
from pathlib import Path

import apsw
import numpy as np
import sqlite_vec

from scripts.stats import summary, time_each

K = 10


def _connect(path: Path, *, mmap: bool = False) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)
    if mmap:
        conn.pragma("mmap_size", 4 << 30)
        conn.pragma("cache_size", -1_048_576)  # 1 GiB
    return conn


def _recall(got: list[list[int]], exact: list[set[int]]) -> float:
    return float(np.mean([len(set(g[:K]) & e) / K for g, e in zip(got, exact)]))


def _measure(fn, qvecs: list[bytes], exact: list[set[int]]) -> dict:
    got = [fn(q) for q in qvecs]
    return {"latency_ms": summary(time_each(fn, qvecs)), "recall_at_10": _recall(got, exact)}


def run(db: Path, ids: np.ndarray, mat: np.ndarray, qvecs: list[bytes], exact: list[set[int]],
        rescore_factors=(4, 10, 20)) -> dict:
    out: dict[str, dict] = {}
    knn = "SELECT rowid FROM vec_chunks WHERE embedding MATCH ? AND k = ? ORDER BY distance"

    conn = _connect(db)
    try:
        out["vec0 float KNN, bare SQL"] = _measure(lambda q: [r[0] for r in conn.execute(knn, (q, K))], qvecs, exact)
    finally:
        conn.close()
    conn = _connect(db, mmap=True)
    try:
        out["vec0 float KNN, mmap+1GiB cache"] = _measure(
            lambda q: [r[0] for r in conn.execute(knn, (q, K))], qvecs, exact)
    finally:
        conn.close()

    scratch = db.with_name(db.stem + "-quant.db")
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(scratch) + suffix).unlink(missing_ok=True)
    conn = _connect(scratch)
    try:
        conn.pragma("journal_mode", "off")
        conn.pragma("synchronous", "off")
        dim = mat.shape[1]
        t0 = time.perf_counter()
        conn.execute(f"CREATE VIRTUAL TABLE vbit USING vec0(embedding bit[{dim}], +full blob)")
        conn.execute(f"CREATE VIRTUAL TABLE vint8 USING vec0(embedding int8[{dim}], +full blob)")
        with conn:
            conn.executemany(
                "INSERT INTO vbit(rowid, embedding, full) VALUES (?, vec_quantize_binary(?), ?)",
                ((int(i), v.tobytes(), v.tobytes()) for i, v in zip(ids, mat)),
            )
        build_bit = time.perf_counter() - t0
        t0 = time.perf_counter()
        with conn:
            conn.executemany(
                "INSERT INTO vint8(rowid, embedding, full) VALUES (?, vec_quantize_int8(?, 'unit'), ?)",
                ((int(i), v.tobytes(), v.tobytes()) for i, v in zip(ids, mat)),
            )
        build_int8 = time.perf_counter() - t0
        out["bit[384] hamming only"] = _measure(
            lambda q: [r[0] for r in conn.execute(
                "SELECT rowid FROM vbit WHERE embedding MATCH vec_quantize_binary(?) AND k = ? ORDER BY distance",
                (q, K))], qvecs, exact)
        for f in rescore_factors:
            sql = (
                "SELECT rowid FROM (SELECT rowid, full FROM vbit WHERE embedding MATCH vec_quantize_binary(:q)"
                " AND k = :kk) ORDER BY vec_distance_cosine(full, :q) LIMIT :k"
            )
            out[f"bit[384] + float rescore top {f * K}"] = _measure(
                lambda q, sql=sql, f=f: [r[0] for r in conn.execute(sql, {"q": q, "kk": f * K, "k": K})],
                qvecs, exact)
            out[f"bit[384] + float rescore top {f * K}"]["build_seconds"] = build_bit
        sql = (
            "SELECT rowid FROM (SELECT rowid, full FROM vint8 WHERE embedding MATCH vec_quantize_int8(:q, 'unit')"
            " AND k = :kk) ORDER BY vec_distance_cosine(full, :q) LIMIT :k"
        )
        out["int8[384] + float rescore top 40"] = _measure(
            lambda q: [r[0] for r in conn.execute(sql, {"q": q, "kk": 4 * K, "k": K})], qvecs, exact)
        out["int8[384] + float rescore top 40"]["build_seconds"] = build_int8
        out["_scratch_bytes"] = {"bytes": scratch.stat().st_size}
    finally:
        conn.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(str(scratch) + suffix).unlink(missing_ok=True)

    # NumPy over a bit matrix then float rescore (what a warm server could hold in memory)
    bits = np.packbits(mat > 0, axis=1)
    norm = mat / np.linalg.norm(mat, axis=1, keepdims=True)
    popcount = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)

    def np_bit(q: bytes, cand: int = 10 * K) -> list[int]:
        qv = np.frombuffer(q, dtype=np.float32)
        qb = np.packbits(qv > 0)
        ham = popcount[np.bitwise_xor(bits, qb)].sum(axis=1, dtype=np.uint16)
        top = np.argpartition(ham, cand)[:cand]
        sims = norm[top] @ (qv / np.linalg.norm(qv))
        return [int(ids[i]) for i in top[np.argsort(-sims)[:K]]]

    out["NumPy bit hamming + float rescore top 100"] = _measure(np_bit, qvecs, exact)
    return out
