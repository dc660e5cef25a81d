"""Custom tools (``RLM(custom_tools=...)``), as the reference takes them: ``{"name": callable}``,
``{"name": value}`` or ``{"name": {"tool": callable_or_value, "description": "..."}}``.

A value is plain data (str, int, float, bool, None, lists, tuples and dicts of them) and is
copied into the REPL. A callable stays here, in the user's process: model code calls it
through the sandbox's host-call channel, on the thread that called ``completion``, with plain
data as arguments and result; its exception is raised in model code with its message; each call
has a time limit (``tool_timeout``), counts against the sandbox's host-call limit and is
recorded in the trajectory."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
# `typing` is only for the type checker: importing it costs milliseconds at `import rlm_rs`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable, Dict, List, Optional, Tuple

from ._exceptions import RlmInputError

# Names model code relies on (the reference's, and rlm's own answer functions).
RESERVED_TOOL_NAMES: frozenset = frozenset(
    {
        "llm_query",
        "llm_query_batched",
        "rlm_query",
        "rlm_query_batched",
        "SHOW_VARS",
        "answer",
        "context",
        "history",
        "FINAL",
        "FINAL_VAR",
        "contextMeta",
        "budget",
    }
)


@dataclass
class ToolInfo:
    """One custom tool: its name, what it is, and its description."""

    name: str
    value: Any
    description: Optional[str] = None

    @property
    def is_callable(self) -> bool:
        return callable(self.value)


def parse_tool_entry(name: str, entry: Any) -> ToolInfo:
    """A tool entry: a value, or ``{"tool": value, "description": "..."}``."""
    if isinstance(entry, dict) and "tool" in entry:
        description = entry.get("description")
        return ToolInfo(name, entry["tool"], description if isinstance(description, str) else None)
    return ToolInfo(name, entry, None)


def parse_custom_tools(custom_tools: Optional[Dict[str, Any]]) -> List[ToolInfo]:
    return [parse_tool_entry(name, entry) for name, entry in (custom_tools or {}).items()]


def extract_tool_value(entry: Any) -> Any:
    if isinstance(entry, dict) and "tool" in entry:
        return entry["tool"]
    return entry


def format_tools_for_prompt(custom_tools: Optional[Dict[str, Any]]) -> Optional[str]:
    """The tools as the system prompt lists them (None without tools)."""
    tools = parse_custom_tools(custom_tools)
    if not tools:
        return None
    lines = []
    for tool in tools:
        if tool.description:
            lines.append(f"- `{tool.name}`: {tool.description}")
        elif tool.is_callable:
            lines.append(f"- `{tool.name}`: A custom function")
        else:
            lines.append(f"- `{tool.name}`: A custom {type(tool.value).__name__} value")
    return "\n".join(lines)


def validate_custom_tools(custom_tools: Optional[Dict[str, Any]]) -> None:
    """Refuses reserved names (all of them named), as the reference does."""
    if custom_tools is None:
        return
    if not isinstance(custom_tools, dict):
        raise RlmInputError(
            f"error: custom tools must be a dict of name to tool, not {type(custom_tools).__name__}",
            2,
        )
    conflicts = sorted(set(custom_tools) & RESERVED_TOOL_NAMES)
    if conflicts:
        raise RlmInputError(
            f"Custom tools cannot override reserved REPL functions: {conflicts}. "
            f"Reserved names: {sorted(RESERVED_TOOL_NAMES)}",
            2,
        )
    for name in custom_tools:
        if not isinstance(name, str) or not name.isidentifier():
            raise RlmInputError(f"error: tool name {name!r} is not a Python identifier", 2)


def plain(value: Any, where: str) -> Any:
    """``value`` as JSON-like data (tuples become lists); ``TypeError`` naming ``where`` and
    the first part that is not plain data."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"{where} is {value!r}, which plain data cannot hold")
        return value
    if isinstance(value, (list, tuple)):
        return [plain(item, f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has a key {key!r} that is not a str")
            out[key] = plain(item, f"{where}[{key!r}]")
        return out
    raise TypeError(
        f"{where} is a {type(value).__name__}; plain data is str, int, float, bool, None, "
        "and lists and dicts of them"
    )


def _parameters(name: str, function: Callable[..., Any]) -> Dict[str, Any]:
    """The callable's signature as the sandbox binds it: parameters in order (with their
    defaults, which must be plain data), ``*args`` and ``**kwargs``."""
    import inspect  # here: only custom tools need it

    declared: Dict[str, Any] = {"kind": "function", "name": name, "parameters": []}
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        # No signature to read (some builtins): anything goes, as the callable decides.
        declared["rest"] = "args"
        declared["rest_keywords"] = "kwargs"
        return declared
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_POSITIONAL:
            declared["rest"] = parameter.name
        elif parameter.kind is parameter.VAR_KEYWORD:
            declared["rest_keywords"] = parameter.name
        else:
            entry: Dict[str, Any] = {"name": parameter.name}
            if parameter.default is not parameter.empty:
                try:
                    entry["default"] = plain(parameter.default, f"the default of {parameter.name}")
                except TypeError:
                    # A default model code cannot see (a sentinel object): the callable
                    # applies it itself when the argument is left out.
                    entry["default"] = None
                    entry["_omit_when_none"] = True
            declared["parameters"].append(entry)
    return declared


class ToolTable:
    """The callables of one run level, and how to call them with what the sandbox bound."""

    def __init__(self, tools: List[ToolInfo]) -> None:
        self.callables: Dict[str, Callable[..., Any]] = {}
        self.signatures: Dict[str, Dict[str, Any]] = {}
        self.declared: List[Dict[str, Any]] = []
        for tool in tools:
            if tool.is_callable:
                declared = _parameters(tool.name, tool.value)
                self.signatures[tool.name] = declared
                self.callables[tool.name] = tool.value
                sent = dict(declared)
                sent["parameters"] = [
                    {k: v for k, v in p.items() if not k.startswith("_")}
                    for p in declared["parameters"]
                ]
            else:
                try:
                    value = plain(tool.value, f"the value of tool {tool.name!r}")
                except TypeError as err:
                    raise RlmInputError(
                        f"error: custom tool {tool.name!r} is neither callable nor plain data: "
                        f"{err}",
                        2,
                    ) from None
                sent = {"kind": "value", "name": tool.name, "value": value}
            if tool.description:
                sent["description"] = tool.description
            self.declared.append(sent)

    def call(self, name: str, arguments: Dict[str, Any]) -> Any:
        """Calls tool ``name`` with the arguments the sandbox bound by parameter name."""
        function = self.callables[name]
        declared = self.signatures[name]
        kinds = _kinds(function)
        rest = declared.get("rest")
        positional: List[Any] = []
        keywords: Dict[str, Any] = {}
        for parameter in declared["parameters"]:
            value = arguments.get(parameter["name"])
            if parameter.get("_omit_when_none") and value is None:
                continue
            kind = kinds.get(parameter["name"], "either")
            # Before `*args` a parameter must be passed by position for the rest to follow.
            if kind == "positional" or (kind == "either" and rest):
                positional.append(value)
            else:
                keywords[parameter["name"]] = value
        if rest:
            positional.extend(arguments.get(rest) or [])
        rest_keywords = declared.get("rest_keywords")
        if rest_keywords:
            keywords.update(arguments.get(rest_keywords) or {})
        return function(*positional, **keywords)


def _kinds(function: Callable[..., Any]) -> Dict[str, str]:
    """Each parameter's kind: ``positional`` (only), ``keyword`` (only) or ``either``."""
    import inspect

    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return {}
    kinds = {}
    for p in parameters:
        if p.kind is p.POSITIONAL_ONLY:
            kinds[p.name] = "positional"
        elif p.kind is p.KEYWORD_ONLY:
            kinds[p.name] = "keyword"
        else:
            kinds[p.name] = "either"
    return kinds


def _exception_type(error: BaseException) -> str:
    """The name model code sees: the first builtin exception type in its class's ancestry that
    the sandbox knows; the class's own name otherwise (raised as ``Exception``)."""
    known = {
        "ValueError",
        "TypeError",
        "KeyError",
        "IndexError",
        "LookupError",
        "RuntimeError",
        "NameError",
        "TimeoutError",
        "ZeroDivisionError",
        "AttributeError",
        "AssertionError",
        "NotImplementedError",
        "FileNotFoundError",
        "PermissionError",
        "OSError",
    }
    for klass in type(error).__mro__:
        if klass.__name__ in known and klass.__module__ == "builtins":
            return klass.__name__
    return type(error).__name__


class Dispatcher:
    """Answers the sandbox's tool calls on the calling thread: ``(True, result)`` or
    ``(False, (exception type, message))``. A call that overruns its time limit gets a
    ``TimeoutError`` raised in this thread; Ctrl-C (``KeyboardInterrupt``) passes through and
    stops the run."""

    def __init__(self, tables: Dict[str, ToolTable]) -> None:
        self.tables = tables
        self.calls = 0

    def __call__(
        self, table: str, name: str, arguments: Dict[str, Any], seconds: float
    ) -> Tuple[bool, Any]:
        tools = self.tables.get(table) or self.tables.get("root")
        if tools is None or name not in tools.callables:
            return False, ("NameError", f"name {name!r} is not defined")
        self.calls += 1
        guard = _Deadline(seconds)
        try:
            with guard:
                result = tools.call(name, arguments)
        except _ToolTimeout:
            return False, ("TimeoutError", f"{name}() took longer than its time limit of {seconds:g} s")
        except Exception as error:  # the tool's own failure: model code sees it
            if guard.fired and isinstance(error, TimeoutError):
                return False, (
                    "TimeoutError",
                    f"{name}() took longer than its time limit of {seconds:g} s",
                )
            return False, (_exception_type(error), _message(error))
        try:
            return True, plain(result, f"the result of {name}()")
        except TypeError as err:
            return False, ("TypeError", str(err))


def _message(error: BaseException) -> str:
    """The exception's message as its own ``str()`` gives it; a ``KeyError``'s key as given
    (model code's ``KeyError`` quotes it again)."""
    if isinstance(error, KeyError) and len(error.args) == 1 and isinstance(error.args[0], str):
        return error.args[0]
    return str(error)


class _ToolTimeout(TimeoutError):
    """Raised asynchronously in the calling thread when a tool overruns its limit."""


class _Deadline:
    """Raises :class:`_ToolTimeout` in this thread when the block outlives ``seconds`` (in
    Python code; a call blocked inside C returns first)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.thread = threading.get_ident()
        self.lock = threading.Lock()
        self.running = False
        self.fired = False
        self.timer: Optional[threading.Timer] = None

    def __enter__(self) -> "_Deadline":
        self.running = True
        self.timer = threading.Timer(self.seconds, self._fire)
        self.timer.daemon = True
        self.timer.start()
        return self

    def _fire(self) -> None:
        with self.lock:
            if not self.running:
                return
            self.fired = True
            _set_async_exception(self.thread, _ToolTimeout)

    def __exit__(self, *exc: Any) -> None:
        with self.lock:
            self.running = False
            if self.timer is not None:
                self.timer.cancel()
            if self.fired:
                # Not delivered yet (the call returned first): take it back.
                _set_async_exception(self.thread, None)


def _set_async_exception(thread: int, exception: Any) -> None:
    import ctypes  # here: only a tool that overruns its limit needs it

    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread), ctypes.py_object(exception) if exception else ctypes.c_void_p(0)
    )
