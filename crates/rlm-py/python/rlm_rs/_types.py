"""What a completion returns, in the reference implementation's shapes
(``rlm.core.types``): :class:`RLMChatCompletion`, :class:`UsageSummary`,
:class:`ModelUsageSummary`; and :class:`RunLog`, a trajectory file read back (the viewer's page
inline in a notebook)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
# `typing` is only for the type checker: importing it costs milliseconds at `import rlm_rs`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Dict, Iterator, List, Optional


@dataclass
class ModelUsageSummary:
    """Calls, tokens and dollars of one model in a completion."""

    total_calls: int = 0
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    # Dollars; None when no call of the model had a price (a local model).
    total_cost: Optional[float] = None

    @property
    def cost_usd(self) -> Optional[float]:
        """``total_cost`` by rlm's name."""
        return self.total_cost

    def to_dict(self) -> Dict[str, Any]:
        return {
            "total_calls": self.total_calls,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "total_cost": self.total_cost,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "ModelUsageSummary":
        return cls(
            total_calls=int(data.get("total_calls", 0)),
            total_input_tokens=int(data.get("total_input_tokens", 0)),
            total_output_tokens=int(data.get("total_output_tokens", 0)),
            total_cost=data.get("total_cost"),
        )


class _ModelTable(dict):  # of str to ModelUsageSummary
    """Usage by model reference (``openai:gpt-5-nano``); a bare model name (``gpt-5-nano``,
    the reference's key) finds its entry too when only one provider has it."""

    def __missing__(self, key: str) -> ModelUsageSummary:
        found = [name for name in self if name.split(":", 1)[-1] == key]
        if len(found) == 1:
            return dict.__getitem__(self, found[0])
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        return isinstance(key, str) and any(name.split(":", 1)[-1] == key for name in self)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        try:
            return self[key]
        except KeyError:
            return default


@dataclass
class UsageSummary:
    """Usage of every model a completion called (the root model and the sub-calls')."""

    model_usage_summaries: Dict[str, ModelUsageSummary]
    total_tokens: int = 0
    cost_usd: float = 0.0
    # Some call's price was unknown: the costs are lower bounds.
    cost_is_partial: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.model_usage_summaries, _ModelTable):
            self.model_usage_summaries = _ModelTable(self.model_usage_summaries)

    @property
    def total_input_tokens(self) -> int:
        return sum(usage.total_input_tokens for usage in self.model_usage_summaries.values())

    @property
    def total_output_tokens(self) -> int:
        return sum(usage.total_output_tokens for usage in self.model_usage_summaries.values())

    @property
    def total_calls(self) -> int:
        return sum(usage.total_calls for usage in self.model_usage_summaries.values())

    @property
    def total_cost(self) -> Optional[float]:
        """Dollars over every priced call; None when no call had a price."""
        costs = [u.total_cost for u in self.model_usage_summaries.values() if u.total_cost is not None]
        return sum(costs) if costs else None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "model_usage_summaries": {
                model: usage.to_dict() for model, usage in self.model_usage_summaries.items()
            },
            "total_cost": self.total_cost,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "UsageSummary":
        return cls(
            model_usage_summaries={
                model: ModelUsageSummary.from_dict(usage)
                for model, usage in (data.get("model_usage_summaries") or {}).items()
            }
        )

    @classmethod
    def from_record(cls, record: Dict[str, Any]) -> "UsageSummary":
        """From a run's record (``rlm run --json``) or its trajectory's ``result`` line."""
        usage = record.get("usage") or {}
        models: Dict[str, ModelUsageSummary] = {}
        for name, counts in (usage.get("models") or {}).items():
            calls = int(counts.get("calls") or 0)
            unpriced = int(counts.get("unpriced_calls") or 0)
            models[name] = ModelUsageSummary(
                total_calls=calls,
                total_input_tokens=int(counts.get("input_tokens") or 0),
                total_output_tokens=int(counts.get("output_tokens") or 0),
                total_cost=None if calls and unpriced == calls else float(counts.get("cost_usd") or 0.0),
            )
        total = usage.get("total") or {}
        tokens = record.get("tokens")
        if tokens is None:
            tokens = int(total.get("input_tokens") or 0) + int(total.get("output_tokens") or 0)
        return cls(
            model_usage_summaries=models,
            total_tokens=int(tokens or 0),
            cost_usd=float(record.get("cost_usd", total.get("cost_usd")) or 0.0),
            cost_is_partial=bool(record.get("cost_is_partial")),
        )


