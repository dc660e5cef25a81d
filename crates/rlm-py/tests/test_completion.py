"""RLM.completion against the fake provider: the loop, the sandbox started from this
interpreter, persistent sessions, keys, logs, async, Ctrl-C and errors."""

from __future__ import annotations

import _thread
import asyncio
import json
import threading
import time

import pytest

import rlm_rs
from rlm_rs import RLM, RlmError, RlmInputError
from rlm_rs.logger import RLMLogger

from conftest import last_user_message


def fake_rlm(fake, **kwargs) -> RLM:
    return RLM(
        backend="openai",
        backend_kwargs={"model_name": "root", "base_url": fake.url, "api_key": "sk-test-key-0001"},
        **kwargs,
    )


def test_completion_runs_model_code_in_the_sandbox_and_answers(fake, tmp_path):
    fake.script("root", "```repl\nprint(len(context), context[:5])\n```", "FINAL(it is 11 long)")
    logger = RLMLogger(log_dir=tmp_path / "logs")
    result = fake_rlm(fake, logger=logger).completion("hello world")
    assert result.response == "it is 11 long"
    assert result.status == "answered"
    assert result.root_model == "openai:root"
    assert result.prompt == "hello world"
    assert result.iterations == 2
    # The code ran: its output came back to the model in the second request.
    second = last_user_message(fake.requests_for("root")[1])
    assert "11 hello" in second, second
    usage = result.usage_summary.model_usage_summaries["openai:root"]
    assert usage.total_calls == 2
    assert usage.total_input_tokens == 200
    assert result.usage_summary.total_tokens > 200
    assert result.execution_time > 0
    # The trajectory is in the logger's directory and names the run.
    assert result.log_path is not None and result.log_path.startswith(logger.log_dir)
    assert logger.log_files() == [result.log_path]
    lines = open(result.log_path, encoding="utf-8").read().splitlines()
    assert result.run_id in lines[0]
    assert "sk-test-key-0001" not in "\n".join(lines)
    # The key reached the provider as the Authorization header, nowhere else.
    assert fake.requests_for("root")[0]["_authorization"] == "Bearer sk-test-key-0001"


def test_structured_prompt_is_json_in_context_and_root_prompt_is_the_question(fake):
    fake.script("root", "```repl\nimport json\nprint(json.loads(context)['n'] * 2)\n```", "FINAL(84)")
    result = fake_rlm(fake).completion({"n": 42}, root_prompt="Double n.")
    assert result.response == "84"
    first = fake.requests_for("root")[0]
    assert "Double n." in json.dumps(first["messages"])
    assert "84" in last_user_message(fake.requests_for("root")[1])


def test_persistent_sessions_keep_variables_and_fresh_ones_do_not(fake):
    rlm = fake_rlm(fake, persistent=True)
    fake.script("root", "```repl\nkept = 41\n```", "FINAL(stored)")
    assert rlm.completion("remember 41").response == "stored"
    fake.script("root", "```repl\nprint(kept + 1)\n```", "FINAL(done)")
    assert rlm.completion("what was kept, plus one?").response == "done"
    assert "42" in last_user_message(fake.requests_for("root")[-1])

    fresh = fake_rlm(fake)
    fake.script("root", "```repl\nkept = 41\n```", "FINAL(stored)")
    fresh.completion("remember 41")
    fake.script("root", "```repl\nprint(kept + 1)\n```", "FINAL(done)")
    fresh.completion("what was kept, plus one?")
    assert "NameError" in last_user_message(fake.requests_for("root")[-1])


def test_keys_and_urls_come_from_the_environment_as_for_the_cli(fake, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-4fQ29xLwPa")
    fake.script("root", "FINAL(yes)")
    result = RLM(backend="openai", backend_kwargs={"model_name": "root"}).completion("ok?")
    assert result.response == "yes"
    assert fake.requests_for("root")[0]["_authorization"] == "Bearer sk-env-4fQ29xLwPa"


def test_other_backends_are_the_sub_call_model(fake):
    fake.script(
        "root",
        "```repl\nprint(llm_query('say pong'))\n```",
        "FINAL(done)",
    )
    fake.script("sub", "pong from sub")
    rlm = fake_rlm(
        fake,
        other_backends=["openai"],
        other_backend_kwargs=[{"model_name": "sub"}],
    )
    assert rlm.completion("ping").response == "done"
    assert len(fake.requests_for("sub")) == 1
    assert "pong from sub" in last_user_message(fake.requests_for("root")[-1])


def test_a_budget_ends_the_run_with_the_references_exception(fake):
    fake.responder = lambda request: {"text": "```repl\nx = 1\n```"}
    with pytest.raises(rlm_rs.TokenLimitExceededError) as raised:
        fake_rlm(fake, max_tokens=150).completion("never ends")
    assert raised.value.completion.status == "token_budget"
    assert len(fake.requests_for("root")) < 5


def test_acompletion_runs_beside_the_event_loop(fake):
    fake.script("root", "FINAL(async answer)")

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        result = await fake_rlm(fake).acompletion("hi")
        task.cancel()
        return result, ticks

    result, ticks = asyncio.run(main())
    assert result.response == "async answer"
    assert ticks >= 1


def test_ctrl_c_stops_the_run_closes_its_log_and_raises_keyboard_interrupt(fake, tmp_path):
    fake.script_reply("root", {"text": "FINAL(too late)", "delay": 30})
    logger = RLMLogger(log_dir=tmp_path / "logs")
    timer = threading.Timer(1.0, _thread.interrupt_main)
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        fake_rlm(fake, logger=logger).completion("wait")
    assert time.monotonic() - started < 15
    [log] = logger.log_files()
    last = json.loads(open(log, encoding="utf-8").read().splitlines()[-1])
    assert last.get("status") == "interrupted" or "interrupted" in json.dumps(last), last


def test_bad_settings_are_input_errors_with_the_cli_text(fake):
    with pytest.raises(RlmInputError, match="unknown backend 'gpt'"):
        RLM(backend="gpt", backend_kwargs={"model_name": "x"})
    with pytest.raises(RlmInputError, match="model_name"):
        RLM(backend="openai", backend_kwargs={})
    with pytest.raises(RlmInputError) as raised:
        fake_rlm(fake, max_depth=9).completion("x")
    assert "max-depth" in str(raised.value) and raised.value.exit_code == 2
    with pytest.raises(RlmInputError, match="max-tokens"):
        fake_rlm(fake, max_tokens=-1).completion("x")
    assert isinstance(raised.value, ValueError)


def test_a_provider_error_is_an_rlm_error_and_never_shows_the_key(fake):
    fake.responder = lambda request: {"status": 401, "error": "bad key sk-test-key-0001 given"}
    with pytest.raises(RlmError) as raised:
        fake_rlm(fake).completion("x")
    text = str(raised.value)
    assert "401" in text, text
    assert "sk-test-key-0001" not in text


def test_the_package_is_typed_and_versioned():
    import os

    package = os.path.dirname(rlm_rs.__file__)
    assert os.path.exists(os.path.join(package, "py.typed"))
    assert os.path.exists(os.path.join(package, "_native.pyi"))
    assert rlm_rs.__version__.count(".") == 2
