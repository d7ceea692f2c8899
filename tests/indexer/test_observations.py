"""Tool observations (indexer/observations.py): file and search tools read from their structured fields."""

from __future__ import annotations

import pytest

from indexer.observations import describe_tool, response_text

EDIT_RESPONSE = {"filePath": "/repo/export.py", "oldString": "batch = 500", "newString": "batch = 1000",
                 "originalFile": "import os\nbatch = 500\n" * 50, "structuredPatch": [], "userModified": False,
                 "replaceAll": False}


def _observe(name, tool_input, response, ok=True):
    return describe_tool(name, tool_input, response_text(response), ok, response)[0]


def test_edit_is_its_path_and_strings_never_the_response():
    text = _observe("Edit", {"file_path": "/repo/export.py", "old_string": "batch = 500",
                             "new_string": "batch = 1000"}, EDIT_RESPONSE)
    assert text == "Edit: /repo/export.py\nold: batch = 500\nnew: batch = 1000"


@pytest.mark.parametrize("name,tool_input,response,expected", [
    ("MultiEdit", {"file_path": "/r/a.py", "edits": [{"old_string": "a", "new_string": "b"},
                                                    {"old_string": "c", "new_string": "d"}]},
     {"filePath": "/r/a.py", "edits": [], "originalFileContents": "x" * 5000},
     "MultiEdit: /r/a.py\n2 edits\nnew: b\nnew: d"),
    ("Write", {"file_path": "/r/notes.md", "content": "# Plan\nship it\n"}, {"filePath": "/r/notes.md",
                                                                          "success": True, "type": "create"},
     "Write: /r/notes.md\nwrote 3 lines\n# Plan\nship it"),
    ("Read", {"file_path": "/r/a.py", "offset": 10, "limit": 20},
     {"type": "text", "file": {"filePath": "/r/a.py", "content": "secret body " * 300, "numLines": 20}},
     "Read: /r/a.py (lines 10-30)\n20 lines read"),
    ("Grep", {"pattern": "TODO", "path": "/r", "glob": "*.py"},
     {"mode": "files_with_matches", "numFiles": 2, "filenames": ["/r/a.py", "/r/b.py"]},
     "Grep: TODO in /r (*.py)\n2 files: /r/a.py, /r/b.py"),
])
def test_file_and_search_tools_use_their_structured_fields(name, tool_input, response, expected):
    text = _observe(name, tool_input, response)
    assert text == expected
    assert "{" not in text and "filePath" not in text


def test_a_failed_edit_keeps_its_error():
    text = _observe("Edit", {"file_path": "/r/a.py", "old_string": "zz", "new_string": "yy"},
                    {"error": "String to replace not found in file."}, ok=False)
    assert text.startswith("Edit: /r/a.py (failed)\nold: zz\nnew: yy\n") and "not found" in text


def test_a_transcripts_grep_result_text_is_kept():
    text = describe_tool("Grep", {"pattern": "TODO"}, "Found 1 file\n/r/a.py", True)[0]
    assert text == "Grep: TODO\nFound 1 file\n/r/a.py"


def test_bash_keeps_its_output():
    assert _observe("Bash", {"command": "pytest -q"}, {"stdout": "3 passed", "stderr": ""}) == \
        "Bash: pytest -q\n3 passed"
