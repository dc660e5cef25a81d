"""DSPy programs run their model code in rlm's sandbox: :class:`Interpreter` is a code
interpreter for ``dspy.RLM`` (and the other code-executing modules)::

    import dspy
    from rlm_rs.dspy import Interpreter

    rlm = dspy.RLM("context, question -> answer", interpreter_factory=Interpreter)

Code runs in rlm's worker process (the Monty interpreter, confined by Landlock and seccomp;
started in tens of milliseconds, no Deno or Pyodide), its variables persisting from one step to
the next. DSPy's tools — ``llm_query``, ``llm_query_batched``, the user's — run in the host
process, on the thread that called ``execute``; ``SUBMIT(...)`` ends the run with the output
fields. ``dspy`` itself is not imported here: the interpreter only speaks its protocol.
"""

from __future__ import annotations

import json
import keyword

from . import _core
from ._tools import _exception_type, _message, plain

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable, Dict, List, Optional, Tuple


class Interpreter:
    """A persistent sandboxed Python session with host tools (DSPy's ``CodeInterpreter``)."""

    # Shown to the model in DSPy's action prompt.
    execution_instructions = (
        "Code runs in rlm's sandbox: a safe subset of Python (no class inheritance, no `yield`, "
        "no `del`, no file, network or environment access; `re`, `json`, `math`, "
        "`collections`, `itertools`, `functools`, `datetime` are there). Variables and functions "
        "persist between steps. Host tools and SUBMIT are global functions taking plain data "
        "(str, int, float, bool, None, lists and dicts)."
    )

    def __init__(
        self,
        tools: "Optional[Dict[str, Callable[..., Any]]]" = None,
        output_fields: "Optional[List[Dict[str, Any]]]" = None,
        tool_timeout: float = 60.0,
        block_timeout: float = 60.0,
    ) -> None:
        self.tools: "Dict[str, Callable[..., Any]]" = dict(tools or {})
        self.output_fields = output_fields
        self.tool_timeout = tool_timeout
        self.block_timeout = block_timeout
        self._sandbox: Any = None
        self._bound: set = set()
        self._submitted: "Optional[Dict[str, Any]]" = None
        self._failure: "Optional[Tuple[str, str]]" = None

    def start(self) -> None:
        if self._sandbox is None:
            self._sandbox = _core._native.Sandbox(
                tool_timeout=self.tool_timeout, block_timeout=self.block_timeout
            )

    def execute(self, code: str, variables: "Optional[Dict[str, Any]]" = None) -> Any:
        """Runs ``code`` after binding ``variables``; returns the printed output (``None`` for
        none), or DSPy's ``FinalOutput`` when the code called ``SUBMIT``. Raises
        ``SyntaxError`` for code that does not parse and DSPy's ``CodeExecutionError`` for
        one that raised."""
        from dspy.primitives.code_interpreter import CodeExecutionError, CodeInterpreterError, FinalOutput

        self.start()
        prelude = self._prelude(variables or {}, CodeInterpreterError)
        self._submitted = None
        if prelude:
            _, _, error = self._sandbox.execute(prelude, self._dispatch)
            if error:
                raise CodeInterpreterError(f"rlm_rs could not bind the variables or tools: {error}")
        try:
            stdout, stderr, error = self._sandbox.execute(code, self._dispatch)
        except RuntimeError as failure:
            raise CodeInterpreterError(str(failure)) from None
        if self._submitted is not None:
            return FinalOutput(self._submitted)
        if error:
            text = error if not stderr else f"{stderr.rstrip()}\n{error}"
            if error.lstrip().startswith("SyntaxError"):
                raise SyntaxError(text)
            raise CodeExecutionError(text)
        output = stdout if not stderr else stdout + stderr
        return output or None

    def __call__(self, code: str, variables: "Optional[Dict[str, Any]]" = None) -> Any:
        return self.execute(code, variables)

    def shutdown(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
            self._bound = set()

    def __enter__(self) -> "Interpreter":
        self.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.shutdown()

    def _prelude(self, variables: "Dict[str, Any]", error: Any) -> str:
        """Code binding ``variables`` (plain data, as literals) and a wrapper for each tool
        not bound yet (and ``SUBMIT``)."""
        lines = []
        for name in list(self.tools) + ["SUBMIT"]:
            if not name.isidentifier() or keyword.iskeyword(name):
                raise error(f"tool name {name!r} is not a Python identifier")
            if name not in self._bound:
                lines.append(
                    f"def {name}(*args, **kwargs):\n    return __rlm_tool__({name!r}, *args, **kwargs)"
                )
                self._bound.add(name)
        for name, value in variables.items():
            if not (isinstance(name, str) and name.isidentifier()) or keyword.iskeyword(name):
                raise error(f"variable name {name!r} is not a Python identifier")
            if name in self.tools or name == "SUBMIT":
                raise error(f"variable {name!r} has a tool's name")
            try:
                literal = json.dumps(plain(value, f"variable {name!r}"))
            except TypeError as problem:
                raise error(str(problem)) from None
            # JSON text read back in the sandbox: exactly the value, whatever its size.
            lines.append(f"{name} = json.loads({json.dumps(literal)})")
        if any(" = json.loads(" in line for line in lines):
            lines.insert(0, "import json")
        return "\n".join(lines)

    def _dispatch(self, table: str, name: str, arguments: "Dict[str, Any]", seconds: float) -> Any:
        """A tool call from model code, on this thread: ``(True, result)`` or ``(False,
        (exception type, message))``."""
        args = arguments.get("args") or []
        kwargs = arguments.get("kwargs") or {}
        try:
            if name == "SUBMIT":
                self._submitted = self._submission(args, kwargs)
                return True, None
            tool = self.tools.get(name)
            if tool is None:
                return False, ("NameError", f"name {name!r} is not defined")
            args, kwargs = _by_name(tool, args, kwargs)
            return True, plain(tool(*args, **kwargs), f"the result of {name}()")
        except Exception as failure:
            return False, (_exception_type(failure), _message(failure))

    def _submission(self, args: "List[Any]", kwargs: "Dict[str, Any]") -> "Dict[str, Any]":
        if self.output_fields is None:
            if len(args) != 1 or kwargs:
                raise TypeError("SUBMIT takes exactly one value")
            return {"output": args[0]}
        names = [field["name"] for field in self.output_fields]
        if args and kwargs:
            raise TypeError("SUBMIT takes positional or keyword values, not both")
        values = dict(zip(names, args)) if args else dict(kwargs)
        if set(values) != set(names) or len(args) > len(names):
            raise TypeError(f"SUBMIT needs exactly the fields {names}, got {sorted(values)}")
        return values


def _by_name(tool: "Callable[..., Any]", args: "List[Any]", kwargs: "Dict[str, Any]") -> Any:
    """Positional arguments passed by name where the signature names them (DSPy wraps each
    tool as ``invoke(**kwargs)`` carrying the original's signature)."""
    if not args:
        return args, kwargs
    import inspect

    try:
        signature = inspect.signature(tool)
    except (TypeError, ValueError):
        return args, kwargs
    bound = signature.bind(*args, **kwargs)
    positional: "List[Any]" = []
    named: "Dict[str, Any]" = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            positional.extend(value)
        elif kind is inspect.Parameter.POSITIONAL_ONLY:
            positional.append(value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        else:
            named[name] = value
    return positional, named
