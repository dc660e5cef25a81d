"""``RLM``: the reference implementation's class (``from rlm import RLM`` becomes ``from rlm_rs
import RLM``) over rlm's loop and sandbox.

What maps how:

- ``backend`` names a provider; ``backend_kwargs["model_name"]`` the model. ``api_key`` and
  ``base_url`` in ``backend_kwargs`` are set above the environment and the configuration
  files; without them, keys and URLs are read exactly as the ``rlm`` CLI reads them
  (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``rlm.toml``, ...).
- ``other_backends``/``other_backend_kwargs``: the first is the sub-call model
  (``llm_query``, child runs), and every one may be named by model code
  (``llm_query(..., model=M)``).
- ``prompt`` is the context model code reads; the root model is asked ``root_prompt``, or the
  prompt itself when it is short (up to 4,000 characters), else to do what the context asks.
- Model code always runs in rlm's sandbox: ``environment`` may be any of the reference's names
  and changes nothing (a warning says so for others than ``local``).
- Limits are the reference's (``max_budget`` dollars, ``max_timeout`` seconds, ``max_tokens``,
  ``max_errors``) and raise its exceptions; rlm's names ``max_cost`` and ``timeout`` are
  aliases.
"""

from __future__ import annotations

import json
import os
import time
import warnings
# `typing` is only for the type checker: importing it costs milliseconds at `import rlm_rs`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _core
from ._exceptions import (
    BudgetExceededError,
    CancellationError,
    ErrorThresholdExceededError,
    RlmError,
    RlmInputError,
    TimeoutExceededError,
    TokenLimitExceededError,
)
from ._tools import Dispatcher, ToolTable, parse_custom_tools, validate_custom_tools
from ._types import ModelUsageSummary, RLMChatCompletion, RunLog, UsageSummary
from .logger import RLMLogger

__all__ = ["RLM", "RLMChatCompletion", "UsageSummary", "ModelUsageSummary"]

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

# The keyword arguments `RLM` takes (for the closest-name suggestion).
_PARAMETERS = (
    "backend backend_kwargs environment environment_kwargs depth max_depth max_iterations "
    "max_budget max_timeout max_tokens max_errors custom_system_prompt tool_prompts tool_code "
    "other_backends other_backend_kwargs logger verbose persistent custom_tools "
    "custom_sub_tools compaction compaction_threshold_pct on_subcall_start on_subcall_complete "
    "on_iteration_start on_iteration_complete max_concurrent_subcalls sampling_args "
    "sub_sampling_args max_cost timeout max_output_tokens record replay extra_flags "
    "tool_timeout on_event"
).split()


def unknown_argument(function: str, name: str, valid: Sequence[str]) -> TypeError:
    """The ``TypeError`` for an unknown keyword argument, naming the closest valid one."""
    import difflib  # here: only a mistake needs it

    close = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return TypeError(f"{function}() got an unexpected keyword argument {name!r}{hint}")


def _provider(backend: str, kwargs: Dict[str, Any]) -> Tuple[str, Optional[_core.ProviderSpec]]:
    """The model spec (``provider:model``) and the provider the kwargs set, if any."""
    try:
        name, wire, default_url, key_env = _BACKENDS[backend]
    except KeyError:
        raise RlmInputError(
            f"error: unknown backend {backend!r}\nhint: backends: {', '.join(sorted(_BACKENDS))}",
            2,
        ) from None
    model = kwargs.get("model_name")
    if not model:
        raise RlmInputError(f"error: backend_kwargs for {backend!r} need a \"model_name\"", 2)
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


