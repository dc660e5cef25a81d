"""Notebooks: a completion, a run log and a query result render as the viewer's page
(``_repr_html_``), and Python calls print nothing unless asked to (``verbose=True``)."""

from __future__ import annotations

from rlm_rs import RLM, PromptAssembler, RunLog, query
from rlm_rs.logger import RLMLogger

from test_toolkit import corpus, extractor_and_report, query_kwargs  # noqa: F401 (fixture)


def fake_rlm(fake, **kwargs) -> RLM:
    return RLM(
        backend="openai",
        backend_kwargs={"model_name": "root", "base_url": fake.url, "api_key": "sk-nb-Wq81zXe"},
        **kwargs,
    )


def test_a_completion_and_its_log_render_as_the_viewers_page(fake, tmp_path):
    fake.script("root", "```repl\nprint('shown in the page')\n```", "FINAL(rendered)")
    result = fake_rlm(fake, logger=RLMLogger(tmp_path / "logs")).completion("x")
    html = result._repr_html_()
    assert "<html" in html.lower()
    assert "rendered" in html and "shown in the page" in html
    log = RunLog(result.log_path)
    # The same page (each rendering has its own script nonce).
    assert "rendered" in log._repr_html_() and "shown in the page" in log.html()
    assert log.result["status"] == "answered"
    assert len(log.iterations) == 2
    assert "RunLog(" in repr(log) and "iterations=2" in repr(log)


def test_a_query_result_renders_as_the_viewers_page(fake, corpus, monkeypatch, tmp_path):  # noqa: F811
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-q7Hd92kLmZ")
    fake.responder = extractor_and_report
    result = query("How does token refresh fail?", log_dir=tmp_path / "logs", **query_kwargs(fake, corpus))
    html = result._repr_html_()
    assert "<html" in html.lower() and "Refresh fails" in html


def test_calls_are_quiet_unless_verbose(fake, corpus, monkeypatch, capfd, tmp_path):  # noqa: F811
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-q7Hd92kLmZ")
    fake.script("root", "```repl\nx = 1\n```", "FINAL(quiet)")
    fake_rlm(fake).completion("x")
    fake.responder = extractor_and_report
    query("How does token refresh fail?", **query_kwargs(fake, corpus))
    (tmp_path / "notes.md").write_text("# Notes\nThe refresh bug.\n")
    PromptAssembler(stage="coding", notes=[tmp_path / "notes.md"]).build(
        [{"role": "user", "content": "fix it"}]
    )
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == "", printed

    fake.script("root", "```repl\nx = 1\n```", "FINAL(loud)")
    fake_rlm(fake, verbose=True).completion("x")
    out = capfd.readouterr().out
    assert "iteration 1/30" in out and "code: x = 1" in out and "answered in 2 iterations" in out
