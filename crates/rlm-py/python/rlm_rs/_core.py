"""How the package reaches the Rust side: each call names an operation of rlm's application
layer and hands it a request as a dict of its fields (the same names the CLI's ``--json``
records and the MCP tools use); the operation's records come back as Python objects, and its
errors are raised as Python exceptions carrying the CLI's own text.

Every call here releases the GIL while it works and can be interrupted with Ctrl-C: the
operation stops as the CLI does on Ctrl-C (its log closed with ``interrupted``) and the
``KeyboardInterrupt`` is raised.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

# `typing` is only for the type checker: importing it costs milliseconds at `import rlm_rs`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _native

if TYPE_CHECKING:  # pragma: no cover
    PathLike = Union[str, "os.PathLike[str]"]
    # (name, kind, base URL or "" to keep the configured one, key or None)
    ProviderSpec = Tuple[str, str, str, Optional[str]]
    # Hears an operation's progress: (kind, fields), e.g. ("iteration_started", {...}).
    EventCallback = Callable[[str, Dict[str, Any]], None]


from ._exceptions import RlmError, RlmInputError
from ._exceptions import failure as _failure


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


@dataclass
class Finished:
    """How an operation ended: its records, notes, the problems it reported and went on
    after, and its exit status (0, 1 or 2)."""

    records: List[Dict[str, Any]]
    notes: List[str]
    problems: List[str]
    status: int
    #: Where the next page starts, when the answer stopped at its reply ceiling.
    next_cursor: Optional[str] = None


def call(
    operation: str,
    request: Dict[str, Any],
    store: Optional[PathLike] = None,
    providers: Sequence[ProviderSpec] = (),
    on_event: Optional[EventCallback] = None,
    allow_failed: bool = False,
    max_reply_bytes: Optional[int] = None,
) -> Finished:
    """Runs ``operation`` with ``request``'s fields; raises on an error (and, unless
    ``allow_failed``, when it ended without doing its task). What reads the store answers
    within ``max_reply_bytes`` of JSON (default 1 MiB)."""
    location = None if store is None else os.fspath(store)
    finished = _native.call(
        operation,
        _plain(request),
        store=location,
        providers=list(providers),
        on_event=on_event,
        max_reply_bytes=max_reply_bytes,
    )
    return _finished(finished, allow_failed)


def _finished(finished: Any, allow_failed: bool) -> Finished:
    if finished.error is not None:
        code, text = finished.error
        error = _failure(code, [*finished.problems, text])
        records = list(finished.records)
        if records:
            error.record = records[0]
        raise error
    if finished.status == 2 or (finished.status != 0 and not allow_failed):
        raise _failure(finished.status, finished.problems)
    return Finished(
        list(finished.records),
        list(finished.notes),
        list(finished.problems),
        finished.status,
        getattr(finished, "next_cursor", None),
    )


def _plain(request: Dict[str, Any]) -> Dict[str, Any]:
    """The request without the fields left at ``None`` (the operation's defaults apply), paths
    as strings."""
    plain: Dict[str, Any] = {}
    for key, value in request.items():
        if value is None:
            continue
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        elif isinstance(value, (list, tuple)):
            value = [os.fspath(item) if isinstance(item, os.PathLike) else item for item in value]
        plain[key] = value
    return plain


@dataclass
class CompletionOutcome:
    """A completion's record (``rlm run --json``'s) and what a persistent session continues
    from (``None`` when the question failed: the session stays as it was)."""

    record: Dict[str, Any]
    continuation: Any


def completion(
    options: Dict[str, Any],
    query: str,
    contexts: Sequence[Tuple[Optional[str], str]],
    continuation: Any = None,
    providers: Sequence[ProviderSpec] = (),
    files: Sequence[str] = (),
    on_event: Optional[EventCallback] = None,
    tools: Optional[List[Dict[str, Any]]] = None,
    sub_tools: Optional[List[Dict[str, Any]]] = None,
    tool_dispatch: Optional[Callable[..., Any]] = None,
    tool_timeout: float = 60.0,
) -> CompletionOutcome:
    """One question through the RLM loop (see ``rlm_rs._native.completion``)."""
    finished, following = _native.completion(
        _plain(options),
        query,
        list(contexts),
        continuation,
        list(providers),
        list(files),
        on_event=on_event,
        tools=tools,
        sub_tools=sub_tools,
        tool_dispatch=tool_dispatch,
        tool_timeout=tool_timeout,
    )
    if finished.error is not None and not list(finished.records):
        code, text = finished.error
        raise _failure(code, [*finished.problems, text])
    records = list(finished.records)
    return CompletionOutcome(records[0] if records else {}, following)


def flags_to_fields(flags: Sequence[str], operation: str) -> Dict[str, Any]:
    """Request fields from command-line flags (``["--skip-plan", "--subcall-model", "m"]``):
    kept for code written when the package passed flags through. A flag is the field of the
    same name (``--subcall-model`` is ``subcall_model``); a boolean field takes no value."""
    if not flags:
        return {}
    properties = _request_properties(operation)

    def kinds(name: str) -> List[str]:
        kind = (properties.get(name) or {}).get("type")
        return kind if isinstance(kind, list) else [kind]

    def is_bool(name: str) -> bool:
        return "boolean" in kinds(name)

    def typed(name: str, value: str) -> Any:
        try:
            if "integer" in kinds(name):
                return int(value)
            if "number" in kinds(name):
                return float(value)
        except ValueError:
            raise RlmInputError(f"error: --{name.replace('_', '-')} {value!r} is not a number", 2)
        if "array" in kinds(name):
            return [value]
        return value

    fields: Dict[str, Any] = {}
    words = list(flags)
    index = 0
    while index < len(words):
        word = words[index]
        if not word.startswith("--"):
            raise RlmInputError(f"error: {word!r} is not a flag", 2)
        name, _, value = word[2:].partition("=")
        key = name.replace("-", "_")
        if key not in properties:
            raise RlmInputError(f"error: unknown flag --{name} for {operation}", 2)
        if is_bool(key):
            fields[key] = True
        else:
            if not value:
                index += 1
                if index >= len(words):
                    raise RlmInputError(f"error: --{name} needs a value", 2)
                value = words[index]
            value = typed(key, value)
            if isinstance(value, list):
                fields.setdefault(key, []).extend(value)
            else:
                fields[key] = value
        index += 1
    return fields


_PROPERTIES: Dict[str, Dict[str, Any]] = {}


def _request_properties(operation: str) -> Dict[str, Any]:
    """The fields of an operation's request, from its JSON schema (built once)."""
    if operation not in _PROPERTIES:
        _PROPERTIES[operation] = _native.request_schema(operation).get("properties") or {}
    return _PROPERTIES[operation]


def path_arg(path: PathLike) -> str:
    return os.fspath(path)