def _alias(ours: Any, theirs: Any, our_name: str, their_name: str) -> Any:
    if ours is not None and theirs is not None and ours != theirs:
        raise RlmInputError(
            f"error: {their_name}={theirs!r} and {our_name}={ours!r} are the same limit; give one",
            2,
        )
    return theirs if theirs is not None else ours


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
        max_budget: Optional[float] = None,
        max_timeout: Optional[float] = None,
        max_tokens: Optional[int] = None,
        max_errors: Optional[int] = None,
        custom_system_prompt: Optional[str] = None,
        tool_prompts: Union[str, Sequence[str], None] = None,
        tool_code: Optional[str] = None,
        other_backends: Optional[Sequence[str]] = None,
        other_backend_kwargs: Optional[Sequence[Dict[str, Any]]] = None,
        logger: Optional[RLMLogger] = None,
        verbose: bool = False,
        persistent: bool = False,
        custom_tools: Optional[Dict[str, Any]] = None,
        custom_sub_tools: Optional[Dict[str, Any]] = None,
        compaction: bool = False,
        compaction_threshold_pct: float = 0.85,
        on_subcall_start: Optional[Callable[[int, str, str], None]] = None,
        on_subcall_complete: Optional[Callable[[int, str, float, Optional[str]], None]] = None,
        on_iteration_start: Optional[Callable[[int, int], None]] = None,
        on_iteration_complete: Optional[Callable[[int, int, float], None]] = None,
        max_concurrent_subcalls: Optional[int] = None,
        sampling_args: Optional[Dict[str, Any]] = None,
        sub_sampling_args: Optional[Dict[str, Any]] = None,
        *,
        max_cost: Optional[float] = None,
        timeout: Optional[float] = None,
        max_output_tokens: Optional[int] = None,
        record: Optional["os.PathLike[str] | str"] = None,
        replay: Optional["os.PathLike[str] | str"] = None,
        extra_flags: Sequence[str] = (),
        tool_timeout: float = 60.0,
        on_event: Optional[Callable[[str, Dict[str, Any]], None]] = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise unknown_argument("RLM", sorted(unknown)[0], _PARAMETERS)
        if depth != 0:
            raise RlmInputError("error: depth is set by rlm itself; leave it at 0", 2)
        environment_kwargs = dict(environment_kwargs or {})
        setup_code = environment_kwargs.pop("setup_code", None)
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
        self.other_backends = list(other_backends) if other_backends is not None else None
        self.other_backend_kwargs = (
            list(other_backend_kwargs) if other_backend_kwargs is not None else None
        )
        others = self.other_backends or []
        other_kwargs = self.other_backend_kwargs or []
        if len(other_kwargs) != len(others):
            raise RlmInputError(
                "error: other_backends and other_backend_kwargs must have the same length", 2
            )
        self._others: List[str] = []
        for other, kwargs in zip(others, other_kwargs):
            model, other_spec = _provider(other, dict(kwargs))
            self._others.append(model)
            if other_spec and other_spec not in self._providers:
                self._providers.append(other_spec)
        self.depth = depth
        self.max_depth = max_depth
        self.max_iterations = max_iterations
        self.max_budget = _alias(max_cost, max_budget, "max_cost", "max_budget")
        self.max_timeout = _alias(timeout, max_timeout, "timeout", "max_timeout")
        self.max_tokens = max_tokens
        self.max_errors = max_errors
        self.max_output_tokens = max_output_tokens
        self.custom_system_prompt = custom_system_prompt
        self.tool_prompts = [tool_prompts] if isinstance(tool_prompts, str) else list(tool_prompts or [])
        if tool_code is not None:
            try:
                compile(tool_code, "<tool_code>", "exec")
            except SyntaxError as err:
                raise RlmInputError(f"tool_code contains invalid Python syntax: {err}", 2) from None
        self.tool_code = tool_code
        self._setup_code = "\n\n".join(
            code.strip() for code in (setup_code, tool_code) if code and code.strip()
        ) or None
        validate_custom_tools(custom_tools)
        validate_custom_tools(custom_sub_tools)
        self.custom_tools = custom_tools
        # The reference's rule: sub-agents get the root's tools unless told otherwise.
        self.custom_sub_tools = custom_sub_tools if custom_sub_tools is not None else custom_tools
        self._tables = {
            "root": ToolTable(parse_custom_tools(custom_tools)),
            "children": ToolTable(parse_custom_tools(self.custom_sub_tools)),
        }
        if not (isinstance(tool_timeout, (int, float)) and tool_timeout > 0):
            raise RlmInputError(f"error: tool_timeout must be seconds above 0, not {tool_timeout!r}", 2)
        self.tool_timeout = float(tool_timeout)
        if compaction and not (
            isinstance(compaction_threshold_pct, (int, float)) and 0 < compaction_threshold_pct <= 1
        ):
            raise RlmInputError(
                f"error: compaction_threshold_pct must be above 0 and at most 1, "
                f"not {compaction_threshold_pct!r}",
                2,
            )
        self.compaction = compaction
        self.compaction_threshold_pct = compaction_threshold_pct
        if max_concurrent_subcalls is not None and max_concurrent_subcalls < 1:
            raise RlmInputError("error: max_concurrent_subcalls must be at least 1", 2)
        self.max_concurrent_subcalls = max_concurrent_subcalls
        self.sampling_args = dict(sampling_args or {})
        self.sub_sampling_args = dict(sub_sampling_args or {})
        _check_sampling(self.sampling_args, "sampling_args")
        _check_sampling(self.sub_sampling_args, "sub_sampling_args")
        self.logger = logger
        self.verbose = verbose
        self.persistent = persistent
        self.on_subcall_start = on_subcall_start
        self.on_subcall_complete = on_subcall_complete
        self.on_iteration_start = on_iteration_start
        self.on_iteration_complete = on_iteration_complete
        self.on_event = on_event
        self.record = record
        self.replay = replay
        self.extra_flags = list(extra_flags)
        self._continuation: Any = None
        # A persistent session's earlier prompts: `context_0`, `context_1`, … of each question.
        self._contexts: List[Tuple[Optional[str], str]] = []
        self._files: List[str] = []

    # The reference's names of two attributes.
    @property
    def max_cost(self) -> Optional[float]:
        return self.max_budget

    @property
    def timeout(self) -> Optional[float]:
        return self.max_timeout

    def _options(self) -> Dict[str, Any]:
        """The loop's options (``rlm run``'s flags, by their field names)."""
        options: Dict[str, Any] = {
            "model": self.model,
            "max_depth": self.max_depth,
            "max_iterations": self.max_iterations,
            "max_cost": self.max_budget,
            "max_tokens": self.max_tokens,
            "timeout": self.max_timeout,
            "max_errors": self.max_errors,
            "max_output_tokens": self.max_output_tokens,
            "root_max_output_tokens": _output_cap(self.sampling_args),
            "subcall_max_output_tokens": _output_cap(self.sub_sampling_args),
            "root_temperature": self.sampling_args.get("temperature"),
            "subcall_temperature": self.sub_sampling_args.get("temperature"),
            "max_concurrent_subcalls": self.max_concurrent_subcalls,
            "record": self.record and os.fspath(self.record),
            "replay": self.replay and os.fspath(self.replay),
            "custom_system_prompt": self.custom_system_prompt,
            "system_sections": self.tool_prompts,
            "setup_code": self._setup_code,
            "compaction": float(self.compaction_threshold_pct) if self.compaction else None,
        }
        if self._others:
            options["subcall_model"] = self._others[0]
            options["allow_models"] = list(self._others[1:])
        if self.logger is not None:
            options["log"] = self.logger._directory()
            options["log_name"] = self.logger.file_name
        options.update(_core.flags_to_fields(self.extra_flags, "completion"))
        return options

    def _contexts_of(
        self, prompt: Any
    ) -> Tuple[List[Tuple[Optional[str], str]], List[str], str]:
        """The contexts and files of this question (a persistent session's earlier ones
        first), and the prompt's text ("" for a file)."""
        contexts = list(self._contexts) if self.persistent else []
        files = list(self._files) if self.persistent else []
        if isinstance(prompt, os.PathLike):
            # A file is read by rlm as `--context-file` reads it, never into Python.
            if contexts:
                raise RlmInputError(
                    "error: a persistent session holds text prompts; a file prompt cannot "
                    "follow them\nhint: read the file into a str, or use a fresh RLM",
                    2,
                )
            files.append(os.fspath(prompt))
            return contexts, files, ""
        if files:
            raise RlmInputError(
                "error: a persistent session that started from a file takes no other prompt",
                2,
            )
        text = prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)
        contexts.append(("prompt", text))
        return contexts, files, text

    def completion(
        self,
        prompt: Union[str, "os.PathLike[str]", Dict[str, Any], List[Any]],
        root_prompt: Optional[str] = None,
    ) -> RLMChatCompletion:
        """Answers ``prompt`` (the context: text; a list or dict, which model code gets as
        JSON text; or a file path, ``pathlib.Path``, which rlm reads itself, however large)
        with the RLM loop; ``root_prompt`` is the question the root model sees.

        Raises the reference's exceptions when a limit stops the run
        (:class:`BudgetExceededError`, :class:`TimeoutExceededError`,
        :class:`TokenLimitExceededError`, :class:`ErrorThresholdExceededError`),
        :class:`CancellationError` on Ctrl-C, :class:`RlmInputError` on bad settings and
        :class:`RlmError` when the run could not start or the root model failed."""
        contexts, files, text = self._contexts_of(prompt)
        if root_prompt is not None:
            question = root_prompt
        elif not files and len(text) <= _SHORT_PROMPT:
            question = text
        else:
            question = _GENERIC_QUESTION
        options = self._options()
        try:
            return self._complete(prompt, question, contexts, files, options)
        finally:
            if self.logger is not None:
                self.logger._done()

    def _complete(
        self,
        prompt: Any,
        question: str,
        contexts: List[Tuple[Optional[str], str]],
        files: List[str],
        options: Dict[str, Any],
    ) -> RLMChatCompletion:
        started = time.perf_counter()
        continuation = self._continuation if self.persistent else None
        events = _Callbacks(self)
        try:
            outcome = _core.completion(
                options,
                question,
                contexts,
                continuation,
                self._providers,
                files,
                on_event=events,
                tools=self._tables["root"].declared or None,
                # The child runs' own tools, when they are not the root's.
                sub_tools=None
                if self.custom_sub_tools is self.custom_tools
                else self._tables["children"].declared,
                tool_dispatch=Dispatcher(self._tables),
                tool_timeout=self.tool_timeout,
            )
        except KeyboardInterrupt as interrupt:
            if isinstance(interrupt, CancellationError):
                raise
            raise _cancelled(events, time.perf_counter() - started) from None
        if self.persistent and outcome.continuation is not None:
            self._continuation = outcome.continuation
            self._contexts, self._files = contexts, files
        elapsed = time.perf_counter() - started
        record = outcome.record
        if record.get("status") == "model_error":
            # The root model could not be reached: the reference raises its client's error.
            error = RlmError(f"error: {record.get('error') or 'the root model failed'}")
            error.record = record
            raise error
        result = self._result(prompt, record, elapsed)
        self._raise_for_limit(result)
        if self.verbose:
            print(
                f"rlm_rs: {result.status} in {result.iterations} iterations, "
                f"{result.usage_summary.total_tokens} tokens, {elapsed:.2f} s"
                + (f"; log {result.log_path}" if result.log_path else ""),
                flush=True,
            )
        return result

    def _result(self, prompt: Any, record: Dict[str, Any], elapsed: float) -> RLMChatCompletion:
        answer = record.get("answer")
        if answer is None:
            answer = record.get("partial_answer") or ""
        metadata = None
        log = record.get("log")
        if self.logger is not None and log and os.path.exists(log):
            metadata = RunLog(log).trajectory()
            self.logger._ran(log, metadata)
        return RLMChatCompletion(
            root_model=self.model,
            prompt=prompt,
            response=answer,
            usage_summary=UsageSummary.from_record(record),
            execution_time=elapsed,
            metadata=metadata,
            error=record.get("error"),
            status=record.get("status") or "",
            iterations=int(record.get("iterations") or 0),
            run_id=record.get("run_id") or "",
            log_path=log,
            record=record,
        )

    def _raise_for_limit(self, result: RLMChatCompletion) -> None:
        """The reference's exception for a run a limit stopped, carrying what it had."""
        status = result.status
        record = result.record
        if status not in ("cost_budget", "token_budget", "timeout", "error_limit"):
            return
        log = _log(result.log_path)
        partial = record.get("partial_answer") or (log.last_response() if log else None)
        carried = {"usage_summary": result.usage_summary, "completion": result}
        if status == "cost_budget":
            budget = self.max_budget if self.max_budget is not None else 0.0
            spent = result.usage_summary.cost_usd
            message = (
                f"Budget exceeded after iteration {result.iterations}: spent "
                f"${spent:.6f} of ${budget:.6f} budget"
            )
            if result.usage_summary.total_calls == 0:
                # Refused before the first call: rlm holds each call's worst case against
                # the budget, and a model without a price cannot be held at all.
                message += (
                    " (no call could be made: the first request's worst case does not fit, "
                    "or the model has no known price; set one in rlm.toml's [llm.prices])"
                )
            raise BudgetExceededError(spent, budget, message, partial_answer=partial, **carried)
        if status == "token_budget":
            used = result.usage_summary.total_tokens
            limit = self.max_tokens or 0
            raise TokenLimitExceededError(
                used,
                limit,
                partial,
                f"Token limit exceeded after iteration {result.iterations}: "
                f"{used:,} of {limit:,} tokens",
                **carried,
            )
        if status == "timeout":
            elapsed = float(record.get("seconds") or result.execution_time)
            limit = self.max_timeout or 0.0
            raise TimeoutExceededError(
                elapsed,
                limit,
                partial,
                f"Timeout exceeded after iteration {result.iterations}: "
                f"{elapsed:.1f}s of {limit:.1f}s limit",
                **carried,
            )
        threshold = int(self.max_errors or _default_max_errors())
        raise ErrorThresholdExceededError(
            threshold,
            threshold,
            _last_error(log),
            partial,
            f"Error threshold exceeded: {threshold} consecutive errors (limit: {threshold})",
            **carried,
        )

    async def acompletion(
        self,
        prompt: Union[str, "os.PathLike[str]", Dict[str, Any], List[Any]],
        root_prompt: Optional[str] = None,
    ) -> RLMChatCompletion:
        """:meth:`completion` for ``asyncio``: runs on a worker thread, the event loop free
        (callbacks and tools are called on that thread)."""
        import asyncio  # here, not at import: asyncio costs tens of milliseconds to import

        return await asyncio.to_thread(self.completion, prompt, root_prompt)

    def reset(self) -> None:
        """Forgets a persistent session's variables, contexts and conversations."""
        self._continuation = None
        self._contexts = []
        self._files = []

    def close(self) -> None:
        """Ends the session (the sandbox worker of each completion has already ended)."""
        self.reset()

    def __enter__(self) -> "RLM":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The sampling arguments the providers' requests take, by the names users pass them.
