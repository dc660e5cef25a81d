"""Custom tools (``RLM(custom_tools=...)``) through the fake provider: callables run in this
process on the calling thread, values copied into the REPL, descriptions in the system prompt,
exceptions raised in model code, time limits, Ctrl-C, the trajectory, sub-tools."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest

from rlm_rs import RLM, CancellationError, RlmInputError
from rlm_rs.environments import RESERVED_TOOL_NAMES, format_tools_for_prompt
from rlm_rs.logger import RLMLogger

from conftest import last_user_message


def fake_rlm(fake, **kwargs) -> RLM:
    return RLM(
        backend="openai",
        backend_kwargs={"model_name": "root", "base_url": fake.url, "api_key": "sk-test-key-0001"},
        **kwargs,
    )


def output_of(fake, turn: int = 1, model: str = "root") -> str:
    return last_user_message(fake.requests_for(model)[turn])


def system_prompt(fake, model: str = "root") -> str:
    return fake.requests_for(model)[0]["messages"][0]["content"]


def test_callables_and_values_reach_model_code_with_plain_data(fake):
    seen_threads = []

    def fetch_stock_price(symbol: str, currency: str = "USD") -> dict:
        seen_threads.append(threading.get_ident())
        return {"symbol": symbol.upper(), "price": 178.5, "currency": currency, "tags": ("a", "b")}

    def total(*amounts, **fees):
        return sum(amounts) + sum(fees.values())

    fake.script(
        "root",
        "```repl\n"
        "p = fetch_stock_price('aapl')\n"
        "q = fetch_stock_price(symbol='msft', currency='EUR')\n"
        "print(p['symbol'], p['price'], p['tags'], q['currency'])\n"
        "print(total(1, 2, 3, tax=4), MARKET['exchange'], LIMIT + 1, NAMES[1])\n"
        "```",
        "FINAL(done)",
    )
    result = fake_rlm(
        fake,
        custom_tools={
            "fetch_stock_price": {
                "tool": fetch_stock_price,
                "description": "Fetch current stock price data for a symbol",
            },
            "total": total,
            "MARKET": {"tool": {"exchange": "NYSE"}, "description": "Market configuration"},
            "LIMIT": 41,
            "NAMES": ("x", "y"),
        },
    ).completion("prices?")
    assert result.response == "done"
    output = output_of(fake)
    assert "AAPL 178.5 ['a', 'b'] EUR" in output, output
    assert "10 NYSE 42 y" in output, output
    # Called here, on the thread that called completion.
    assert seen_threads == [threading.get_ident()] * 2
    system = system_prompt(fake)
    assert "`fetch_stock_price(symbol, currency='USD')`: Fetch current stock price data" in system
    assert "`total(*amounts, **fees)`" in system
    assert "`MARKET` (a variable): Market configuration" in system
    assert "`LIMIT` (a variable): a int the user provides" in system


def test_a_tools_exception_is_an_exception_in_model_code_with_its_message(fake):
    def failing_tool():
        raise ValueError("Tool failed!")

    def lookup(key):
        return {"a": 1}[key]

    class Custom(Exception):
        pass

    def custom():
        raise Custom("own kind")

    fake.script(
        "root",
        "```repl\n"
        "try:\n    failing_tool()\nexcept ValueError as e:\n    print('caught', e)\n"
        "try:\n    lookup('b')\nexcept KeyError as e:\n    print('key', e)\n"
        "try:\n    custom()\nexcept Exception as e:\n    print('custom', e)\n"
        "failing_tool()\n"
        "```",
        "FINAL(done)",
    )
    fake_rlm(fake, custom_tools={"failing_tool": failing_tool, "lookup": lookup, "custom": custom}).completion(
        "x"
    )
    output = output_of(fake)
    assert "caught Tool failed!" in output, output
    assert "key 'b'" in output, output
    assert "custom Custom: own kind" in output, output
    # Uncaught, it is the block's error, as the reference shows it.
    assert "ValueError" in output and "Tool failed!" in output.split("[error]")[-1], output


def test_tool_calls_are_recorded_in_the_trajectory(fake, tmp_path):
    fake.script("root", "```repl\nprint(double(21))\n```", "FINAL(42)")
    logger = RLMLogger(log_dir=tmp_path / "logs")
    result = fake_rlm(fake, custom_tools={"double": lambda x: x * 2}, logger=logger).completion("x")
    [block] = result.metadata["iterations"][0]["code_blocks"]
    [call] = block["result"]["host_calls"]
    assert call["name"] == "double"
    assert json.loads(call["arguments"]) == {"x": 21}
    assert call["result"] == "42"
    assert call["error"] is None


def test_reserved_names_are_refused_with_the_references_error():
    for name in sorted(RESERVED_TOOL_NAMES):
        with pytest.raises(ValueError) as raised:
            RLM(backend="openai", backend_kwargs={"model_name": "m"}, custom_tools={name: lambda: 1})
        assert name in str(raised.value)
        assert "reserved" in str(raised.value).lower()
    with pytest.raises(ValueError) as raised:
        RLM(
            backend="openai",
            backend_kwargs={"model_name": "m"},
            custom_tools={"llm_query": 1, "FINAL_VAR": 2, "fine": 3},
        )
    assert "llm_query" in str(raised.value) and "FINAL_VAR" in str(raised.value)


def test_a_value_that_is_neither_callable_nor_plain_data_is_an_input_error_naming_it():
    with pytest.raises(RlmInputError, match="'handles'") as raised:
        RLM(
            backend="openai",
            backend_kwargs={"model_name": "m"},
            custom_tools={"handles": {"s": {1, 2}}},
        )
    assert "set" in str(raised.value)
    with pytest.raises(RlmInputError, match="not a Python identifier"):
        RLM(backend="openai", backend_kwargs={"model_name": "m"}, custom_tools={"no way": 1})


def test_a_result_that_is_not_plain_data_is_a_type_error_in_model_code(fake):
    fake.script(
        "root",
        "```repl\ntry:\n    make()\nexcept TypeError as e:\n    print('refused:', e)\n```",
        "FINAL(refused)",
    )
    fake_rlm(fake, custom_tools={"make": lambda: object()}).completion("x")
    assert "refused: the result of make() is a object" in output_of(fake)


def test_a_tool_that_hangs_is_stopped_at_its_limit_and_code_sees_timeout_error(fake):
    stopped = []

    def hangs():
        try:
            while True:
                time.sleep(0.01)
        finally:
            stopped.append(True)

    fake.script(
        "root",
        "```repl\ntry:\n    hangs()\nexcept TimeoutError as e:\n    print('timed out:', e)\n"
        "print(quick())\n```",
        "FINAL(done)",
    )
    started = time.monotonic()
    result = fake_rlm(fake, custom_tools={"hangs": hangs, "quick": lambda: "still here"}, tool_timeout=0.5).completion(
        "x"
    )
    assert time.monotonic() - started < 10
    assert result.response == "done"
    output = output_of(fake)
    assert "timed out: hangs() took longer than its time limit of 0.5 s" in output, output
    assert "still here" in output, output
    # The callable itself was stopped, not left running.
    assert stopped == [True]


def test_ctrl_c_inside_a_tool_stops_the_run_with_cancellation_error(fake):
    def slow():
        # A real SIGINT, as Ctrl-C sends: it interrupts the sleep.
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        time.sleep(5)
        return "never"

    fake.script("root", "```repl\nprint(slow())\n```", "FINAL(too late)")
    started = time.monotonic()
    with pytest.raises(CancellationError) as raised:
        fake_rlm(fake, custom_tools={"slow": slow}).completion("x")
    assert time.monotonic() - started < 4
    # It is a KeyboardInterrupt too, for code that catches that.
    assert isinstance(raised.value, KeyboardInterrupt)
    # The turn after it may have been asked before the stop reached the loop, not more.
    assert len(fake.requests_for("root")) <= 2


def test_sub_tools_default_to_the_tools_and_can_differ_or_be_none(fake):
    # depth 2: rlm_query starts a child run, whose system prompt lists the tools it has.
    def run(**tools):
        fake.requests.clear()
        fake.script("root", "```repl\nprint('child said', rlm_query('use your tool'))\n```", "FINAL(done)")
        fake.script("sub", "```repl\nprint(sub_tool() if 'sub_tool' in SHOW_VARS() else 'no')\n```", "FINAL(child answer)")
        return fake_rlm(
            fake,
            max_depth=2,
            other_backends=["openai"],
            other_backend_kwargs=[{"model_name": "sub"}],
            **tools,
        ).completion("x")

    main = {"main_tool": lambda: "main"}
    assert run(custom_tools=main).response == "done"
    assert "`main_tool()`" in system_prompt(fake, "sub")
    assert "child said child answer" in output_of(fake)
    run(custom_tools=main, custom_sub_tools={"sub_tool": lambda: "sub"})
    child_system = system_prompt(fake, "sub")
    assert "`sub_tool()`" in child_system and "main_tool" not in child_system
    assert "`main_tool()`" in system_prompt(fake, "root")
    run(custom_tools=main, custom_sub_tools={})
    assert "Tools the user gave you" not in system_prompt(fake, "sub")
    assert "`main_tool()`" in system_prompt(fake, "root")


def test_the_reference_helpers_format_and_validate_as_it_does():
    listed = format_tools_for_prompt(
        {
            "f": {"tool": lambda x: x, "description": "Does something useful"},
            "g": lambda x: x,
            "data": ["a", "b"],
        }
    )
    assert "`f`: Does something useful" in listed
    assert "custom function" in listed.lower()
    assert "list" in listed
    assert format_tools_for_prompt({}) is None
    assert isinstance(RESERVED_TOOL_NAMES, frozenset)
