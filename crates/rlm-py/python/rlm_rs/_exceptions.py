"""The package's exceptions. :class:`RlmError` (and :class:`RlmInputError` for bad input) carry
the CLI's own ``error:``/``hint:`` text; the limit errors are the reference implementation's
(``rlm.utils.exceptions``), with its names and attributes, raised where it raises them, and
also carry what the run had: ``partial_answer``, ``usage_summary`` and ``completion``."""

from __future__ import annotations

# `typing` is only for the type checker: importing it costs milliseconds at `import rlm_rs`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Dict, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from ._types import RLMChatCompletion, UsageSummary


class RlmError(Exception):
    """An operation failed. ``str(err)`` is the CLI's ``error:``/``hint:`` text; ``exit_code``
    is the code the CLI would have exited with (1: the task could not be done)."""

    def __init__(self, message: str, exit_code: int = 1, messages: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.messages = list(messages) or [message]
        # The `--json` record of a run that failed, when there is one (its log, its usage).
        self.record: Optional[Dict[str, Any]] = None


class RlmInputError(RlmError, ValueError):
    """Bad input (the CLI's exit code 2): a missing file, a malformed value, an unknown model or
    provider, a store that is not one."""


class _LimitError(RlmError):
    """A run stopped by a limit the user set: what it had when it stopped."""

    def _carry(
        self,
        partial_answer: Optional[str],
        usage_summary: Optional["UsageSummary"],
        completion: Optional["RLMChatCompletion"],
    ) -> None:
        self.partial_answer = partial_answer
        # Usage of every model the run called, up to the stop.
        self.usage_summary = usage_summary
        # The whole result (trajectory, log, status) when the run got that far.
        self.completion = completion
        if completion is not None:
            self.record = completion.record


class BudgetExceededError(_LimitError):
    """The run's spend reached ``max_budget`` (dollars): ``spent`` of ``budget``."""

    def __init__(
        self,
        spent: float,
        budget: float,
        message: Optional[str] = None,
        *,
        partial_answer: Optional[str] = None,
        usage_summary: Optional["UsageSummary"] = None,
        completion: Optional["RLMChatCompletion"] = None,
    ) -> None:
        self.spent = spent
        self.budget = budget
        super().__init__(message or f"Budget exceeded: spent ${spent:.6f} of ${budget:.6f} budget")
        self._carry(partial_answer, usage_summary, completion)


class TimeoutExceededError(_LimitError):
    """The run's wall time reached ``max_timeout``: ``elapsed`` of ``timeout`` seconds."""

    def __init__(
        self,
        elapsed: float,
        timeout: float,
        partial_answer: Optional[str] = None,
        message: Optional[str] = None,
        *,
        usage_summary: Optional["UsageSummary"] = None,
        completion: Optional["RLMChatCompletion"] = None,
    ) -> None:
        self.elapsed = elapsed
        self.timeout = timeout
        super().__init__(message or f"Timeout exceeded: {elapsed:.1f}s of {timeout:.1f}s limit")
        self._carry(partial_answer, usage_summary, completion)


class TokenLimitExceededError(_LimitError):
    """The run's tokens (input + output, every model) reached ``max_tokens``."""

    def __init__(
        self,
        tokens_used: int,
        token_limit: int,
        partial_answer: Optional[str] = None,
        message: Optional[str] = None,
        *,
        usage_summary: Optional["UsageSummary"] = None,
        completion: Optional["RLMChatCompletion"] = None,
    ) -> None:
        self.tokens_used = tokens_used
        self.token_limit = token_limit
        super().__init__(
            message or f"Token limit exceeded: {tokens_used:,} of {token_limit:,} tokens"
        )
        self._carry(partial_answer, usage_summary, completion)


class ErrorThresholdExceededError(_LimitError):
    """Model code raised errors ``max_errors`` turns in a row; ``last_error`` is the last."""

    def __init__(
        self,
        error_count: int,
        threshold: int,
        last_error: Optional[str] = None,
        partial_answer: Optional[str] = None,
        message: Optional[str] = None,
        *,
        usage_summary: Optional["UsageSummary"] = None,
        completion: Optional["RLMChatCompletion"] = None,
    ) -> None:
        self.error_count = error_count
        self.threshold = threshold
        self.last_error = last_error
        super().__init__(
            message
            or f"Error threshold exceeded: {error_count} consecutive errors (limit: {threshold})"
        )
        self._carry(partial_answer, usage_summary, completion)


class CancellationError(_LimitError, KeyboardInterrupt):
    """The run was stopped with Ctrl-C (also in a custom tool). It is a ``KeyboardInterrupt``
    too, so code that catches that keeps working."""

    def __init__(
        self,
        partial_answer: Optional[str] = None,
        message: Optional[str] = None,
        *,
        usage_summary: Optional["UsageSummary"] = None,
        completion: Optional["RLMChatCompletion"] = None,
    ) -> None:
        super().__init__(message or "Execution cancelled by user")
        self._carry(partial_answer, usage_summary, completion)


def failure(code: int, errors: Sequence[str]) -> RlmError:
    """The exception for an operation that failed with exit code ``code``."""
    text = "\n".join(errors) if errors else f"the operation failed (exit code {code})"
    kind = RlmInputError if code == 2 else RlmError
    return kind(text, code, errors)
