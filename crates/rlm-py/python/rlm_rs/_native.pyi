"""The Rust half of rlm_rs (crates/rlm-py/src/lib.rs). Use the package's public API instead."""

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

__version__: str

# (name, kind "openai" | "anthropic", base URL or "" to keep the configured one, key)
_Provider = Tuple[str, str, str, Optional[str]]
_OnEvent = Callable[[str, Dict[str, Any]], None]

class Continuation:
    """What a persistent session carries from one question to the next (opaque)."""

class Finished:
    """How an operation ended."""

    records: List[Dict[str, Any]]
    notes: List[str]
    problems: List[str]
    status: int
    error: Optional[Tuple[int, str]]
    next_cursor: Optional[str]

def call(
    operation: str,
    request: Mapping[str, Any],
    store: Optional[str] = ...,
    config: Optional[str] = ...,
    providers: Sequence[_Provider] = ...,
    on_event: Optional[_OnEvent] = ...,
    max_reply_bytes: Optional[int] = ...,
) -> Finished: ...
# dispatch(table, name, arguments, seconds) -> (True, result) | (False, (exception type, message))
_Dispatch = Callable[[str, str, Dict[str, Any], float], Tuple[bool, Any]]

def completion(
    options: Mapping[str, Any],
    query: str,
    contexts: Sequence[Tuple[Optional[str], str]],
    continuation: Optional[Continuation] = ...,
    providers: Sequence[_Provider] = ...,
    files: Sequence[str] = ...,
    config: Optional[str] = ...,
    on_event: Optional[_OnEvent] = ...,
    tools: Optional[Sequence[Mapping[str, Any]]] = ...,
    sub_tools: Optional[Sequence[Mapping[str, Any]]] = ...,
    tool_dispatch: Optional[_Dispatch] = ...,
    tool_timeout: float = ...,
) -> Tuple[Finished, Optional[Continuation]]: ...

class Sandbox:
    """A persistent sandboxed REPL; tool calls go through `__rlm_tool__(name, *args, **kwargs)`."""

    def __init__(self, tool_timeout: float = ..., block_timeout: float = ...) -> None: ...
    def execute(self, code: str, dispatch: _Dispatch) -> Tuple[str, str, Optional[str]]: ...
    def close(self) -> None: ...
def request_schema(operation: str) -> Dict[str, Any]: ...
def sandbox_worker() -> int: ...
def set_worker(program: str, args: Sequence[str]) -> None: ...
