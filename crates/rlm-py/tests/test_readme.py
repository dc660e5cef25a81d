"""The README's Python example runs as written (from the repository root, as the README says)
and prints the answer of the recorded session."""

from __future__ import annotations

import os
import re

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def readme_example() -> str:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as readme:
        text = readme.read()
    section = text[text.index("### From Python") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs_as_written(monkeypatch, capsys):
    source = readme_example()
    assert len(source.strip().splitlines()) <= 6, source
    monkeypatch.chdir(REPO)
    exec(compile(source, "README.md", "exec"), {})
    assert "OSPREY-7731" in capsys.readouterr().out
