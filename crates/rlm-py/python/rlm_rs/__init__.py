"""rlm_rs: Recursive Language Models backed by Rust.

- :class:`RLM` — the reference implementation's class (``RLM(backend=...,
  backend_kwargs=...).completion(prompt)``), model code run in rlm's sandbox, with its
  arguments, callbacks, custom tools, results and exceptions;
- :class:`Store`, :func:`inspect`, :func:`query`, :func:`view`, :class:`PromptAssembler` — the
  store, cited queries, trajectory pages and the coding-agent prompt pipeline;
  :class:`RunLog` — a trajectory read back.

Keys and settings are read as the ``rlm`` CLI reads them (environment, ``rlm.toml``, the user
configuration). Errors are :class:`RlmError` (``RlmInputError`` for bad input) with the CLI's
messages, and the reference's limit exceptions; long calls release the GIL and stop on Ctrl-C.
The reference's module paths work too: ``rlm_rs.logger``, ``rlm_rs.core.types``,
``rlm_rs.utils.exceptions``, ``rlm_rs.environments``.
"""

from __future__ import annotations

# `typing` is only for the type checker: importing it costs milliseconds at `import rlm_rs`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

from ._exceptions import (
    BudgetExceededError,
    CancellationError,
    ErrorThresholdExceededError,
    RlmError,
    RlmInputError,
    TimeoutExceededError,
    TokenLimitExceededError,
)

# The rest loads on first use (PEP 562), so `import rlm_rs` stays cheap: each name, the module
# that defines it.
_LAZY = {
    "RLM": "._rlm",
    "ModelUsageSummary": "._types",
    "RLMChatCompletion": "._types",
    "RunLog": "._types",
    "UsageSummary": "._types",
    "GrepMatch": "._toolkit",
    "PromptAssembler": "._toolkit",
    "QueryResult": "._toolkit",
    "SearchHit": "._toolkit",
    "Store": "._toolkit",
    "aquery": "._toolkit",
    "inspect": "._toolkit",
    "query": "._toolkit",
    "view": "._toolkit",
    "RLMLogger": ".logger",
    "__version__": "._native",
}

if TYPE_CHECKING:  # pragma: no cover
    from ._native import __version__
    from ._rlm import RLM
    from ._toolkit import (
        GrepMatch,
        PromptAssembler,
        QueryResult,
        SearchHit,
        Store,
        aquery,
        inspect,
        query,
        view,
    )
    from ._types import ModelUsageSummary, RLMChatCompletion, RunLog, UsageSummary
    from .logger import RLMLogger


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rlm_rs' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(list(globals()) + list(_LAZY))


__all__ = [
    "RLM",
    "RLMChatCompletion",
    "RLMLogger",
    "RunLog",
    "ModelUsageSummary",
    "UsageSummary",
    "Store",
    "SearchHit",
    "GrepMatch",
    "QueryResult",
    "PromptAssembler",
    "inspect",
    "query",
    "aquery",
    "view",
    "RlmError",
    "RlmInputError",
    "BudgetExceededError",
    "TimeoutExceededError",
    "TokenLimitExceededError",
    "ErrorThresholdExceededError",
    "CancellationError",
    "__version__",
]
