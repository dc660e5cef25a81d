"""The scenarios of the reference implementation's test suite that concern its ``RLM`` class —
multi-turn persistence, depth>1 ``rlm_query``, budgets and their exceptions, callbacks,
results and the logger — written against ``rlm_rs`` through the fake provider (the
reference's own tests patch its client; these speak the wire)."""

from __future__ import annotations

import _thread
import json
import os
import threading
import time
import warnings

import pytest

from rlm_rs import RLM
from rlm_rs.core.types import ModelUsageSummary, RLMChatCompletion, UsageSummary
from rlm_rs.logger import RLMLogger
from rlm_rs.utils.exceptions import (
    BudgetExceededError,
    CancellationError,
    ErrorThresholdExceededError,
    TimeoutExceededError,
    TokenLimitExceededError,
)

from conftest import last_user_message


def fake_rlm(fake, **kwargs) -> RLM:
    return RLM(
        backend="openai",
        backend_kwargs={"model_name": "root", "base_url": fake.url, "api_key": "sk-test-key-0001"},
        **kwargs,
    )


def output_of(fake, turn: int, model: str = "root") -> str:
    return last_user_message(fake.requests_for(model)[turn])


# --- multi-turn persistence (tests/test_multi_turn_integration.py) -------------------------


def test_contexts_accumulate_and_variables_persist_across_completions(fake):
    with fake_rlm(fake, persistent=True) as rlm:
        fake.script(
            "root",
            "Looking at the first document\n```repl\ndoc1_summary = 'Has info about cats'\nprint(doc1_summary)\n```",
            "FINAL(Summarized first doc)",
        )
        assert "Summarized" in rlm.completion("First document about cats").response
        fake.script(
            "root",
            "```repl\ndoc2_summary = 'Has info about dogs'\nprint(f'Doc1: {doc1_summary}, Doc2: {doc2_summary}')\n"
            "print(context_0, '|', context_1, '|', context)\n```",
            "FINAL(Compared both docs)",
        )
        assert "Compared" in rlm.completion("Second document about dogs").response
        fake.script(
            "root",
            "```repl\nprint(len(history), history[0]['role'], history == history_0)\n"
            "print(type(history_1).__name__, context_2)\n```",
            "FINAL(synthesized all)",
        )
        assert "synthesized" in rlm.completion("Synthesize everything").response
    second = output_of(fake, 3)
    assert "Doc1: Has info about cats, Doc2: Has info about dogs" in second, second
    # context_0, context_1, …; `context` is context_0, as in the reference.
    assert "First document about cats | Second document about dogs | First document about cats" in second
    third = output_of(fake, 5)
    assert "user True" in third and "list Synthesize everything" in third, third


def test_a_fresh_rlm_and_a_closed_one_keep_nothing(fake):
    rlm = fake_rlm(fake, persistent=True)
    fake.script("root", "```repl\nkept = 1\n```", "FINAL(a)")
    rlm.completion("first")
    rlm.close()
    fake.script("root", "```repl\nprint(kept)\n```", "FINAL(b)")
    rlm.completion("second")
    assert "NameError" in output_of(fake, 3)
    assert RLM(backend="openai", backend_kwargs={"model_name": "m"}).persistent is False


# --- depth > 1 (tests/test_subcall.py, test_rlm_query.py, test_e2e_depth.py) ----------------


def test_rlm_query_at_depth_two_starts_a_child_run_with_its_own_repl(fake):
    fake.script(
        "root",
        "```repl\nanswers = rlm_query_batched(['q1', 'q2'])\nprint(answers)\nprint(rlm_query('q3'))\n```",
        "FINAL(parent done)",
    )
    fake.responder = lambda request: (
        {"text": "```repl\nx = len(context)\nprint(x)\n```"}
        if len(request["messages"]) <= 2
        else {"text": "FINAL(child saw " + last_user_message(request).split("```")[1].strip() + ")"}
    )
    starts, ends = [], []
    result = fake_rlm(
        fake,
        max_depth=2,
        other_backends=["openai"],
        other_backend_kwargs=[{"model_name": "child"}],
        on_subcall_start=lambda depth, model, preview: starts.append((depth, model, preview)),
        on_subcall_complete=lambda depth, model, seconds, error: ends.append((depth, model, error)),
    ).completion("parent task")
    assert result.response == "parent done"
    output = output_of(fake, 1)
    assert "['child saw 2', 'child saw 2']" in output, output
    assert "child saw 2" in output.split("]")[-1], output
    # Each child ran its own REPL over its prompt: two turns of the child model each.
    assert len(fake.requests_for("child")) == 6
    assert sorted(starts) == [(1, "openai:child", "q1"), (1, "openai:child", "q2"), (1, "openai:child", "q3")]
    assert sorted(ends) == [(1, "openai:child", None)] * 3
    assert set(result.usage_summary.model_usage_summaries) == {"openai:root", "openai:child"}
    assert result.usage_summary.model_usage_summaries["child"].total_calls == 6


