"""The Rust half of rlm_rs (crates/rlm-py/src/lib.rs). Use the package's public API instead."""

from typing import List, Optional, Sequence, Tuple

__version__: str

# (name, kind "openai" | "anthropic", base URL or "" to keep the configured one, key)
_Provider = Tuple[str, str, str, Optional[str]]

class Continuation:
    """What a persistent session carries from one question to the next (opaque)."""

def run_command(
    args: Sequence[str], providers: Sequence[_Provider] = ...
) -> Tuple[int, str, List[str]]: ...
def completion(
    flags: Sequence[str],
    query: str,
    contexts: Sequence[Tuple[Optional[str], str]],
    continuation: Optional[Continuation] = ...,
    providers: Sequence[_Provider] = ...,
    files: Sequence[str] = ...,
) -> Tuple[int, str, List[str], Continuation]: ...
def sandbox_worker() -> int: ...
def set_worker(program: str, args: Sequence[str]) -> None: ...
