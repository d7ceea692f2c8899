"""The privacy filter, applied to the whole of every text before it is cut, written or indexed.

Two passes:

1. Private spans. ``<private>…</private>``, ``[private]…[/private]`` and ``<!-- private -->…<!-- /private -->``
   in any case, with attributes (``<private reason="…">``) and stray spaces (``< private >``, ``</ private>``),
   nestable, are replaced by :data:`PRIVATE_MARKER`. Tags inside a *closed* fenced code block, or written alone as
   inline code (`` `<private>` ``) and pairing with no other tag, are left literal so documentation about them
   stays readable; an unclosed fence is no fence, and inline-code tags that pair still mark a span. An opening tag
   that is never closed hides everything after it, and a closing tag without an opening one hides everything
   before it (the text was cut upstream): both are reported as warnings. The newlines of a
   removed span are kept, so the line numbers of everything after it stay right for citations.
2. Secrets (:mod:`indexer.secret_rules`): masked as ``[REDACTED:<kind>]`` everywhere, fences included.

Before both, what no store can hold goes (:func:`indexer.base.storable.storable`: a NUL, a lone surrogate): every
text memsearch captures or indexes passes here first, so one pasted NUL can no longer stop the team sync.

Cutting a filtered text (a head and tail of a long tool output, the event size cap, a one-line summary) goes
through :func:`cut_head` / :func:`cut_tail`, which never split a marker; whoever cuts filters again afterwards, so
what is stored is a fixed point of the filter and ``memsearch scrub`` leaves it alone.

Marker kinds: ``private``, ``private-key``, ``key-material``, ``password``, ``secret``, ``connection-string``,
``bearer-token``, ``high-entropy``, ``webhook-url``, ``api-token``, ``password-hash`` and the providers' own (``aws-key``,
``github-token``, ``gitlab-token``, ``anthropic-key``, ``openai-key``, ``stripe-key``, ``slack-token``,
``google-key``, ``huggingface-token``, ``npm-token``, ``pypi-token``, ``sendgrid-key``, ``twilio-key``,
``mailgun-key``, ``mailchimp-key``, ``telegram-token``, ``azure-key``, ``sas-signature``, ``jwt``).

>>> redact("deploy with <private>hunter2</private> now").text
'deploy with [REDACTED:private] now'
>>> redact("key AKIAQ3EGRU7XKZ4TW5NB").text
'key [REDACTED:aws-key]'
"""

from __future__ import annotations

import re
from typing import NamedTuple

from indexer.base.storable import storable
from indexer.secret_rules import mask

#: Bumped whenever the filter would change what it stores; ``memsearch maintain`` scrubs when it differs from
#: the version the memory was last scrubbed with. 7: NUL characters removed (:func:`storable`). 8: a masked value's
#: echoes, client constructors, prose under list and quote marks. 9: scrambled and signed tokens in any sentence,
#: PINs and codes, quoted passphrases, reply pairs, card numbers (see the README's list). 10: seed phrases,
#: recovery codes and keys, bank and national identifiers, card codes in any language; passwords, passphrases, codes
#: and API keys told in prose in ~80 languages; fewer false positives (references, fingerprints, key names). 11:
#: identifiers after their label in more languages and by their shape when a check digit fails, card track data,
#: values behind a sign or ending in "!", names for password in other languages, passwords beside their user or
#: old one, TOTP seeds in prose; documentation's sample keys, placeholders and default logins left alone. 13: a
#: Latin word for a secret typed against Chinese, Japanese, Korean or Thai text ("门禁卡PIN是4524").
FILTER_VERSION = 13
PRIVATE_MARKER = "[REDACTED:private]"
MARKER_RE = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")

_OPEN = {
    "angle": r"<\s*private(?:\s+[^<>]*)?/?\s*>",
    "square": r"\[\s*private(?:\s+[^\[\]]*)?\]",
    "comment": r"<!--\s*private(?:[\s:][^<>]*?)?\s*-->",
}
_CLOSE = {
    "angle": r"<\s*/\s*private\s*>",
    "square": r"\[\s*/\s*private\s*\]",
    "comment": r"<!--\s*(?:/\s*|end\s+)private\s*-->",
}
_TAG_RE = re.compile(
    "|".join(f"(?P<open_{k}>{v})" for k, v in _OPEN.items())
    + "|"
    + "|".join(f"(?P<close_{k}>{v})" for k, v in _CLOSE.items()),
    re.IGNORECASE,
)
_FENCE_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})(.*)$", re.MULTILINE)


class Redacted(NamedTuple):
    """The filtered text and what was done to it (a named tuple: the hooks' path imports no ``dataclasses``)."""

    text: str
    private_spans: int = 0
    secrets: int = 0
    warnings: tuple[str, ...] = ()


def _fence_ranges(text: str) -> list[tuple[int, int]]:
    """Character ranges of the insides of *closed* fenced code blocks (an unclosed fence is no fence)."""
    ranges: list[tuple[int, int]] = []
    start = None
    marker = ""
    for m in _FENCE_RE.finditer(text):
        fence, rest = m.group(1), m.group(2)
        if start is None:
            if fence[0] == "`" and "`" in rest:
                continue  # not a fence: a backtick fence's info string holds no backtick
            start, marker = m.end(), fence
        elif fence[0] == marker[0] and len(fence) >= len(marker) and not rest.strip():
            ranges.append((start, m.start()))
            start = None
    return ranges


