"""Store, inspect, query, view and PromptAssembler, each against what the CLI does."""

from __future__ import annotations

import asyncio
import json
import os
import re

import pytest

from rlm_rs import (
    RLM,
    PromptAssembler,
    QueryResult,
    RlmError,
    RlmInputError,
    Store,
    aquery,
    inspect,
    query,
    view,
)
from rlm_rs.logger import RLMLogger

from conftest import last_user_message


def write(directory, name, text):
    path = os.path.join(str(directory), name)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
    return path


@pytest.fixture
def corpus(tmp_path):
    write(tmp_path, "auth.rs", "fn refresh_token() -> Result<Token, AuthError> { Err(AuthError::Expired) }\n")
    write(tmp_path, "server.log", "INFO started\nERROR token refresh failed: AuthError::Expired for user 42\n")
    write(tmp_path, "recipe.md", "# Pasta\nBoil for nine minutes.\n")
    store = Store(tmp_path / "store")
    # Buffers are named as the paths are given (the tests run in tmp_path).
    loaded = store.load("auth.rs", "server.log", "recipe.md")
    assert sorted(b["name"] for b in loaded["loaded"]) == ["auth.rs", "recipe.md", "server.log"]
    return store


def test_store_round_trip_load_search_grep_chunks_peek(corpus, tmp_path):
    hits = corpus.search("pasta boil")
    assert hits and hits[0].buffer == "recipe.md"
    assert hits[0].mode == "bm25" and hits[0].rank == 1
    assert "Boil" in corpus.chunk(hits[0].chunk_id)

    matches = [m for m in corpus.grep(r"AuthError::\w+") if not m.is_context]
    assert {(m.buffer, m.line) for m in matches} == {("auth.rs", 1), ("server.log", 2)}
    log_match = next(m for m in matches if m.buffer == "server.log")
    start, end = log_match.matches[0]
    assert log_match.text.encode()[start:end] == b"AuthError::Expired"

    scoped = corpus.grep("AuthError", path="*.log")
    assert {m.buffer for m in scoped} == {"server.log"}

    names = sorted(b["name"] for b in corpus.buffers())
    assert names == ["auth.rs", "recipe.md", "server.log"]
    chunks = corpus.chunks("server.log")
    assert chunks and all("id" in c for c in chunks)
    assert corpus.peek("server.log", (2, 2)).startswith("ERROR token refresh")

    # Loading the same file again changes nothing; an edited one is replaced.
    again = corpus.load("recipe.md")
    assert again["unchanged"] == ["recipe.md"] and again["loaded"] == []


