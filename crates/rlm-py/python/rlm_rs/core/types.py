"""The reference's result types (``rlm.core.types``)."""

from .._types import ModelUsageSummary, RLMChatCompletion, RunLog, UsageSummary

__all__ = ["ModelUsageSummary", "RLMChatCompletion", "RunLog", "UsageSummary"]
