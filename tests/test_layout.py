"""The package layout as a contract: imports point one way (entry points -> hooks and servers -> search and
indexing -> store -> base), no module imports another's private names, and the module graph has no cycle; the tests mirror the packages they
test, and no product module opens a network connection.

Read from the source with :mod:`ast`, imports inside functions included (a lazy import is still an arrow)."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import REPO

PACKAGES = ("indexer", "search_engine", "hooks")

#: Lower layers never import higher ones; a module may import its own layer (search and indexing use each other's
#: public functions, the hooks talk to the server through its client).
LAYERS = (
    ("base", ("indexer.base",)),
    ("store", ("indexer.store",)),
    ("search and indexing", ("indexer", "search_engine")),
    ("hooks and servers", ("hooks", "search_engine.serve")),
    ("entry points", ("search_engine.cli", "search_engine.viewer")),
)


def _layer(module: str) -> int:
    """The highest layer whose package prefix is the longest match for ``module``."""
    best, depth = 0, -1
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and prefix.count(".") > depth:
                best, depth = number, prefix.count(".")
    return best


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, str | None]]:
    """``(imported module, imported name or None)`` for every import of the project in ``path``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, None) for alias in node.names if alias.name.split(".")[0] in PACKAGES]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                child = f"{base}.{alias.name}"
                out.append((child, None) if child in MODULES else (base, alias.name))
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_the_layout_is_read():
    assert "indexer.base.settings" in MODULES and "search_engine.search" in MODULES
    assert ("indexer.base.settings", "Settings") in GRAPH["search_engine.search"] or any(
        target == "indexer.base.settings" for target, _ in GRAPH["search_engine.search"])


def test_imports_point_down_the_layers():
    upward = sorted(
        f"{name} ({LAYERS[_layer(name)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for name, imports in GRAPH.items() for target, _ in imports
        if target in MODULES and _layer(target) > _layer(name)
    )
    assert not upward, "\n".join(upward)


def test_no_module_imports_another_modules_private_names():
    private = sorted(
        f"{name} imports {target}.{symbol}"
        for name, imports in GRAPH.items() for target, symbol in imports
        if symbol and symbol.startswith("_") and not symbol.startswith("__") and target != name
    )
    assert not private, "\n".join(private)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("level", ["module", "package"])
def test_the_import_graph_has_no_cycle(level):
    def node(name: str) -> str:
        if level == "module":
            return name
        prefixes = [p for _, group in LAYERS for p in group if name == p or name.startswith(p + ".")]
        return max(prefixes, key=len) if prefixes else name.split(".")[0]

    edges: dict[str, set[str]] = defaultdict(set)
    for name, imports in GRAPH.items():
        for target, _ in imports:
            # a package's __init__ is imported on the way to its modules: not an arrow of its own
            if target in MODULES and node(target) != node(name) and not name.startswith(target + "."):
                edges[node(name)].add(node(target))
    assert _cycles(edges) == []


def test_no_network_code_anywhere():
    """Every socket memsearch opens is AF_UNIX: no TCP or UDP socket, listener or HTTP server in the code."""
    pattern = re.compile(r"AF_INET|SOCK_DGRAM|create_server|HTTPServer|socketserver|\.bind\(\(|asyncio\.start_server"
                         r"|open_connection|urllib\.request|http\.client")
    offenders = [f"{p.relative_to(REPO)}:{n}" for folder in ("indexer", "search_engine", "hooks")
                 for p in sorted((REPO / folder).glob("*.py"))
                 for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert offenders == []


def test_the_tests_mirror_the_packages_and_their_file_names_are_unique():
    """tests/<package>/... mirrors a package of the project (tests/e2e holds the cross-cutting checks), and every
    test file's name is unique: the folders have no ``__init__.py``, so pytest imports each file by its bare name."""
    tests = REPO / "tests"
    assert not list(tests.rglob("__init__.py"))
    files = [p for p in tests.rglob("test_*.py") if "__pycache__" not in p.parts]
    names = [p.name for p in files]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    for folder in {p.parent for p in files} - {tests, tests / "e2e"}:
        package = REPO / folder.relative_to(tests)
        assert package.is_dir() and (package / "__init__.py").exists(), f"{folder} mirrors no package"


def test_sql_runs_only_in_the_store():
    """No module outside indexer/store/ calls a database cursor's ``execute``: a second backend is a new module."""
    outside = sorted(
        f"{name}:{node.lineno}"
        for name, path in MODULES.items() if not name.startswith("indexer.store")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("execute", "executemany", "executescript")
    )
    assert not outside, "\n".join(outside)
