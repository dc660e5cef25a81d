"""docs/python.md's examples run as written: every ```python block, in order, in one namespace
(as a reader would paste them into one session), in a fresh directory, against the fake
provider through the environment a user sets (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``). The
HTML comment above a block says what the fake model answers (``replies`` per model, or a named
``responder``) and what the block must print."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List

import pytest

from conftest import last_user_message

DOCS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "python.md"))

BLOCK = re.compile(r"(?:<!-- fake: (?P<fake>\{.*?\}) -->\n)?```python\n(?P<code>.*?)```", re.S)


def blocks() -> List[Dict[str, Any]]:
    with open(DOCS, encoding="utf-8") as docs:
        text = docs.read()
    found = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start("code")) + 1
        fake = json.loads(match.group("fake")) if match.group("fake") else {}
        found.append({"code": match.group("code"), "fake": fake, "line": line})
    return found


def query_pipeline(request: Dict[str, Any]) -> Dict[str, Any]:
    """`rlm query`'s three roles: the planner, the extractors (the sub-call model) and the
    report writer, each answering in its contract."""
    message = last_user_message(request)
    system = (request.get("messages") or [{}])[0].get("content") or ""
    if request["model"] == "gpt-5-mini":
        ids = re.findall(r'<chunk id="(\d+)"', message)
        results = [
            {
                "chunk_id": int(i),
                "relevance": "high",
                "findings": [f"refresh fails with AuthError::Expired (chunk {i})"],
                "summary": None,
                "follow_up": [],
            }
            for i in ids
        ]
        return {"text": json.dumps({"results": results})}
    if system.startswith("You plan a search"):
        plan = {"mode": "bm25", "queries": ["token refresh"], "top_k": 5, "batch_size": 4, "buffers": []}
        return {"text": json.dumps(plan)}
    cited = re.findall(r"\(chunk (\d+)\)", message)
    return {"text": "Refresh fails with AuthError::Expired " + " ".join(f"[chunk {c}]" for c in cited)}


RESPONDERS = {"query": query_pipeline}


def test_every_block_of_docs_python_md_runs(fake, monkeypatch, tmp_path, capsys):
    found = blocks()
    assert len(found) >= 8, "docs/python.md lost its examples"
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-Qm3x8Lw2")
    namespace: Dict[str, Any] = {}
    for block in found:
        fake.scripts.clear()
        fake.responder = RESPONDERS.get(block["fake"].get("responder", ""))
        for model, replies in block["fake"].get("replies", {}).items():
            fake.script(model, *replies)
        source = "\n" * (block["line"] - 1) + block["code"]
        try:
            exec(compile(source, DOCS, "exec"), namespace)
        except Exception as error:  # say which block, then fail with the error
            pytest.fail(f"docs/python.md block at line {block['line']} raised {error!r}")
        printed = capsys.readouterr().out
        for expected in block["fake"].get("prints", []):
            assert expected in printed, f"block at line {block['line']} printed:\n{printed}"
