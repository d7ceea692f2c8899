from hypothesis import given, settings, strategies as st

from indexer.chunker import parse_front_matter, split_markdown, split_plain

DOC = """---
title: Deploy notes
tags: [ops, deploy]
status: active
---
# Deploy

Intro paragraph.

## Staging
Run the staging pipeline.

### Rollback
```bash
# not a heading inside a fence
./rollback.sh --to previous
```
Done.
"""


def test_heading_paths_become_titles_with_line_ranges():
    pieces = split_markdown(DOC, "doc")
    assert [(p.title, p.line_start, p.line_end) for p in pieces] == [
        ("Deploy", 6, 8),
        ("Deploy > Staging", 10, 11),
        ("Deploy > Staging > Rollback", 13, 18),
    ]
    assert "# not a heading inside a fence" in pieces[2].text


def test_front_matter_is_parsed_and_excluded():
    fm = parse_front_matter(DOC.split("\n"))
    assert fm.fields == {"title": "Deploy notes", "tags": ["ops", "deploy"], "status": "active"}
    assert fm.body_start == 5
    assert all("status: active" not in p.text for p in split_markdown(DOC, "doc"))


def test_unterminated_front_matter_is_body_text():
    assert parse_front_matter(["---", "a: b", "no end"]).fields == {}


def test_code_fence_is_never_cut():
    fence = "```python\n" + "\n".join(f"x{i} = {i}  # filler text to make the block long" for i in range(40)) + "\n```"
    text = "# T\n\n" + "para " * 50 + "\n\n" + fence + "\n\nafter " * 5
    pieces = split_markdown(text, "t", max_chars=600, overlap=100)
    holding = [p for p in pieces if "```python" in p.text]
    assert len(holding) == 1 and holding[0].text.count("```") == 2
    assert all(p.text.count("```") % 2 == 0 for p in pieces)


def test_long_sections_split_with_overlap_and_bounded_size():
    body = "\n".join(f"Line {i}: " + "lorem ipsum dolor sit amet " * 3 for i in range(60))
    pieces = split_markdown("# Big\n" + body, "big", max_chars=500, overlap=120)
    assert len(pieces) > 5
    assert all(len(p.text) <= 500 for p in pieces)
    for a, b in zip(pieces, pieces[1:]):
        assert b.line_start <= a.line_end + 1
        assert b.line_start <= a.line_end, "consecutive chunks share a line of overlap"


def test_huge_single_line_is_split():
    pieces = split_markdown("x" * 10_000, "huge", max_chars=1000, overlap=100)
    assert len(pieces) >= 10 and all(len(p.text) <= 1000 for p in pieces)


def test_headings_without_body_are_kept():
    pieces = split_markdown("# A\n## B\n### C\nbody", "d")
    assert pieces[0].title == "A > B > C"
    assert pieces[0].text.startswith("# A\n## B\n### C")


def test_split_plain_prefers_boundaries_and_overlaps():
    text = " ".join(f"Sentence number {i} is here." for i in range(200))
    parts = split_plain(text, 300, 60)
    assert all(len(p) <= 300 for p in parts)
    assert parts[0].endswith(". ")
    assert parts[1][:20] in parts[0]


_line = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=120)
_md_line = st.one_of(_line, st.just("```"), st.just(""), st.builds(lambda h, t: "#" * h + " " + t, st.integers(1, 6), _line))


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_md_line, max_size=80), size=st.integers(80, 1500))
def test_chunking_loses_no_text(lines, size):
    text = "\n".join(lines)
    pieces = split_markdown(text, "doc", max_chars=size, overlap=size // 5)
    covered = "\n".join(p.text for p in pieces)
    for line in lines:
        if line.strip():
            assert line.strip() in covered or _split_pieces_cover(line, pieces)


def _split_pieces_cover(line, pieces):
    """A line longer than a chunk is split; its parts must each appear."""
    joined = "".join(p.text for p in pieces)
    return all(part in joined for part in line.split() if part)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=5000), size=st.integers(50, 2000))
def test_split_plain_loses_no_text(text, size):
    parts = split_plain(text, size, size // 4)
    assert parts[0] == text[: len(parts[0])]
    pos = len(parts[0])
    for part in parts[1:]:
        # each part starts inside what came before (overlap) and continues the text exactly
        start = text.index(part, max(0, pos - len(part)))
        assert start <= pos
        pos = max(pos, start + len(part))
    assert pos == len(text)
