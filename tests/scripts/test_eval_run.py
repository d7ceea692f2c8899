"""scripts.eval_run: what fusion buried and gained of its lists' top 10, on hand-made rankings; `--fresh` rebuilding a
memory root once per run."""

from scripts.eval_data import Query
from scripts.eval_run import buried_gained


def test_buried_and_gained_per_question():
    queries = [
        Query("q1", "a", {"g1": 1.0, "g2": 1.0}, "r"),  # g2 in the vector top 10, not in hybrid's: buried
        Query("q2", "b", {"g3": 1.0}, "r"),  # g3 in hybrid's top 10 only: gained
        Query("q3", "c", {"g4": 1.0}, "r"),  # in all three: neither
        Query("q4", "d", {"g5": 1.0}, "r"),  # no list has it: neither
    ]
    top10 = {
        "bm25": {"q1": ["g1", "x"], "q2": ["x"], "q3": ["g4"], "q4": ["y"]},
        "vector": {"q1": ["g2"], "q2": ["y"], "q3": ["g4"], "q4": ["x"]},
        "hybrid": {"q1": ["g1", "x"], "q2": ["g3"], "q3": ["g4"], "q4": ["x"]},
    }
    assert buried_gained(queries, top10) == {"buried": 1, "gained": 1, "questions_buried": 0,
                                             "questions_gained": 1}
    top10["hybrid"]["q1"] = ["x"]  # now no gold of q1 at all in hybrid's top 10, though both lists had one
    assert buried_gained(queries, top10)["questions_buried"] == 1


def test_fresh_rebuilds_a_root_once_per_run(tmp_path):
    """``--fresh`` with locomo and injection: the injection section asks the memories the locomo section has just
    rebuilt, and reuses them (each is indexed once in the run, from nothing)."""
    from scripts.eval_data import Dataset
    from scripts.eval_run import Runner

    files = {"notes/a.md": b"# A\nthe deploy runs on Tuesdays\n"}
    ds = Dataset("tiny", "notes", {"r": files}, [], doc_of=lambda hit: hit.id)
    runner = Runner(tmp_path / "work", tmp_path / "cache", {"model": "none"}, None)
    root, first = runner.build(ds, "r", files, fresh=True)
    assert first["chunks_added"] == 1
    (root / "marker").write_text("made after the first build\n")
    runner.build(ds, "r", files, fresh=True)  # the same run: the root is kept, not rebuilt
    assert (root / "marker").exists()
    _, later = Runner(tmp_path / "work", tmp_path / "cache", {"model": "none"}, None).build(ds, "r", files, fresh=True)
    assert not (root / "marker").exists() and later["chunks"] == 1  # a new run rebuilds from nothing


def test_a_file_the_dataset_no_longer_has_leaves_the_cached_root(tmp_path):
    """A cached memory root whose files differ from the dataset's (a generated set that changed) is built again from
    nothing: a file it no longer has is gone, and its chunks with it, so they cannot be found in its place."""
    from scripts.eval_data import Dataset
    from scripts.eval_run import Runner

    files = {"notes/a.md": b"# A\nthe deploy runs on Tuesdays\n", "notes/b.md": b"# B\nthe backup runs at night\n"}
    ds = Dataset("tiny", "notes", {"r": files}, [], doc_of=lambda hit: hit.id)
    runner = Runner(tmp_path / "work", tmp_path / "cache", {"model": "none"}, None)
    root, first = runner.build(ds, "r", files, fresh=False)
    assert first["chunks"] == 2
    del files["notes/b.md"]
    _, again = Runner(tmp_path / "work", tmp_path / "cache", {"model": "none"}, None).build(ds, "r", files, fresh=False)
    assert not (root / "notes" / "b.md").exists() and again["chunks"] == 1 and again["chunks_added"] == 1
    (root / "marker").write_text("made after that build\n")
    _, same = Runner(tmp_path / "work", tmp_path / "cache", {"model": "none"}, None).build(ds, "r", files, fresh=False)
    assert same["chunks"] == 1 and (root / "marker").exists()  # unchanged: the cached root and index are kept


def test_the_injection_dump_makes_its_folder_and_reads_back(tmp_path):
    """``--dump-queries`` with ``--out`` in a folder that does not exist yet: the injection section's candidates file
    is written there (it raised FileNotFoundError at the end of a run), and it reads back the same."""
    from indexer.base.types import Hit
    from scripts.eval_injection import Asked, dump, load_dump

    hit = Hit("a1", "event", "prompt", "prompt · Mel", "I paint by the lake", "events/d.jsonl", None, None,
              "2026-11-20T10:00:00", "s1", "p", None, 0.5, 1, None, event_id="t0")
    asked = Asked("conv#1", "own", "bm25", "where does Mel paint", frozenset({"t0"}), "p", [hit], 5)
    out = tmp_path / "new" / "folder" / "injection-candidates.jsonl"
    dump([asked], out)
    [back] = load_dump(out)
    assert (back.qid, back.gold, back.hits, back.max_items) == ("conv#1", frozenset({"t0"}), [hit], 5)