_SAMPLING = {"max_tokens", "max_completion_tokens", "max_output_tokens", "temperature"}


def _check_sampling(arguments: Dict[str, Any], name: str) -> None:
    unknown = sorted(set(arguments) - _SAMPLING)
    if unknown:
        raise RlmInputError(
            f"error: {name} {unknown} are not supported yet by rlm_rs\n"
            f"hint: {name} takes {', '.join(sorted(_SAMPLING))}",
            2,
        )


def _output_cap(arguments: Dict[str, Any]) -> Optional[int]:
    """The output-token cap sampling arguments set, by any of its names."""
    for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        if arguments.get(name) is not None:
            return int(arguments[name])
    return None


def _default_max_errors() -> int:
    return int(_core._request_properties("completion")["max_errors"]["default"])


def _log(path: Optional[str]) -> Optional[RunLog]:
    if not path or not os.path.exists(path):
        return None
    try:
        return RunLog(path)
    except (OSError, ValueError):
        return None


def _last_error(log: Optional[RunLog]) -> Optional[str]:
    if log is None:
        return None
    for iteration in reversed(log.iterations):
        for block in reversed(iteration.get("code_blocks") or []):
            error = (block.get("result") or {}).get("error")
            if error:
                return error
    return None


def _cancelled(events: "_Callbacks", elapsed: float) -> CancellationError:
    """Ctrl-C: what the run had, from its log when it wrote one."""
    log = _log(events.log_path)
    usage = UsageSummary.from_record(log.result) if log and log.result else None
    return CancellationError(
        partial_answer=log.last_response() if log else None,
        message=f"Execution cancelled by user (Ctrl+C) after {elapsed:.1f}s",
        usage_summary=usage,
    )


