"""``memsearch mcp``: a stdio MCP server (official ``mcp`` SDK, v2 ``MCPServer``) with the three-step workflow
of progressive disclosure: ``search`` (a compact index of hits), ``timeline`` (what happened around one hit) and
``get`` (full items by id). Nothing is printed to stdout outside the protocol."""

from __future__ import annotations

import dataclasses

from indexer.settings import Settings

INSTRUCTIONS = (
    "Search the user's long-term coding memory (notes, facts, past prompts, replies and tool observations). "
    "Work in three steps to save context: 1) `search` returns one compact line per hit (id, score, kind, date, "
    "title); 2) `timeline` shows what happened just before and after one hit; 3) `get` returns the full text of "
    "the ids you need. Memories may be outdated: verify them."
)


def _line(hit) -> str:
    title = " ".join((hit.title or hit.text).split())[:90]
    return f"{hit.id} {hit.score:.4f} {hit.kind}/{hit.category} {(hit.ts or '')[:10]} {title}"


def build(settings: Settings):
    from mcp.server import MCPServer

    from .filters import Filters
    from .lookup import get_many, timeline as run_timeline
    from .search import search as run_search

    server = MCPServer("memsearch", instructions=INSTRUCTIONS)
    warm: dict = {}

    def embedder():
        """One embedder for the life of the server: its model loads at the first search that needs it and stays
        loaded (a fresh one per call would load the model every time)."""
        from indexer.embedder import load_embedder
        from indexer.errors import ModelUnavailable

        if "embedder" not in warm:
            try:
                warm["embedder"] = load_embedder(settings)
            except ModelUnavailable:
                return None  # search() reports why, and answers with BM25
        return warm["embedder"]

    @server.tool()
    def search(query: str, k: int = 10, mode: str = "hybrid", kind: str | None = None,
               project: str | None = None, since: str | None = None) -> str:
        """Step 1: search memory. Returns one line per hit: id, score, kind/category, date, title."""
        loaded = embedder() if mode != "bm25" else None
        extra = {"embedder": loaded} if loaded is not None else {}
        result = run_search(settings, query, mode=mode, k=max(1, min(k, 50)),
                            filters=Filters.build(kind=kind, project=project, since=since), **extra)
        header = f"mode_used: {result.mode_used}" + (f" ({result.fallback_reason})" if result.fallback_reason else "")
        lines = [_line(h) for h in result.hits] or ["no results"]
        return "\n".join([header, *lines])

    @server.tool()
    def timeline(id: str, window: int = 5) -> str:
        """Step 2: the items just before and after one hit in time (its session's, when it has one)."""
        t = run_timeline(settings, id, max(1, min(window, 20)))
        rows = [*(f"  {_line(h)}" for h in t.before), f"> {_line(t.center)}", *(f"  {_line(h)}" for h in t.after)]
        return "\n".join(rows)

    @server.tool()
    def get(ids: list[str]) -> list[dict]:
        """Step 3: the full items for these ids, with source path, lines, date, session and project."""
        return [dataclasses.asdict(h) for h in get_many(settings, ids[:20])]

    return server


def run(settings: Settings) -> None:
    build(settings).run()
