"""Examples from the reference implementation's README and examples/quickstart.py, run as
written except for the import (``rlm`` → ``rlm_rs``), against the fake provider through the
environment a user would set (``OPENAI_BASE_URL``, ``GEMINI_BASE_URL``, keys)."""

from __future__ import annotations

import os
import textwrap

import pytest


def powers_of_two(request):
    """The root model, played: code that prints the powers, then the variable as the answer."""
    seen = len(request["messages"])
    if seen <= 2:
        return {
            "text": "```repl\nlines = '\\n'.join(str(2 ** i) for i in range(100))\n"
            "FINAL_VAR('lines')\n```"
        }
    return {"text": "FINAL_VAR('lines')"}


def run_example(source: str) -> dict:
    namespace: dict = {}
    exec(compile(textwrap.dedent(source), "<example>", "exec"), namespace)
    return namespace


def test_readme_quick_start(fake, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-Xm2r9QpL0v")
    fake.responder = powers_of_two
    run_example(
        """
        from rlm_rs import RLM

        rlm = RLM(
            backend="openai",
            backend_kwargs={"model_name": "gpt-5-nano"},
            verbose=True,  # For printing to console with rich, disabled by default.
        )

        print(rlm.completion("Print me the first 100 powers of two, each on a newline.").response)
        """
    )
    printed = capsys.readouterr().out
    expected = "\n".join(str(2**i) for i in range(100))
    assert expected in printed
    assert fake.requests_for("gpt-5-nano")


def test_quickstart_with_logger(fake, monkeypatch, tmp_path):
    monkeypatch.setenv("GEMINI_BASE_URL", fake.url)
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-example-key")
    fake.script("gemini-2.5-flash", "```repl\nprint(context.count('r'))\n```", "FINAL(3)")
    namespace = run_example(
        """
        import os

        from rlm_rs import RLM
        from rlm_rs.logger import RLMLogger

        logger = RLMLogger(log_dir="./logs")

        rlm = RLM(
            backend="gemini",  # or "portkey", etc.
            backend_kwargs={
                "model_name": "gemini-2.5-flash",
                "api_key": os.getenv("GEMINI_API_KEY"),
            },
            environment="local",
            environment_kwargs={},
            max_depth=1,
            logger=logger,
            verbose=True,  # For printing to console with rich, disabled by default.
        )

        result = rlm.completion("How many r's are there in 'strawberry'")

        print(result)
        """
    )
    result = namespace["result"]
    assert result.response == "3"
    # The code counted the r's of the prompt, which is the context: are, there, r's, strawberry.
    assert "```\n6\n```" in fake.requests_for("gemini-2.5-flash")[1]["messages"][-1]["content"]
    assert os.path.dirname(result.log_path) == str(tmp_path / "logs")
    assert fake.requests_for("gemini-2.5-flash")[0]["_authorization"] == "Bearer gemini-example-key"


def test_other_environment_names_still_run_in_the_sandbox(fake, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-Zr8uT2mW")
    fake.script("gpt-5-nano", "```repl\nimport os\nprint(sorted(os.environ))\n```", "FINAL(ok)")
    with pytest.warns(UserWarning, match="rlm's own sandbox"):
        namespace = run_example(
            """
            from rlm_rs import RLM

            rlm = RLM(
                backend="openai",
                backend_kwargs={"model_name": "gpt-5-nano"},
                environment="docker",
            )
            result = rlm.completion("What is in the environment?")
            """
        )
    assert namespace["result"].response == "ok"
    # The sandbox's empty environment: nothing of the test process's variables.
    assert "OPENAI_BASE_URL" not in fake.requests_for("gpt-5-nano")[1]["messages"][-1]["content"]
