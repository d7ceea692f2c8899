"""The standing context SessionStart injects: ``MEMORY.md`` (the user's preferences), the last session summary
of this project and its active facts, within a token budget (``session_context``, default 600; 0 turns it off).

It is escaped exactly like the prompt block (:mod:`search_engine.context`): control and invisible characters
stripped, XML-escaped, each item cited, inside one ``<memory-context>`` labelled as memory to verify. ``MEMORY.md``
goes through the privacy filter first (it is read from the file, not from the index, where notes already are).
"""

from __future__ import annotations

from indexer.base.settings import Settings
from indexer.store import Store
from search_engine.context import CHARS_PER_TOKEN, HEADER, compact, escape, sanitize
from search_engine.reading import read_configured

#: Each part's share of the budget; what one leaves unused goes to the next.
SHARES = (("memory", 0.4), ("summary", 0.35), ("facts", 0.25))
MAX_FACTS = 10


def _attr(text: str) -> str:
    return escape(sanitize(text)).replace('"', "&quot;").replace("\n", " ")


def _memory_md(settings: Settings) -> str | None:
    path = settings.home / "MEMORY.md"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    from indexer.privacy import redact

    return redact(text).text.strip() or None


def _project_parts(settings: Settings, project: str | None) -> tuple[tuple[str, str, str] | None, list[tuple]]:
    """(the latest session summary of ``project``: id, source, text) and its active facts (id, date, text), from
    the index search reads (with ``db_url``, the member's own and what others shared on the team store)."""
    if not project:
        return None, []
    def read(store: Store | None) -> tuple[tuple[str, str, str] | None, list[tuple]]:
        if store is None:
            return None, []
        return store.latest_session_summary(project), store.active_facts(project, MAX_FACTS)

    return read_configured(settings, read)[0]


def standing_context(settings: Settings, project: str | None, *, budget_tokens: int | None = None) -> str:
    """The block to inject at session start, or ``""`` when there is nothing (or the budget is 0).

    >>> from indexer.base.settings import resolve_settings
    >>> standing_context(resolve_settings("/tmp/memsearch-doctest-standing"), "shop")
    ''
    """
    budget = (settings.session_context if budget_tokens is None else budget_tokens) * CHARS_PER_TOKEN
    if budget <= 0:
        return ""
    memory = _memory_md(settings)
    summary, facts = _project_parts(settings, project)
    items: list[str] = []
    spare = 0.0
    for part, share in SHARES:
        room = int(budget * share + spare)
        used = 0
        if part == "memory" and memory:
            text = compact(memory, max(0, room - 80))
            item = f'<memory kind="preferences" source="MEMORY.md">\n{escape(text)}\n</memory>'
            items.append(item)
            used = len(item)
        elif part == "summary" and summary:
            uid, source, text = summary
            text = compact(text, max(0, room - 120))
            item = (f'<memory id="{_attr(uid)}" kind="last-session" source="{_attr(source)}">\n{escape(text)}\n'
                    "</memory>")
            items.append(item)
            used = len(item)
        elif part == "facts" and facts:
            lines = []
            for uid, ts, text in facts:
                line = f"- [{uid} {(ts or '')[:10]}] {compact(text, 240)}"
                if used + len(line) + 60 > room:
                    break
                lines.append(line)
                used += len(line) + 1
            if lines:
                items.append(f'<memory kind="facts" project="{_attr(project or "")}">\n'
                             f"{escape(chr(10).join(lines))}\n</memory>")
        spare = max(0.0, room - used)
    if not items:
        return ""
    return "<memory-context>\n" + HEADER + "\n" + "\n".join(items) + "\n</memory-context>"