def _in_ranges(pos: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in ranges)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _inline(text: str, m: re.Match[str]) -> bool:
    """A tag written alone as inline code (`` `<private>` ``)."""
    return m.start() > 0 and text[m.start() - 1] == "`" and text.startswith("`", m.end())


def _tags(text: str) -> list[tuple[re.Match[str], bool]]:
    """The tags that count, each with whether it is inline code: tags in a closed fence are written about, not
    used; so is ``<private/>``; an inline-code tag counts only where it pairs with another (below)."""
    fences = _fence_ranges(text)
    tags = []
    for m in _TAG_RE.finditer(text):
        if _in_ranges(m.start(), fences):
            continue
        if (m.lastgroup or "").startswith("open_") and m.group(0).rstrip("> \t").endswith("/"):
            continue  # <private/>: an empty span
        tags.append((m, _inline(text, m)))
    return tags


def _unpaired_inline(tags: list[tuple[re.Match[str], bool]]) -> set[int]:
    """Indexes of inline-code tags that pair with nothing: a closing one with no span open, an opening one still
    open at the end. Those are mentions (documentation about the tags); a paired one still marks a span, since
    `` `<private>`secret`</private>` `` is private whatever the backticks meant."""
    unpaired: set[int] = set()
    stack: list[int] = []
    style = ""
    for i, (m, inline) in enumerate(tags):
        kind = m.lastgroup or ""
        is_open, tag_style = kind.startswith("open_"), kind.split("_", 1)[1]
        if is_open:
            if not stack:
                style = tag_style
            if tag_style == style:
                stack.append(i)
        elif stack and tag_style == style:
            stack.pop()
        elif not stack and inline:
            unpaired.add(i)
    unpaired.update(i for i in stack if tags[i][1])
    return unpaired


def strip_private(text: str) -> Redacted:
    """Replace private spans by the marker; see the module docstring for the rules."""
    if "private" not in text.lower():
        return Redacted(text)
    tags = _tags(text)
    while dropped := _unpaired_inline(tags):  # dropping a mention can pair others: until nothing changes
        tags = [t for i, t in enumerate(tags) if i not in dropped]
    out: list[str] = []
    warnings: list[str] = []
    spans = 0
    cursor = 0
    depth = 0
    style = ""
    open_pos = 0

    def hide(start: int, end: int) -> None:
        nonlocal spans
        inner = text[start:end]
        newlines = "\n" * inner.count("\n")
        if _TAG_RE.sub("", inner).strip():
            out.append(PRIVATE_MARKER + newlines)
            spans += 1
        else:
            out.append(newlines)

    for m, _ in tags:
        kind = m.lastgroup or ""
        is_open, tag_style = kind.startswith("open_"), kind.split("_", 1)[1]
        if is_open:
            if depth == 0:
                style, open_pos = tag_style, m.start()
                out.append(text[cursor : m.start()])
            depth += tag_style == style
        elif depth and tag_style == style:
            depth -= 1
            if depth == 0:
                hide(open_pos, m.end())
                cursor = m.end()
        elif depth == 0:
            warnings.append(f"closing private tag without an opening one at line {_line_of(text, m.start())}:"
                            " the text before it was withheld")
            hide(cursor, m.end())
            cursor = m.end()
    if depth:
        warnings.append(f"unclosed private tag at line {_line_of(text, open_pos)}: the rest of the text was withheld")
        hide(open_pos, len(text))
        cursor = len(text)
    out.append(text[cursor:])
    return Redacted("".join(out), private_spans=spans, warnings=tuple(warnings))


def mask_secrets(text: str) -> tuple[str, int]:
    """Mask every secret; returns the masked text and how many were masked."""
    return mask(text)


def redact(text: str) -> Redacted:
    """Both passes: private spans, then secrets; again while they change the text, since a mask can change what
    the first pass saw (a key block masked to the end of the text takes a closing fence with it, and a tag that
    fence kept literal is then live): what is stored is a fixed point, which ``memsearch scrub`` leaves alone."""
    text = storable(text)
    spans = secrets = 0
    warnings: list[str] = []
    for _ in range(4):
        stripped = strip_private(text)
        masked, found = mask(stripped.text)
        spans, secrets = spans + stripped.private_spans, secrets + found
        warnings += [w for w in stripped.warnings if w not in warnings]
        if masked == text:
            break
        text = masked
    return Redacted(text, spans, secrets, tuple(warnings))


def scrub(text: str) -> str:
    """The filtered text alone, for places that need no report."""
    return redact(text).text


def _marker_at(text: str, pos: int) -> tuple[int, int] | None:
    """The marker that ``pos`` falls strictly inside, as its span."""
    for m in MARKER_RE.finditer(text, max(0, pos - 40), pos + 40):
        if m.start() < pos < m.end():
            return m.start(), m.end()
    return None


def cut_head(text: str, limit: int) -> str:
    """The first ``limit`` characters of a filtered text, cut before a marker rather than through it."""
    if len(text) <= limit:
        return text
    inside = _marker_at(text, limit)
    return text[: inside[0] if inside else limit]


def cut_tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of a filtered text, cut after a marker rather than through it."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    pos = len(text) - limit
    inside = _marker_at(text, pos)
    return text[inside[1] if inside else pos:]


def kinds(text: str) -> dict[str, int]:
    """How many markers of each kind a stored text holds.

    >>> kinds("a [REDACTED:private] b [REDACTED:password] [REDACTED:private]")
    {'private': 2, 'password': 1}
    """
    counts: dict[str, int] = {}
    for m in MARKER_RE.finditer(text):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts
