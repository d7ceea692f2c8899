"""Splitting texts into chunks.

Markdown is split by headings first (each chunk keeps its heading path as its title and its line range for
citations), then packed block by block up to ``max_chars`` with about ``overlap`` characters of trailing lines
carried into the next chunk of the same section. A fenced code block is one block: it is never cut in half
unless it alone exceeds ``FENCE_HARD_LIMIT`` times the chunk size. Every non-blank line of the document lands in
at least one chunk (a heading with no body of its own is carried into the next section's first chunk).

>>> [(p.title, p.line_start, p.line_end) for p in split_markdown("# A\\ntext\\n## B\\nmore\\n", "doc")]
[('A', 1, 2), ('A > B', 3, 4)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Bump when chunking changes the text it produces (or what a chunk is embedded as), so indexes are rebuilt.
#: 2: events are embedded as "{speaker} on {date}: {text}" and carry the previous turn as FTS context.
#: 3: events are embedded with the turn they reply to (so every event is embedded once more; notes are not).
CHUNKER_VERSION = "3"
FENCE_HARD_LIMIT = 4

_HEADING_RE = re.compile(r"^[ ]{0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE_RE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Piece:
    title: str
    text: str
    line_start: int
    line_end: int


@dataclass(frozen=True)
class FrontMatter:
    fields: dict[str, object]
    body_start: int  # 0-based index of the first body line


def parse_front_matter(lines: list[str]) -> FrontMatter:
    """A small YAML subset: ``key: value``, ``key: [a, b]`` and ``- item`` lists. Enough for tags/status/category.

    >>> parse_front_matter(["---", "tags: [a, b]", "status: draft", "---", "body"]).fields
    {'tags': ['a', 'b'], 'status': 'draft'}
    """
    if not lines or lines[0].strip() != "---":
        return FrontMatter({}, 0)
    fields: dict[str, object] = {}
    key = None
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return FrontMatter(fields, i + 1)
        item = re.match(r"^\s+-\s+(.*)$", line) or re.match(r"^-\s+(.*)$", line)
        if item and key:
            current = fields.get(key)
            fields[key] = ([*current] if isinstance(current, list) else []) + [_scalar(item.group(1))]
            continue
        kv = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$", line)
        if kv:
            key, raw = kv.group(1).lower(), kv.group(2).strip()
            if raw.startswith("[") and raw.endswith("]"):
                fields[key] = [_scalar(x) for x in raw[1:-1].split(",") if x.strip()]
            else:
                fields[key] = _scalar(raw) if raw else []
    return FrontMatter({}, 0)  # no closing line: not front matter


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw


@dataclass
class _Block:
    lines: list[tuple[int, str]]  # (1-based line number, text)
    fence: bool = False

    @property
    def size(self) -> int:
        return sum(len(t) + 1 for _, t in self.lines)


def _blocks(section: list[tuple[int, str]]) -> list[_Block]:
    """Paragraph blocks separated by blank lines; a fenced code block is one block."""
    blocks: list[_Block] = []
    current: list[tuple[int, str]] = []
    fence: str | None = None
    fence_lines: list[tuple[int, str]] = []
    for number, line in section:
        if fence is not None:
            fence_lines.append((number, line))
            m = _FENCE_RE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
                blocks.append(_Block(fence_lines, fence=True))
                fence, fence_lines = None, []
            continue
        m = _FENCE_RE.match(line)
        if m:
            if current:
                blocks.append(_Block(current))
                current = []
            fence, fence_lines = m.group(1), [(number, line)]
            continue
        if line.strip():
            current.append((number, line))
        elif current:
            blocks.append(_Block(current))
            current = []
    if fence_lines:
        blocks.append(_Block(fence_lines, fence=True))
    if current:
        blocks.append(_Block(current))
    return blocks


def _split_long_line(number: int, line: str, max_chars: int, overlap: int) -> list[tuple[int, str]]:
    return [(number, part) for part in split_plain(line, max_chars, overlap)]


def _pack(blocks: list[_Block], max_chars: int, overlap: int) -> list[list[tuple[int, str]]]:
    """Greedy packing of blocks into chunks of at most ``max_chars`` (a lone oversize fence excepted)."""
    chunks: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    size = 0

    def flush() -> None:
        nonlocal current, size
        if not current:
            return
        chunks.append(current)
        carried: list[tuple[int, str]] = []
        carried_size = 0
        for number, text in reversed(current):
            if carried_size + len(text) + 1 > overlap or text.lstrip().startswith(("```", "~~~")):
                break
            carried.insert(0, (number, text))
            carried_size += len(text) + 1
        if len(carried) == len(current):
            carried = []
        current, size = carried, carried_size

    for block in blocks:
        if block.fence and block.size <= max_chars * FENCE_HARD_LIMIT:
            if size + block.size > max_chars:
                flush()
                if size + block.size > max_chars:
                    current, size = [], 0
            current.extend(block.lines)
            size += block.size
            continue
        for number, text in block.lines:
            pieces = [(number, text)] if len(text) < max_chars else _split_long_line(number, text, max_chars, overlap)
            for piece in pieces:
                if size + len(piece[1]) + 1 > max_chars and current:
                    flush()
                current.append(piece)
                size += len(piece[1]) + 1
        if current and block is not blocks[-1]:
            current.append((current[-1][0], ""))
            size += 1
    while current and not current[-1][1].strip():
        current.pop()
    if current:
        chunks.append(current)
    return chunks


def split_markdown(text: str, doc_title: str, max_chars: int = 1200, overlap: int = 200) -> list[Piece]:
    """Heading-aware chunks of a markdown document (front matter excluded, see :func:`parse_front_matter`)."""
    lines = text.split("\n")
    start = parse_front_matter(lines).body_start
    sections: list[tuple[str, list[tuple[int, str]]]] = []
    path: list[tuple[int, str]] = []
    current: list[tuple[int, str]] = []
    title = doc_title
    fence: str | None = None
    for index in range(start, len(lines)):
        line, number = lines[index], index + 1
        m = _FENCE_RE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
        heading = _HEADING_RE.match(line) if fence is None and not m else None
        if heading:
            sections.append((title, current))
            level, name = len(heading.group(1)), heading.group(2).strip()
            path = [(lv, n) for lv, n in path if lv < level] + [(level, name)]
            title = " > ".join(n for _, n in path) or doc_title
            current = [(number, line)]
        else:
            current.append((number, line))
    sections.append((title, current))

    pieces: list[Piece] = []
    carry: list[tuple[int, str]] = []
    for title, body in sections:
        body = carry + body
        carry = []
        has_content = any(t.strip() and not _HEADING_RE.match(t) for _, t in body)
        if not has_content:
            carry = [(n, t) for n, t in body if t.strip()]
            continue
        for chunk in _pack(_blocks(body), max_chars, overlap):
            chunk_text = "\n".join(t for _, t in chunk).strip("\n")
            if chunk_text.strip():
                pieces.append(Piece(title, chunk_text, chunk[0][0], chunk[-1][0]))
    if carry:
        pieces.append(Piece(title, "\n".join(t for _, t in carry), carry[0][0], carry[-1][0]))
    return pieces


def split_plain(text: str, max_chars: int = 1200, overlap: int = 200) -> list[str]:
    """Split plain text into windows of at most ``max_chars``, preferring paragraph, line, sentence, then word
    boundaries, each window overlapping the previous by about ``overlap`` characters.

    >>> split_plain("short")
    ['short']
    """
    if len(text) <= max_chars:
        return [text]
    overlap = max(0, min(overlap, max_chars // 2))
    parts: list[str] = []
    start = 0
    n = len(text)
    while start < n:
        end = min(n, start + max_chars)
        if end < n:
            window = text[start:end]
            floor = max_chars // 2
            for sep in ("\n\n", "\n", ". ", "。", " "):
                cut = window.rfind(sep, floor)
                if cut > 0:
                    end = start + cut + len(sep)
                    break
        parts.append(text[start:end])
        if end >= n:
            break
        next_start = end - overlap
        if overlap:
            space = text.find(" ", next_start, end)
            if space > 0:
                next_start = space + 1
        start = max(next_start, start + 1)
    return parts
