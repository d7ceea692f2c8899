"""Every vector of the local index in memory as one float32 matrix, for the warm server: an exact top-k is one
matrix product (16 ms at 100k x 384 here, against about 90 ms for the vec0 scan). sqlite-vec stays the store;
:class:`indexer.store.sqlite_read.SqliteReader` asks the matrix for the nearest vectors when it holds one.
"""

from __future__ import annotations

import apsw


class VectorMatrix:
    """The vectors of one model, L2-normalised, with their embedding ids (numpy is imported only here)."""

    def __init__(self, conn: apsw.Connection, model_id: str):
        import numpy as np

        self.model_id = model_id
        self.stamp = self.current_stamp(conn)
        rows = list(conn.execute(
            "SELECT e.id, v.embedding FROM embeddings e JOIN vec_chunks v ON v.rowid = e.id WHERE e.model = ?",
            (model_id,),
        ))
        self.ids = np.array([r[0] for r in rows], dtype=np.int64)
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1) if rows else (
            np.zeros((0, 1), dtype=np.float32))
        norms = np.linalg.norm(matrix, axis=1)
        norms[norms == 0] = 1.0
        self.matrix = matrix / norms[:, None]

    @staticmethod
    def current_stamp(conn: apsw.Connection) -> tuple[int, int | None, str | None]:
        """Changes whenever a vector is added (a rowid lookup, free); removed vectors only cost a few slots,
        since hits are mapped back through the chunks that still exist. The schema version (a header read) changes
        when a full rebuild is swapped in, which renumbers the vectors: the same highest id then names others.
        ``forget_epoch`` changes with every ``memsearch forget``, whose removed ids a new vector may take again:
        the forgotten vectors then leave memory too."""
        epoch = conn.execute("SELECT value FROM meta WHERE key = 'forget_epoch'").fetchone()
        return (conn.pragma("schema_version"), conn.execute("SELECT max(id) FROM embeddings").get,
                epoch[0] if epoch else None)

    def nearest(self, qvec: bytes, k: int) -> list[tuple[int, float]]:
        """``(embedding id, cosine distance)`` of the ``k`` nearest vectors, exact."""
        import numpy as np

        if not len(self.ids):
            return []
        q = np.frombuffer(qvec, dtype=np.float32)
        norm = float(np.linalg.norm(q)) or 1.0
        sims = self.matrix @ (q / norm)
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(int(self.ids[i]), float(1.0 - sims[i])) for i in top]