def test_at_max_depth_rlm_query_is_a_plain_call_and_fires_no_subcall_callbacks(fake):
    fake.script("root", "```repl\nprint(rlm_query('hello'))\n```", "leaf reply", "FINAL(done)")
    starts = []
    fake_rlm(fake, on_subcall_start=lambda *a: starts.append(a)).completion("x")
    assert "leaf reply" in output_of(fake, 2)
    assert starts == []


# --- budgets and their exceptions (rlm/utils/exceptions.py, RLM._check_*) ------------------


def test_max_tokens_raises_token_limit_exceeded_with_usage_and_partial_answer(fake):
    fake.responder = lambda request: {
        "text": "```repl\nanswer['content'] = 'half done'\nx = 1\n```"
    }
    with pytest.raises(TokenLimitExceededError) as raised:
        fake_rlm(fake, max_tokens=250).completion("never ends")
    error = raised.value
    assert error.token_limit == 250
    assert error.tokens_used > 250
    assert error.partial_answer == "half done"
    assert error.usage_summary.model_usage_summaries["openai:root"].total_calls >= 2
    assert isinstance(error.completion, RLMChatCompletion)
    assert "Token limit exceeded" in str(error)


def test_max_budget_raises_budget_exceeded_with_spent_and_budget(fake, tmp_path):
    # $10 per million tokens: a call here costs about $0.001 (100 tokens in), and rlm asks
    # the budget for its worst case (the whole prompt, 50 tokens out) before sending it.
    (tmp_path / "rlm.toml").write_text(
        '[llm.prices."root"]\ninput_per_mtok = 10.0\noutput_per_mtok = 10.0\n'
    )
    fake.responder = lambda request: {"text": "```repl\nx = 1\n```"}
    with pytest.raises(BudgetExceededError) as raised:
        fake_rlm(fake, max_budget=0.04, max_output_tokens=50).completion("spend")
    error = raised.value
    assert error.budget == 0.04
    assert 0.003 < error.spent <= 0.04
    assert error.usage_summary.total_cost == pytest.approx(error.spent)
    assert "Budget exceeded" in str(error)
    # Our name is an alias; giving both differently is an error.
    with pytest.raises(ValueError, match="same limit"):
        fake_rlm(fake, max_budget=1.0, max_cost=2.0)


def test_max_timeout_raises_timeout_exceeded(fake):
    fake.responder = lambda request: {"text": "```repl\nx = 1\n```", "delay": 0.4}
    started = time.monotonic()
    with pytest.raises(TimeoutExceededError) as raised:
        fake_rlm(fake, max_timeout=1.0).completion("slow")
    assert time.monotonic() - started < 10
    assert raised.value.timeout == 1.0
    assert raised.value.elapsed >= 1.0
    with pytest.raises(TimeoutExceededError):
        fake_rlm(fake, timeout=0.5).completion("slow, by rlm's name")


def test_max_errors_raises_error_threshold_exceeded_with_the_last_error(fake):
    fake.responder = lambda request: {"text": "```repl\n1 / 0\n```"}
    with pytest.raises(ErrorThresholdExceededError) as raised:
        fake_rlm(fake, max_errors=2).completion("fails")
    error = raised.value
    assert error.threshold == 2 and error.error_count == 2
    assert "ZeroDivisionError" in error.last_error
    assert len(fake.requests_for("root")) == 2


def test_ctrl_c_raises_cancellation_error_with_what_the_run_had(fake, tmp_path):
    fake.script("root", "```repl\nx = 1\n```")
    fake.script_reply("root", {"text": "FINAL(too late)", "delay": 30})
    threading.Timer(1.5, _thread.interrupt_main).start()
    with pytest.raises(CancellationError) as raised:
        fake_rlm(fake, logger=RLMLogger(tmp_path / "logs")).completion("wait")
    assert raised.value.partial_answer == "```repl\nx = 1\n```"
    assert raised.value.usage_summary.model_usage_summaries["openai:root"].total_calls >= 1


# --- callbacks (RLM(on_iteration_start=…, on_subcall_start=…)) -----------------------------


def test_iteration_callbacks_are_called_in_order_on_the_calling_thread(fake):
    calls = []
    caller = threading.get_ident()

    def record(name):
        def callback(*arguments):
            calls.append((name, arguments[:2], threading.get_ident() == caller))
            if name == "complete":
                assert isinstance(arguments[2], float) and arguments[2] >= 0

        return callback

    fake.script("root", "```repl\nx = 1\n```", "```repl\ny = 2\n```", "FINAL(done)")
    fake_rlm(
        fake,
        on_iteration_start=record("start"),
        on_iteration_complete=record("complete"),
    ).completion("x")
    assert calls == [
        ("start", (0, 1), True),
        ("complete", (0, 1), True),
        ("start", (0, 2), True),
        ("complete", (0, 2), True),
        ("start", (0, 3), True),
        ("complete", (0, 3), True),
    ]


def test_a_callbacks_exception_is_a_warning_and_the_run_goes_on(fake):
    def broken(depth, iteration):
        raise RuntimeError("display crashed")

    fake.script("root", "```repl\nx = 1\n```", "FINAL(still answered)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fake_rlm(fake, on_iteration_start=broken).completion("x")
    assert result.response == "still answered"
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert any("on_iteration_start raised RuntimeError: display crashed" in m for m in messages)


# --- results and the logger (rlm/core/types.py, rlm/logger) --------------------------------


def test_the_completion_has_the_references_shape_and_metadata_with_a_logger(fake, tmp_path):
    fake.script("root", "```repl\nprint(21 * 2)\n```", "FINAL(42)")
    logger = RLMLogger(log_dir=str(tmp_path / "logs"), file_name="experiment")
    result = fake_rlm(fake, logger=logger).completion("compute")
    assert (result.root_model, result.prompt, result.response) == ("openai:root", "compute", "42")
    assert result.error is None and result.execution_time > 0
    usage = result.usage_summary.model_usage_summaries["root"]
    assert isinstance(usage, ModelUsageSummary)
    assert (usage.total_calls, usage.total_input_tokens) == (2, 200)
    assert usage.total_cost is None  # no price known for the fake model
    iterations = result.metadata["iterations"]
    assert [len(i["code_blocks"]) for i in iterations] == [1, 0]
    assert iterations[0]["code_blocks"][0]["result"]["stdout"].strip() == "42"
    assert result.metadata["run_metadata"]["root_model"] == "openai:root"
    assert os.path.basename(result.log_path).startswith("experiment_")
    assert logger.log_file_path == result.log_path
    assert logger.get_trajectory() == result.metadata
    round_trip = RLMChatCompletion.from_dict(json.loads(json.dumps(result.to_dict())))
    assert round_trip.usage_summary.to_dict() == result.usage_summary.to_dict()
    assert UsageSummary.from_dict(result.usage_summary.to_dict()).model_usage_summaries[
        "openai:root"
    ].total_calls == 2


def test_a_logger_without_a_directory_keeps_the_trajectory_in_memory_only(fake, tmp_path):
    fake.script("root", "FINAL(yes)")
    logger = RLMLogger()
    result = fake_rlm(fake, logger=logger).completion("x")
    assert result.metadata["result"]["status"] == "answered"
    assert not os.path.exists(result.log_path)
    assert logger.log_file_path is None
    # Without a logger there is no metadata, as in the reference.
    fake.script("root", "FINAL(yes)")
    assert fake_rlm(fake).completion("x").metadata is None


# --- arguments ----------------------------------------------------------------------------


def test_unknown_keyword_arguments_name_the_closest_valid_one():
    with pytest.raises(TypeError, match="'max_budjet'; did you mean 'max_budget'"):
        RLM(backend="openai", backend_kwargs={"model_name": "m"}, max_budjet=1.0)
    with pytest.raises(TypeError, match="'on_iteration_begin'; did you mean 'on_iteration_start'"):
        RLM(backend="openai", backend_kwargs={"model_name": "m"}, on_iteration_begin=print)


def test_custom_system_prompt_replaces_ours_and_the_sandbox_is_still_described(fake):
    fake.script("root", "```repl\nprint(helper(2))\n```", "FINAL(ok)")
    fake_rlm(
        fake,
        custom_system_prompt="You are a careful auditor. Answer in French.",
        tool_prompts=["## Extra\nhelper(n) doubles n."],
        tool_code="def helper(n):\n    return n * 2\n",
    ).completion("x")
    system = fake.requests_for("root")[0]["messages"][0]["content"]
    assert system.startswith("You are a careful auditor. Answer in French.")
    for offered in ("llm_query(prompt)", "FINAL_VAR", "rlm_query", "Limits of this Python"):
        assert offered in system, offered
    assert "Strategies that work" not in system
    assert system.rstrip().endswith("helper(n) doubles n.")
    assert "4" in output_of(fake, 1)


def test_other_backends_with_one_entry_is_the_sub_call_model(fake):
    fake.script("root", "```repl\nprint(llm_query('ping'))\n```", "FINAL(done)")
    fake.script("sub", "pong")
    rlm = fake_rlm(fake, other_backends=["openai"], other_backend_kwargs=[{"model_name": "sub"}])
    assert rlm.completion("x").response == "done"
    assert "pong" in output_of(fake, 1)


def test_sampling_args_cap_the_root_and_sub_sampling_args_the_sub_calls(fake):
    fake.script("root", "```repl\nprint(llm_query('ping'))\n```", "FINAL(done)")
    fake.script("sub", "pong")
    fake_rlm(
        fake,
        other_backends=["openai"],
        other_backend_kwargs=[{"model_name": "sub"}],
        sampling_args={"max_tokens": 123, "temperature": 0.25},
        sub_sampling_args={"max_tokens": 45, "temperature": 0.5},
    ).completion("x")
    root, sub = fake.requests_for("root")[0], fake.requests_for("sub")[0]
    assert (root["max_tokens"], root["temperature"]) == (123, 0.25)
    assert (sub["max_tokens"], sub["temperature"]) == (45, 0.5)
    with pytest.raises(ValueError, match="top_p"):
        fake_rlm(fake, sampling_args={"top_p": 0.9})


# --- compaction (RLM(compaction=True, compaction_threshold_pct=...)) ----------------------


def test_compaction_summarizes_near_the_window_and_keeps_the_turns_in_history(fake, tmp_path):
    # A 4,000-token window for the fake model, compacted at 60%: the first message is about
    # 1,800 tokens, so the conversation crosses the threshold after a couple of turns.
    (tmp_path / "rlm.toml").write_text('[run.context_windows]\n"openai:root" = 4000\n')
    filler = "x" * 2500

    def model(request):
        last = last_user_message(request)
        if "Summarize your progress" in last:
            return {"text": "Summary: step one and two done; total = 3."}
        if "was compacted" in last:
            return {"text": "```repl\nprint(len(history), history[-1]['role'], history[-1]['content'][:8])\n```"}
        if "Output of block" in last and "summary" in last:
            return {"text": "FINAL(compacted and done)"}
        return {"text": f"```repl\nstep = '{filler}'\nprint(len(step))\n```"}

    fake.responder = model
    logger = RLMLogger(tmp_path / "logs")
    result = fake_rlm(fake, compaction=True, compaction_threshold_pct=0.6, logger=logger).completion(
        "Do the long task."
    )
    assert result.response == "compacted and done"
    requests = fake.requests_for("root")
    summary_requests = [r for r in requests if "Summarize your progress" in last_user_message(r)]
    assert len(summary_requests) >= 1
    # After compaction the conversation is the first message, the summary and the note.
    after = next(r for r in requests if "was compacted" in last_user_message(r))
    roles = [m["role"] for m in after["messages"]]
    assert roles == ["system", "user", "assistant", "user"], roles
    assert after["messages"][2]["content"].startswith("Summary:")
    # Model code read the replaced turns and the summary in `history`.
    shown = [last_user_message(r) for r in requests if "Output of block" in last_user_message(r)]
    assert any("summary Summary:" in text for text in shown), shown
    notes = [n for i in result.metadata["iterations"] for n in i.get("notes") or []]
    assert any("compacted" in note for note in notes), notes
