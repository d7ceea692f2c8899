"""The privacy filter, applied to every text before it reaches disk or the index.

Two passes:

1. Private spans. ``<private>…</private>``, ``[private]…[/private]`` and ``<!-- private -->…<!-- /private -->``
   (any case, nestable) are replaced by :data:`PRIVATE_MARKER`. Tags inside fenced code blocks are left literal
   (documentation about the tags stays readable); a span that encloses a fence still hides it. Empty spans are
   removed. An unclosed opening tag is left as it is and reported as a warning. The newlines of a removed span
   are kept, so the line numbers of everything after it stay right for citations.
2. Secrets. Passwords, API keys and tokens of common providers, bearer tokens, private key blocks and connection
   strings with credentials are masked as ``[REDACTED:<kind>]``, everywhere, fences included.

>>> redact("deploy with <private>hunter2</private> now").text
'deploy with [REDACTED:private] now'
>>> redact("key AKIAIOSFODNN7EXAMPLE").text
'key [REDACTED:aws-key]'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PRIVATE_MARKER = "[REDACTED:private]"

_OPEN = {
    "angle": r"<private\s*>",
    "square": r"\[private\]",
    "comment": r"<!--\s*private\s*-->",
}
_CLOSE = {
    "angle": r"</private\s*>",
    "square": r"\[/private\]",
    "comment": r"<!--\s*/private\s*-->",
}
_TAG_RE = re.compile(
    "|".join(f"(?P<open_{k}>{v})" for k, v in _OPEN.items())
    + "|"
    + "|".join(f"(?P<close_{k}>{v})" for k, v in _CLOSE.items()),
    re.IGNORECASE,
)
_FENCE_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})", re.MULTILINE)

# (kind, anchors, pattern, group to mask or 0 for the whole match). Every match of a pattern holds one of its
# anchors once lower-cased, so a pattern runs only on a text holding an anchor: most texts hold none, and the
# substring tests cost a fraction of one regex scan (the filter runs on every text the indexer reads).
_SECRETS: list[tuple[str, tuple[str, ...], re.Pattern[str], int]] = [
    (
        "private-key",
        ("-----begin",),
        re.compile(
            r"-----BEGIN ((?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?)-----"
            r"[\s\S]*?(?:-----END \1-----|\Z)"
        ),
        0,
    ),
    ("aws-key", ("akia", "asia", "agpa", "aida", "aroa"), re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"), 0),
    ("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})\b"), 0),
    ("gitlab-token", ("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}\b"), 0),
    ("anthropic-key", ("sk-ant-",), re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), 0),
    ("openai-key", ("sk-",), re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"), 0),
    ("stripe-key", ("_live_", "_test_"), re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b"), 0),
    ("slack-token", ("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), 0),
    ("google-key", ("aiza",), re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), 0),
    ("huggingface-token", ("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), 0),
    ("npm-token", ("npm_",), re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0),
    ("jwt", ("eyj",), re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), 0),
    ("bearer-token", ("bearer",), re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{12,}=*)"), 1),
    ("connection-string", ("://",), re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:([^\s@/]+)@"), 1),
    (
        "password",
        ("pass", "pwd", "secret", "key", "token"),
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|passphrase|secret|secret[_-]?key|api[_-]?key|apikey|access[_-]?key"
            r"|access[_-]?token|auth[_-]?token|client[_-]?secret|private[_-]?key)\b[\"']?\s*[:=]\s*"
            r"[\"']?(?!\[REDACTED)([^\s\"',;]{4,})"
        ),
        1,
    ),
]


_ANCHORS = tuple(dict.fromkeys(a for _, anchors, _, _ in _SECRETS for a in anchors))


@dataclass(frozen=True)
class Redacted:
    text: str
    private_spans: int = 0
    secrets: int = 0
    warnings: tuple[str, ...] = ()


def _fence_ranges(text: str) -> list[tuple[int, int]]:
    """Character ranges of fenced code blocks (an unclosed fence runs to the end)."""
    ranges: list[tuple[int, int]] = []
    start = None
    marker = ""
    for m in _FENCE_RE.finditer(text):
        fence = m.group(1)
        if start is None:
            start, marker = m.start(), fence
        elif fence[0] == marker[0] and len(fence) >= len(marker):
            line_end = text.find("\n", m.end())
            ranges.append((start, len(text) if line_end < 0 else line_end))
            start = None
    if start is not None:
        ranges.append((start, len(text)))
    return ranges


def _in_ranges(pos: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in ranges)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def strip_private(text: str) -> Redacted:
    """Replace private spans by the marker; see the module docstring for the rules."""
    if "private" not in text.lower():
        return Redacted(text)
    fences = _fence_ranges(text)
    out: list[str] = []
    warnings: list[str] = []
    spans = 0
    cursor = 0
    depth = 0
    style = ""
    open_pos = 0
    for m in _TAG_RE.finditer(text):
        if _in_ranges(m.start(), fences):
            continue
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
                inner = text[open_pos:m.end()]
                body = _TAG_RE.sub("", inner)
                newlines = "\n" * inner.count("\n")
                if body.strip():
                    out.append(PRIVATE_MARKER + newlines)
                    spans += 1
                else:
                    out.append(newlines)
                cursor = m.end()
    if depth:
        warnings.append(f"unclosed private tag at line {_line_of(text, open_pos)} left as it is")
        cursor = open_pos
    out.append(text[cursor:])
    return Redacted("".join(out), private_spans=spans, warnings=tuple(warnings))


def mask_secrets(text: str) -> tuple[str, int]:
    """Mask every secret; returns the masked text and how many were masked."""
    count = 0
    lower = text.lower()
    present = {a for a in _ANCHORS if a in lower}
    for kind, anchors, pattern, group in _SECRETS:
        if present.isdisjoint(anchors):
            continue
        marker = f"[REDACTED:{kind}]"

        def _sub(m: re.Match[str], group: int = group, marker: str = marker) -> str:
            nonlocal count
            count += 1
            if group == 0:
                return marker
            return m.group(0)[: m.start(group) - m.start(0)] + marker + m.group(0)[m.end(group) - m.start(0) :]

        before = count
        text = pattern.sub(_sub, text)
        if count != before:
            lower = text.lower()
            present = {a for a in _ANCHORS if a in lower}
    return text, count


def redact(text: str) -> Redacted:
    """Both passes: private spans, then secrets."""
    stripped = strip_private(text)
    masked, secrets = mask_secrets(stripped.text)
    return Redacted(masked, stripped.private_spans, secrets, stripped.warnings)


def scrub(text: str) -> str:
    """The filtered text alone, for places that need no report."""
    return redact(text).text