class _Callbacks:
    """The run's events on the calling thread: the reference's callbacks, ``on_event``, and
    the progress ``verbose`` prints. A callback's exception does not stop the run: it is
    reported as a ``RuntimeWarning`` and the run goes on (``on_event``'s stops it)."""

    def __init__(self, rlm: RLM) -> None:
        self.rlm = rlm
        self.log_path: Optional[str] = None

    def _call(self, name: str, callback: Optional[Callable[..., Any]], *arguments: Any) -> None:
        if callback is None:
            return
        try:
            callback(*arguments)
        except Exception as error:
            warnings.warn(
                f"rlm_rs: {name} raised {type(error).__name__}: {error}; the run goes on",
                RuntimeWarning,
                stacklevel=2,
            )

    def __call__(self, kind: str, fields: Dict[str, Any]) -> None:
        rlm = self.rlm
        if kind == "run_started" and fields.get("depth") == 0:
            self.log_path = fields.get("log")
        if rlm.on_event is not None:
            rlm.on_event(kind, fields)
        if kind == "iteration_started":
            self._call("on_iteration_start", rlm.on_iteration_start, fields["depth"], fields["iteration"])
        elif kind == "iteration_finished":
            self._call(
                "on_iteration_complete",
                rlm.on_iteration_complete,
                fields["depth"],
                fields["iteration"],
                fields["seconds"],
            )
        elif kind == "child_run_started":
            self._call(
                "on_subcall_start",
                rlm.on_subcall_start,
                fields["depth"],
                fields["model"],
                fields["prompt_preview"],
            )
        elif kind == "child_run_finished":
            self._call(
                "on_subcall_complete",
                rlm.on_subcall_complete,
                fields["depth"],
                fields["model"],
                fields["seconds"],
                fields.get("error"),
            )
        if rlm.verbose:
            _print_progress(kind, fields)


def _print_progress(kind: str, fields: Dict[str, Any]) -> None:
    """One line per step, on stdout (``verbose=True``)."""
    indent = "  " * int(fields.get("depth") or 0)
    if kind == "iteration_started":
        line = f"iteration {fields['iteration']}/{fields['max_iterations']}"
    elif kind == "code_started":
        code = str(fields.get("code") or "").strip().splitlines()
        line = f"code: {code[0][:100] if code else ''}" + (" …" if len(code) > 1 else "")
    elif kind == "code_finished":
        error = fields.get("error")
        line = f"error: {str(error).splitlines()[0]}" if error else f"ran in {fields.get('seconds', 0):.2f} s"
    elif kind == "child_run_started":
        line = f"child run ({fields['model']}): {fields['prompt_preview']!r}"
    elif kind == "subcall_finished":
        line = f"{fields['kind']} {'failed' if fields.get('failed') else 'done'}"
    else:
        return
    print(f"rlm_rs: {indent}{line}", flush=True)