@dataclass
class RLMChatCompletion:
    """What :meth:`rlm_rs.RLM.completion` returns. ``response`` is the answer; ``metadata`` is
    the trajectory (``{"run_metadata", "iterations", "result"}``) when the RLM has a logger;
    ``status`` is ``answered`` or, for an answer given only when the turns ran out,
    ``forced_answer``, or, for one given before any code looked at the data, ``no_evidence``."""

    root_model: str
    prompt: Any
    response: str
    usage_summary: UsageSummary
    execution_time: float
    metadata: Optional[Dict[str, Any]] = None
    error: Optional[str] = None
    status: str = "answered"
    iterations: int = 0
    run_id: str = ""
    log_path: Optional[str] = None
    record: Dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {
            "root_model": self.root_model,
            "prompt": self.prompt if isinstance(self.prompt, (str, dict, list)) else str(self.prompt),
            "response": self.response,
            "usage_summary": self.usage_summary.to_dict(),
            "execution_time": self.execution_time,
        }
        if self.metadata is not None:
            data["metadata"] = self.metadata
        if self.error is not None:
            data["error"] = self.error
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "RLMChatCompletion":
        return cls(
            root_model=str(data.get("root_model", "")),
            prompt=data.get("prompt", ""),
            response=data.get("response", ""),
            usage_summary=UsageSummary.from_dict(data.get("usage_summary") or {}),
            execution_time=float(data.get("execution_time", 0.0)),
            metadata=data.get("metadata"),
            error=data.get("error"),
        )

    def _repr_html_(self) -> Optional[str]:
        """The viewer's page of the run, inline in a notebook (None without a log)."""
        if not self.log_path or not os.path.exists(self.log_path):
            return None
        return RunLog(self.log_path)._repr_html_()


class RunLog:
    """A run's trajectory file (JSON Lines, what ``rlm run`` and every completion write):
    ``metadata``, ``iterations``, ``result``, and the viewer's page inline in a notebook."""

    def __init__(self, path: "os.PathLike[str] | str") -> None:
        self.path = os.fspath(path)
        self.lines: List[Dict[str, Any]] = []
        with open(self.path, encoding="utf-8") as log:
            for line in log:
                line = line.strip()
                if line:
                    self.lines.append(json.loads(line))

    def _of(self, kind: str) -> Iterator[Dict[str, Any]]:
        return (line for line in self.lines if line.get("type") == kind)

    @property
    def metadata(self) -> Dict[str, Any]:
        return next(self._of("metadata"), {})

    @property
    def iterations(self) -> List[Dict[str, Any]]:
        return list(self._of("iteration"))

    @property
    def result(self) -> Dict[str, Any]:
        return next(self._of("result"), {})

    def trajectory(self) -> Dict[str, Any]:
        """``{"run_metadata", "iterations", "result"}``: what a completion's ``metadata``
        holds."""
        return {
            "run_metadata": self.metadata,
            "iterations": self.iterations,
            "result": self.result,
        }

    def last_response(self) -> Optional[str]:
        """The root model's last reply with text (the reference's partial answer)."""
        for iteration in reversed(self.iterations):
            response = iteration.get("response")
            if isinstance(response, str) and response.strip():
                return response
        return None

    def html(self) -> str:
        """The viewer's page (``rlm view``) as text."""
        import tempfile

        from ._toolkit import view

        with tempfile.TemporaryDirectory(prefix="rlm-view-") as scratch:
            page = view(self.path, os.path.join(scratch, "run.html"))
            with open(page, encoding="utf-8") as html:
                return html.read()

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        result = self.result
        return (
            f"RunLog({self.path!r}, status={result.get('status')!r}, "
            f"iterations={len(self.iterations)})"
        )
