"""State files are named in one module (indexer/base/paths.py): no other module spells one of their names."""

import re

from conftest import REPO
from indexer.base import paths


def test_no_module_spells_a_state_file_name_that_paths_names():
    # names with a dot or a dash are unambiguous file names ("events" or "logs" alone are ordinary words too)
    names = {v for k, v in vars(paths).items() if k.isupper() and isinstance(v, str) and re.search(r"[.-]", v)
             and "*" not in v}
    assert {"index.lock", "serve.sock", "serve.log", "summarize.starting", "serve.pid"} <= names
    quoted = re.compile("|".join(rf"""["']{re.escape(n)}["']""" for n in sorted(names)))
    found = []
    for package in ("indexer", "search_engine", "hooks"):
        for path in sorted((REPO / package).rglob("*.py")):
            if path == REPO / "indexer" / "base" / "paths.py":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if quoted.search(line):
                    found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []
