"""``RLM``: the reference implementation's interface (``RLM(backend=..., backend_kwargs=...)
.completion(prompt)``) over rlm's loop and sandbox.

What maps how:

- ``backend`` names a provider; ``backend_kwargs["model_name"]`` the model. ``api_key`` and
  ``base_url`` in ``backend_kwargs`` are set above the environment and the configuration
  files; without them, keys and URLs are read exactly as the ``rlm`` CLI reads them
  (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``rlm.toml``, ...).
- ``other_backends``/``other_backend_kwargs``: the first is the sub-call model
  (``llm_query``), and every one may be named by model code (``llm_query(..., model=M)``).
- ``prompt`` is the context model code reads; the root model is asked ``root_prompt``, or the
  prompt itself when it is short (up to 4,000 characters), else to do what the context asks.
- Model code always runs in rlm's sandbox: ``environment`` may be any of the reference's names
  and changes nothing (a warning says so for others than ``local``).
- Budgets are keyword arguments: ``max_cost`` (USD), ``max_tokens``, ``timeout`` (seconds);
  ``record``/``replay`` write or answer from a recording of every model call (as the CLI's
  ``--record``/``--replay``); ``extra_flags`` passes other ``rlm run`` flags, read as the
  loop's options of the same names.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _core
from .logger import RLMLogger

# Backends by the reference's names: (rlm provider, wire, base URL when rlm has no such
# provider built in, environment variable of its key).
_BACKENDS: Dict[str, Tuple[str, str, str, Optional[str]]] = {
    "openai": ("openai", "openai", "", None),
    "anthropic": ("anthropic", "anthropic", "", None),
    "openrouter": ("openrouter", "openai", "", None),
    "vllm": ("vllm", "openai", "", None),
    "ollama": ("ollama", "openai", "", None),
    "llamacpp": ("llamacpp", "openai", "", None),
    "lmstudio": ("lmstudio", "openai", "", None),
    "litellm": ("litellm", "openai", "http://localhost:4000/v1", "LITELLM_API_KEY"),
    "portkey": ("portkey", "openai", "https://api.portkey.ai/v1", "PORTKEY_API_KEY"),
    "gemini": (
        "gemini",
        "openai",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "GEMINI_API_KEY",
    ),
}
# Backends rlm has no provider for take their URL from `<NAME>_BASE_URL` when set, as the
# built-in ones do (`OPENAI_BASE_URL`, ...).

_KNOWN_KWARGS = {"model_name", "api_key", "base_url"}

# A prompt up to this long is also the question the root model is asked.
_SHORT_PROMPT = 4000

_GENERIC_QUESTION = (
    "The context holds a request and the material it is about. Do what the request asks "
    "and answer it."
)


@dataclass
class ModelUsageSummary:
    """Calls and tokens of one model in a completion."""

    total_calls: int
    total_input_tokens: int
    total_output_tokens: int
    cost_usd: Optional[float] = None


@dataclass
class UsageSummary:
    """Usage of every model a completion called (root and sub-calls)."""

    model_usage_summaries: Dict[str, ModelUsageSummary]
    total_tokens: int = 0
    cost_usd: float = 0.0
    cost_is_partial: bool = False


@dataclass
class RLMChatCompletion:
    """What :meth:`RLM.completion` returns. ``response`` is the answer (or, when the run ended
    without one, its partial answer, and ``status`` says so)."""

    root_model: str
    prompt: Any
    response: str
    usage_summary: UsageSummary
    execution_time: float
    status: str = "answered"
    iterations: int = 0
    run_id: str = ""
    log_path: Optional[str] = None
    error: Optional[str] = None
    record: Dict[str, Any] = field(default_factory=dict, repr=False)


def _provider(backend: str, kwargs: Dict[str, Any]) -> Tuple[str, Optional[_core.ProviderSpec]]:
    """The model spec (``provider:model``) and the provider the kwargs set, if any."""
    try:
        name, wire, default_url, key_env = _BACKENDS[backend]
    except KeyError:
        raise _core.RlmInputError(
            f"error: unknown backend {backend!r}\n"
            f"hint: backends: {', '.join(sorted(_BACKENDS))}",
            2,
        ) from None
    model = kwargs.get("model_name")
    if not model:
        raise _core.RlmInputError(
            f"error: backend_kwargs for {backend!r} need a \"model_name\"", 2
        )
    unknown = sorted(set(kwargs) - _KNOWN_KWARGS)
    if unknown:
        warnings.warn(
            f"rlm_rs: backend_kwargs {unknown} are not used (set them in rlm.toml's "
            "[llm.providers] where rlm supports them)",
            stacklevel=4,
        )
    base_url = kwargs.get("base_url") or ""
    api_key = kwargs.get("api_key")
    if default_url and not base_url:
        base_url = os.environ.get(f"{name.upper()}_BASE_URL") or default_url
    if default_url and api_key is None and key_env:
        api_key = os.environ.get(key_env) or None
    spec: Optional[_core.ProviderSpec] = None
    if base_url or api_key:
        spec = (name, wire, base_url, api_key)
    return f"{name}:{model}", spec


class RLM:
    """A recursive language model: the root model writes code in a sandboxed REPL that holds
    the prompt as ``context`` and may call sub-models on parts of it.

    >>> rlm = RLM(backend="openai", backend_kwargs={"model_name": "gpt-5-nano"})
    >>> rlm.completion("How many r's are in 'strawberry'?").response  # doctest: +SKIP
    """

    def __init__(
        self,
        backend: str = "openai",
        backend_kwargs: Optional[Dict[str, Any]] = None,
        environment: str = "local",
        environment_kwargs: Optional[Dict[str, Any]] = None,
        depth: int = 0,
        max_depth: int = 1,
        max_iterations: int = 30,
        custom_system_prompt: Optional[str] = None,
        other_backends: Optional[Sequence[str]] = None,
        other_backend_kwargs: Optional[Sequence[Dict[str, Any]]] = None,
        logger: Optional[RLMLogger] = None,
        verbose: bool = False,
        persistent: bool = False,
        *,
        max_cost: Optional[float] = None,
        max_tokens: Optional[int] = None,
        timeout: Optional[float] = None,
        max_errors: Optional[int] = None,
        max_output_tokens: Optional[int] = None,
        record: Optional["os.PathLike[str] | str"] = None,
        replay: Optional["os.PathLike[str] | str"] = None,
        extra_flags: Sequence[str] = (),
    ) -> None:
        if custom_system_prompt is not None:
            raise _core.RlmInputError(
                "error: custom_system_prompt is not supported: rlm writes the loop's system "
                "prompt itself (it documents the sandbox's functions and limits)\n"
                "hint: put instructions in root_prompt, or in the prompt",
                2,
            )
        if depth != 0:
            raise _core.RlmInputError("error: depth is set by rlm itself; leave it at 0", 2)
        if environment != "local" or environment_kwargs:
            warnings.warn(
                f"rlm_rs: environment={environment!r} is not used: model code always runs in "
                "rlm's own sandbox (a separate process confined by Landlock and seccomp)",
                stacklevel=2,
            )
        self.backend = backend
        self.backend_kwargs = dict(backend_kwargs or {})
        self.model, spec = _provider(backend, self.backend_kwargs)
        self._providers: List[_core.ProviderSpec] = [spec] if spec else []
        others = list(other_backends or [])
        other_kwargs = list(other_backend_kwargs or [])
        if len(other_kwargs) != len(others):
            raise _core.RlmInputError(
                "error: other_backends and other_backend_kwargs must have the same length", 2
            )
        self._others: List[str] = []
        for other, kwargs in zip(others, other_kwargs):
            model, other_spec = _provider(other, dict(kwargs))
            self._others.append(model)
            if other_spec and other_spec not in self._providers:
                self._providers.append(other_spec)
        self.max_depth = max_depth
        self.max_iterations = max_iterations
        self.logger = logger
        self.verbose = verbose
        self.persistent = persistent
        self.max_cost = max_cost
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_errors = max_errors
        self.max_output_tokens = max_output_tokens
        self.record = record
        self.replay = replay
        self.extra_flags = list(extra_flags)
        self._continuation: Any = None

    def _options(self) -> Dict[str, Any]:
        """The loop's options (``rlm run``'s flags, by their field names)."""
        options: Dict[str, Any] = {
            "model": self.model,
            "max_depth": self.max_depth,
            "max_iterations": self.max_iterations,
            "max_cost": self.max_cost,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "max_errors": self.max_errors,
            "max_output_tokens": self.max_output_tokens,
            "record": self.record and os.fspath(self.record),
            "replay": self.replay and os.fspath(self.replay),
        }
        if self._others:
            options["subcall_model"] = self._others[0]
            options["allow_models"] = list(self._others[1:])
        if self.logger is not None:
            options["log"] = self.logger.log_dir
        options.update(_core.flags_to_fields(self.extra_flags, "completion"))
        return options

    def completion(
        self,
        prompt: Union[str, "os.PathLike[str]", Dict[str, Any], List[Any]],
        root_prompt: Optional[str] = None,
    ) -> RLMChatCompletion:
        """Answers ``prompt`` (the context: text; a list or dict, which model code gets as
        JSON text; or a file path, ``pathlib.Path``, which rlm reads itself, however large)
        with the RLM loop; ``root_prompt`` is the question the root model sees.

        Raises :class:`RlmInputError` on bad settings, :class:`RlmError` when the run could
        not start or a provider failed; a run that ended without an answer (a budget, the
        iteration limit) returns with ``status`` saying so."""
        contexts: List[Tuple[Optional[str], str]] = []
        files: List[str] = []
        if isinstance(prompt, os.PathLike):
            # A file is read by rlm as `--context-file` reads it, never into Python.
            files.append(os.fspath(prompt))
            text = ""
        elif isinstance(prompt, str):
            text = prompt
        else:
            text = json.dumps(prompt, ensure_ascii=False)
        if not files:
            contexts.append(("prompt", text))
        if root_prompt is not None:
            question = root_prompt
        elif not files and len(text) <= _SHORT_PROMPT:
            question = text
        else:
            question = _GENERIC_QUESTION
        started = time.perf_counter()
        continuation = self._continuation if self.persistent else None
        outcome = _core.completion(
            self._options(), question, contexts, continuation, self._providers, files
        )
        if self.persistent:
            self._continuation = outcome.continuation
        elapsed = time.perf_counter() - started
        if outcome.record.get("status") == "model_error":
            # The root model could not be reached: the reference raises its client's error.
            error = _core.RlmError(f"error: {outcome.record.get('error') or 'the root model failed'}")
            error.record = outcome.record
            raise error
        result = _chat_completion(self.model, prompt, outcome.record, elapsed)
        if self.verbose:
            print(
                f"rlm_rs: {result.status} in {result.iterations} iterations, "
                f"{result.usage_summary.total_tokens} tokens, {elapsed:.2f} s"
                + (f"; log {result.log_path}" if result.log_path else ""),
                flush=True,
            )
        return result

    async def acompletion(
        self,
        prompt: Union[str, "os.PathLike[str]", Dict[str, Any], List[Any]],
        root_prompt: Optional[str] = None,
    ) -> RLMChatCompletion:
        """:meth:`completion` for ``asyncio``: runs on a worker thread, the event loop free."""
        import asyncio  # here, not at import: asyncio costs tens of milliseconds to import

        return await asyncio.to_thread(self.completion, prompt, root_prompt)

    def reset(self) -> None:
        """Forgets a persistent session's variables and conversation."""
        self._continuation = None

    def close(self) -> None:
        """Ends the session (the sandbox worker of each completion has already ended)."""
        self.reset()

    def __enter__(self) -> "RLM":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _usage(record: Dict[str, Any]) -> UsageSummary:
    usage = record.get("usage") or {}
    models: Dict[str, ModelUsageSummary] = {}
    for name, counts in (usage.get("models") or {}).items():
        models[name] = ModelUsageSummary(
            total_calls=int(counts.get("calls") or 0),
            total_input_tokens=int(counts.get("input_tokens") or 0),
            total_output_tokens=int(counts.get("output_tokens") or 0),
            # None when no call of the model had a price (a local model).
            cost_usd=None
            if counts.get("unpriced_calls") == counts.get("calls")
            else counts.get("cost_usd"),
        )
    return UsageSummary(
        model_usage_summaries=models,
        total_tokens=int(record.get("tokens") or 0),
        cost_usd=float(record.get("cost_usd") or 0.0),
        cost_is_partial=bool(record.get("cost_is_partial")),
    )


def _chat_completion(
    model: str, prompt: Any, record: Dict[str, Any], elapsed: float
) -> RLMChatCompletion:
    answer = record.get("answer")
    if answer is None:
        answer = record.get("partial_answer") or ""
    return RLMChatCompletion(
        root_model=model,
        prompt=prompt,
        response=answer,
        usage_summary=_usage(record),
        execution_time=elapsed,
        status=record.get("status") or "",
        iterations=int(record.get("iterations") or 0),
        run_id=record.get("run_id") or "",
        log_path=record.get("log"),
        error=record.get("error"),
        record=record,
    )
