"""``dspy.RLM(..., interpreter_factory=rlm_rs.dspy.Interpreter)`` against the real ``dspy``
package with a scripted LM (``dspy.utils.DummyLM``), offline: DSPy's loop, rlm's sandbox."""

from __future__ import annotations

import os
import time

import pytest

dspy = pytest.importorskip("dspy") if not os.environ.get("RLM_REQUIRE_DSPY") else __import__("dspy")

from dspy.primitives.code_interpreter import CodeExecutionError, FinalOutput  # noqa: E402
from dspy.utils.dummies import DummyLM  # noqa: E402

from rlm_rs.dspy import Interpreter  # noqa: E402


def test_dspy_rlm_runs_its_code_in_rlms_sandbox_with_its_tools():
    seen = []

    def lookup(word: str) -> int:
        seen.append(word)
        return {"needle": 7}.get(word, 0)

    lm = DummyLM(
        [
            {"reasoning": "Look first.", "code": "```python\nlines = context.splitlines()\nprint(len(lines), lines[1])\n```"},
            {
                "reasoning": "Ask the tool and a sub-model.",
                "code": "```python\nn = lookup('needle')\nprint(n, llm_query('say hi'))\n```",
            },
            {"reasoning": "Done.", "code": "```python\nSUBMIT(answer=str(n * len(lines)))\n```"},
        ]
    )
    # The sub-model `llm_query` asks: its reply is text.
    sub_lm = DummyLM([{"response": "hi"}])
    dspy.configure(lm=lm)
    rlm = dspy.RLM(
        "context, question -> answer",
        max_iters=5,
        tools=[lookup],
        sub_lm=sub_lm,
        interpreter_factory=Interpreter,
    )
    result = rlm(context="a\nthe needle\nc", question="How much?")
    assert result.answer == "21"
    assert seen == ["needle"]
    outputs = [step["output"] for step in result.trajectory]
    assert "3 the needle" in outputs[0], outputs
    assert outputs[1].startswith("7 "), outputs


def test_the_interpreter_keeps_state_binds_variables_and_reports_errors():
    with Interpreter(tools={"double": lambda x: x * 2}, output_fields=[{"name": "answer"}]) as repl:
        assert repl.execute("x = double(21)\nprint(x)") == "42\n"
        assert repl.execute("print(x + y, data['k'][1])", variables={"y": 1, "data": {"k": [0, "v"]}}) == "43 v\n"
        assert repl.execute("z = 1") is None
        with pytest.raises(CodeExecutionError, match="ZeroDivisionError"):
            repl.execute("1 / 0")
        with pytest.raises(SyntaxError):
            repl.execute("def (:")
        assert repl.execute("SUBMIT(answer=x)") == FinalOutput({"answer": 42})
        with pytest.raises(CodeExecutionError, match="SUBMIT needs exactly the fields"):
            repl.execute("SUBMIT(other=1)")


def test_the_sandbox_starts_in_well_under_a_second_and_confines_code():
    started = time.monotonic()
    with Interpreter() as repl:
        assert repl.execute("print(1)") == "1\n"
        assert time.monotonic() - started < 5
        with pytest.raises(CodeExecutionError):
            repl.execute("open('/etc/passwd').read()")
