"""How the package reaches the Rust side: command lines run in this process, their ``--json``
records parsed, their errors raised as Python exceptions carrying the CLI's own text.

Every call here releases the GIL while it works and can be interrupted with Ctrl-C: the
command stops as the CLI does on Ctrl-C (its log closed with ``interrupted``) and the
``KeyboardInterrupt`` is raised.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _native

PathLike = Union[str, "os.PathLike[str]"]

# (name, kind, base URL or "" to keep the configured one, key or None)
ProviderSpec = Tuple[str, str, str, Optional[str]]


class RlmError(Exception):
    """A command failed. ``str(err)`` is the CLI's ``error:``/``hint:`` text; ``exit_code`` is
    the code the CLI would have exited with (1: the task could not be done)."""

    def __init__(self, message: str, exit_code: int = 1, messages: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.messages = list(messages) or [message]
        # The `--json` record of a run that failed, when there is one (its log, its usage).
        self.record: Optional[Dict[str, Any]] = None


class RlmInputError(RlmError, ValueError):
    """Bad input (the CLI's exit code 2): a missing file, a malformed flag value, an unknown
    model or provider, a store that is not one."""


def _failure(code: int, errors: Sequence[str]) -> RlmError:
    text = "\n".join(errors) if errors else f"the command failed (exit code {code})"
    kind = RlmInputError if code == 2 else RlmError
    return kind(text, code, errors)


def _setup_worker() -> None:
    """Makes the sandbox start this interpreter as its worker: isolated (``-I``: no environment
    variables, no user site), without ``site`` (``-S``: no ``.pth`` file runs), importing only
    the extension — as the top-level module ``_native`` from the package's own directory, so
    the package's Python half (and what it imports) is not loaded — and entering its worker
    loop."""
    package_dir = os.path.dirname(os.path.abspath(_native.__file__))
    code = (
        "import sys; sys.path.insert(0, {!r}); "
        "import _native; raise SystemExit(_native.sandbox_worker())"
    ).format(package_dir)
    _native.set_worker(sys.executable, ["-I", "-S", "-c", code])


_setup_worker()


def run(args: Sequence[str], providers: Sequence[ProviderSpec] = ()) -> str:
    """Runs ``rlm ARGS…`` in this process and returns its stdout; raises on a failure."""
    code, stdout, errors = _native.run_command([str(a) for a in args], list(providers))
    if code != 0:
        raise _failure(code, errors)
    return stdout


def run_json(args: Sequence[str], providers: Sequence[ProviderSpec] = ()) -> List[Dict[str, Any]]:
    """Runs ``rlm --json ARGS…`` and returns the records it printed, in order."""
    stdout = run(["--json", *args], providers)
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def run_json_outcome(
    args: Sequence[str], providers: Sequence[ProviderSpec] = ()
) -> Tuple[int, List[Dict[str, Any]], List[str]]:
    """As :func:`run_json`, for commands whose exit code 1 still prints a result worth having
    (a query that found nothing): ``(exit code, records, errors)``; raises on bad input."""
    code, stdout, errors = _native.run_command(["--json", *map(str, args)], list(providers))
    records = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    if code == 2 or (code != 0 and not records):
        raise _failure(code, errors)
    return code, records, list(errors)


@dataclass
class CompletionOutcome:
    record: Dict[str, Any]
    continuation: Any


def completion(
    flags: Sequence[str],
    query: str,
    contexts: Sequence[Tuple[Optional[str], str]],
    continuation: Any = None,
    providers: Sequence[ProviderSpec] = (),
    files: Sequence[str] = (),
) -> CompletionOutcome:
    """One question through the RLM loop (see ``rlm_rs._native.completion``)."""
    code, record, errors, following = _native.completion(
        [str(f) for f in flags], query, list(contexts), continuation, list(providers), list(files)
    )
    if code != 0:
        raise _failure(code, errors)
    return CompletionOutcome(json.loads(record), following)


def path_arg(path: PathLike) -> str:
    return os.fspath(path)
