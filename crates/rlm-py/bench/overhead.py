"""Benchmark of the Python package (prints figures; asserts nothing about time).

- import time of ``rlm_rs`` (a fresh interpreter each time, minus a bare interpreter's start);
- per-call overhead of ``RLM.completion`` against running the ``rlm`` CLI for the same run, both
  answered at once by a local fake provider (so the figures are rlm's own cost);
- sandbox start: a completion whose model runs one code block, minus one that answers at once;
  beside it the reference implementation's ``local`` REPL (``rlms`` from PyPI) and ``docker``
  environment, where they can be installed or reached.

Run: ``scripts/bench-python`` (builds the release wheel into a venv under target/).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, List

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from conftest import FakeProvider  # noqa: E402  (the tests' fake provider)

RUNS = int(os.environ.get("RLM_BENCH_RUNS", "15"))


def median_ms(work: Callable[[], None], runs: int = RUNS) -> float:
    times: List[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def interpreter(code: str) -> Callable[[], None]:
    return lambda: subprocess.run([sys.executable, "-c", code], check=True)


def main() -> None:
    rlm_binary = os.environ.get("RLM_BIN")
    bare = median_ms(interpreter("pass"))
    with_import = median_ms(interpreter("import rlm_rs"))
    with_rlm = median_ms(interpreter("from rlm_rs import RLM"))
    print(f"python start                 {bare:8.1f} ms")
    print(f"python start + import rlm_rs {with_import:8.1f} ms  (import: {with_import - bare:.1f} ms)")
    print(f"python start + from rlm_rs import RLM {with_rlm:6.1f} ms  (import: {with_rlm - bare:.1f} ms)")

    fake = FakeProvider()
    fake.responder = lambda request: {"text": "FINAL(done)"}
    scratch = tempfile.mkdtemp(prefix="rlm-bench-")
    os.environ.update(
        {
            "OPENAI_BASE_URL": fake.url,
            "OPENAI_API_KEY": "sk-bench",
            "XDG_STATE_HOME": scratch,
            "XDG_CONFIG_HOME": scratch,
        }
    )
    import rlm_rs

    rlm = rlm_rs.RLM(backend="openai", backend_kwargs={"model_name": "bench"})
    flags = ["--no-log"]
    rlm.extra_flags = flags
    rlm.completion("warm up")
    answer_only = median_ms(lambda: rlm.completion("hello"))
    print(f"completion, answered at once {answer_only:8.1f} ms  (in process)")
    if rlm_binary:
        cli = median_ms(
            lambda: subprocess.run(
                [rlm_binary, "--json", "run", "--model", "openai:bench", "--no-log"]
                + ["--context", "hello", "hello"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        )
        print(f"rlm run (CLI), same run       {cli:8.1f} ms  (ratio {answer_only / cli:.2f})")

    def one_block(request: dict) -> dict:
        turns = len(request["messages"])
        return {"text": "```repl\nprint(1)\n```" if turns <= 2 else "FINAL(done)"}

    fake.responder = one_block
    with_code = median_ms(lambda: rlm.completion("hello"))
    print(
        f"completion with one code block {with_code:6.1f} ms  "
        f"(sandbox start + one block: {with_code - answer_only:.1f} ms)"
    )
    fake.close()
    sandbox_repl()
    reference_local()
    reference_docker()


def sandbox_repl() -> None:
    """rlm's sandbox as DSPy's interpreter (``rlm_rs.dspy.Interpreter``): start + one block."""
    from rlm_rs.dspy import Interpreter

    def start() -> None:
        with Interpreter() as repl:
            repl.execute("print(1)")

    print(f"rlm_rs.dspy.Interpreter start + one block {median_ms(start):.1f} ms")


def reference_local() -> None:
    """The reference's LocalREPL (``exec`` in this process), when ``rlms`` is installed."""
    try:
        from rlm.environments.local_repl import LocalREPL  # type: ignore
    except Exception as err:  # not installed, or its API moved
        print(f"reference local REPL         not measured ({type(err).__name__}: {err})")
        return

    def start() -> None:
        # `exec` in this process: no separate process, no confinement (rlm's worker has both).
        repl = LocalREPL(context_payload="hello")
        repl.execute_code("print(1)")
        cleanup = getattr(repl, "cleanup", None)
        if cleanup:
            cleanup()

    print(f"reference local REPL start + one block {median_ms(start):.1f} ms")


def reference_docker() -> None:
    """The reference's docker environment needs a daemon and an image from a registry."""
    try:
        info = subprocess.run(
            ["docker", "info", "--format", "{{json .ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        print(f"reference docker REPL        not measured (no docker: {err})")
        return
    if info.returncode != 0:
        reason = (info.stderr.strip().splitlines() or ["no daemon"])[-1]
        print(f"reference docker REPL        not measured ({reason})")
        return
    print(
        "reference docker REPL        not measured (docker "
        f"{json.loads(info.stdout)} is up, but its python image cannot be pulled offline)"
    )


if __name__ == "__main__":
    main()
