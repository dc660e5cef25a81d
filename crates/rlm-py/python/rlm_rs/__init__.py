"""rlm_rs: Recursive Language Models backed by Rust.

- :class:`RLM` — the reference implementation's interface (``RLM(backend=...,
  backend_kwargs=...).completion(prompt)``), model code run in rlm's sandbox;
- :class:`Store`, :func:`inspect`, :func:`query`, :func:`view`, :class:`PromptAssembler` — the
  store, cited queries, trajectory pages and the coding-agent prompt pipeline.

Keys and settings are read as the ``rlm`` CLI reads them (environment, ``rlm.toml``, the user
configuration). Errors are :class:`RlmError` (``RlmInputError`` for bad input) with the CLI's
messages; long calls release the GIL and stop on Ctrl-C.
"""

from ._core import RlmError, RlmInputError
from ._rlm import RLM, ModelUsageSummary, RLMChatCompletion, UsageSummary
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
    "__version__",
]
