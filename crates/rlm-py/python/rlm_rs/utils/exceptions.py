"""The reference's exceptions (``rlm.utils.exceptions``), raised by :meth:`rlm_rs.RLM.completion`
where the reference raises them."""

from .._exceptions import (
    BudgetExceededError,
    CancellationError,
    ErrorThresholdExceededError,
    RlmError,
    RlmInputError,
    TimeoutExceededError,
    TokenLimitExceededError,
)

__all__ = [
    "BudgetExceededError",
    "CancellationError",
    "ErrorThresholdExceededError",
    "RlmError",
    "RlmInputError",
    "TimeoutExceededError",
    "TokenLimitExceededError",
]