def test_a_store_on_postgres_answers_as_a_directory(corpus, tmp_path):
    # The test server scripts/test starts; without it the test skips, as the CLI's do.
    url = os.environ.get("RLM_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("RLM_TEST_POSTGRES_URL is unset (scripts/test starts a PostgreSQL server)")
    separator = "&" if "?" in url else "?"
    remote = Store(f"{url}{separator}schema=py_{os.getpid()}")
    loaded = remote.load("auth.rs", "server.log", "recipe.md")
    assert sorted(b["name"] for b in loaded["loaded"]) == ["auth.rs", "recipe.md", "server.log"]
    for words in ["pasta boil", "token refresh", "AuthError"]:
        assert [(h.buffer, h.chunk_id, h.rank) for h in remote.search(words)] == [
            (h.buffer, h.chunk_id, h.rank) for h in corpus.search(words)
        ], words
    grep = lambda store: [(m.buffer, m.line, m.text) for m in store.grep(r"AuthError::\w+")]
    assert grep(remote) == grep(corpus)
    assert remote.peek("server.log", (2, 2)) == corpus.peek("server.log", (2, 2))
    remote.delete("recipe.md")
    assert sorted(b["name"] for b in remote.buffers()) == ["auth.rs", "server.log"]
    # The password in the URL is nowhere in what the store says of itself.
    password = url.split("://", 1)[1].split("@", 1)[0].partition(":")[2]
    assert password and password not in repr(remote.buffers())
    assert password not in repr(remote) and "***" in repr(remote)


def test_a_query_that_starts_with_a_hyphen_is_a_query(corpus):
    # No command line between Python and the operation: `-x` is not a flag.
    hits = corpus.search("-x pasta boil")
    assert hits and hits[0].buffer == "recipe.md"
    assert corpus.grep("-no-such-flag") == []


def test_store_errors_carry_the_cli_messages(tmp_path):
    store = Store(tmp_path / "store")
    with pytest.raises(RlmError) as raised:
        store.load(tmp_path / "missing.txt")
    assert "missing.txt" in str(raised.value)
    with pytest.raises(RlmInputError, match="search mode"):
        store.search("x", mode="fuzzy")
    write(tmp_path, "a.txt", "alpha\n")
    store.load(tmp_path / "a.txt")
    with pytest.raises(RlmError) as raised:
        store.grep("([unclosed")
    assert raised.value.exit_code == 2 and "regex" in str(raised.value).lower()


def test_inspect_returns_the_metadata_record(tmp_path):
    path = write(tmp_path, "people.csv", "name,age\nada,36\nalan,41\n")
    meta = inspect(path)
    assert meta["format"] == "csv"
    assert meta["records"] == 2
    assert meta["fields"] == ["name", "age"]
    assert meta["bytes"] == os.path.getsize(path)
    with pytest.raises(RlmError, match="nothing.csv"):
        inspect(tmp_path / "nothing.csv")


def extractor_and_report(request):
    message = last_user_message(request)
    if request["model"] == "sub":
        ids = re.findall(r'<chunk id="(\d+)"', message)
        results = [
            {
                "chunk_id": int(i),
                "relevance": "high",
                "findings": [f"AuthError::Expired seen in chunk {i}"],
                "summary": None,
                "follow_up": [],
            }
            for i in ids
        ]
        return {"text": json.dumps({"results": results})}
    cited = re.findall(r"seen in chunk (\d+)", message)
    return {"text": "## Summary\nRefresh fails with AuthError::Expired " + " ".join(f"[chunk {c}]" for c in cited)}


def query_kwargs(fake, store):
    return dict(
        store=store,
        model="openai:root",
        extra_flags=["--subcall-model", "openai:sub", "--skip-plan"],
    )


def test_query_returns_the_report_findings_and_usage(fake, corpus, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-q7Hd92kLmZ")
    fake.responder = extractor_and_report
    result = query("How does token refresh fail?", log_dir=tmp_path / "logs", **query_kwargs(fake, corpus))
    assert isinstance(result, QueryResult)
    assert result.status == "answered"
    assert result.report.startswith("## Summary\nRefresh fails")
    assert result.chunks_analyzed == 2
    assert len(result.findings) == 2
    assert result.citations_unknown == []
    assert result.log_path and os.path.exists(result.log_path)
    assert len(fake.requests_for("sub")) == 1

    # The async variant gives the same kind of result.
    again = asyncio.run(aquery("How does token refresh fail?", **query_kwargs(fake, corpus)))
    assert again.status == "answered" and again.chunks_analyzed == 2

    # And the query log becomes a page.
    page = view(result.log_path, output=tmp_path / "query.html")
    assert page == str(tmp_path / "query.html")
    assert "Refresh fails" in open(page, encoding="utf-8").read()


def test_query_on_a_store_that_does_not_exist_is_an_error(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    with pytest.raises(RlmError) as raised:
        query("anything", store=tmp_path / "nowhere", model="openai:root")
    assert "nowhere" in str(raised.value)
    assert fake.requests == []


def test_view_writes_the_page_of_a_completion(fake, tmp_path):
    fake.script("root", "FINAL(viewed)")
    logger = RLMLogger(log_dir=tmp_path / "logs")
    result = RLM(
        backend="openai",
        backend_kwargs={"model_name": "root", "base_url": fake.url, "api_key": "sk-v1Ew83nQ"},
        logger=logger,
    ).completion("show me")
    page = view(result.log_path, output=tmp_path / "run.html")
    html = open(page, encoding="utf-8").read()
    assert "<html" in html.lower() and "viewed" in html
    with pytest.raises(RlmError, match="nope.jsonl"):
        view(tmp_path / "nope.jsonl")


def test_prompt_assembler_plans_and_builds_without_a_model(tmp_path):
    write(tmp_path, "NOTES.md", "Always run the tests.\n")
    write(tmp_path, "lib.rs", "pub fn answer() -> u32 { 42 }\n")
    assembler = PromptAssembler(
        stage="coding",
        notes=[tmp_path / "NOTES.md"],
        sources=[tmp_path / "lib.rs"],
    )
    history = [
        {"role": "user", "content": "Make answer() return 43."},
        {"role": "assistant", "content": "Looking at lib.rs."},
    ]
    built = assembler.build(history)
    messages = built["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "Always run the tests." in user and "pub fn answer()" in user
    assert "Make answer() return 43." in user
    assert built["plan"]  # the plan the build followed
    plan = assembler.plan(history)
    assert plan
    with pytest.raises(RlmError):
        PromptAssembler(stage="coding", budget_total=-5).build(history)


def test_store_answers_stay_within_the_reply_ceiling_and_pages_join_into_the_whole(tmp_path):
    # Issue 45: one grep for a common word built the whole answer in memory. Each call reads
    # at most max_reply_bytes of JSON; the cursor gives the rest, exactly.
    write(tmp_path, "big.log", "".join(f"the word {n} is here\n" for n in range(1, 5001)))
    store = Store(tmp_path / "store", max_reply_bytes=8192)
    store.load(str(tmp_path / "big.log"))
    lines, cursor, pages = [], None, 0
    while True:
        page = store.grep("word", cursor=cursor)
        assert len(json.dumps([m.text for m in page])) < 8192
        lines.extend(m.line for m in page)
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
        assert any(cursor in note for note in page.notes), page.notes
    assert pages > 10
    assert lines == list(range(1, 5001))
    # The whole answer in one page, with a ceiling large enough.
    assert len(Store(tmp_path / "store", max_reply_bytes=2_000_000).grep("word")) == 5000

    text = store.peek(str(tmp_path / "big.log"), (1, 5000))
    assert len(text.encode()) < 8192 and text.startswith("the word 1 is here\n")
    shown = text.count("\n")
    assert text.rest["lines"] == f"{shown + 1}:5000"
    following = store.peek(str(tmp_path / "big.log"), (shown + 1, shown + 1))
    assert following == f"the word {shown + 1} is here\n" and following.rest is None

    with pytest.raises(RlmInputError, match="continues another request"):
        store.grep("here", cursor=store.grep("word").next_cursor)
    with pytest.raises(ValueError, match="too small"):
        Store(tmp_path / "store", max_reply_bytes=10).buffers()
