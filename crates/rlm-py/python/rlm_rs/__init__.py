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

from ._exceptions import (
    BudgetExceededError,
    CancellationError,
    ErrorThresholdExceededError,
    RlmError,
    RlmInputError,
    TimeoutExceededError,
    TokenLimitExceededError,
)
from ._rlm import RLM
from ._types import ModelUsageSummary, RLMChatCompletion, RunLog, UsageSummary
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
from ._native import __version__
from .logger import RLMLogger

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
