# The CPython backend's worker: speaks the same JSON-lines protocol as the Monty worker.
# Started as `unshare --user --map-root-user --net --ipc --uts python3 -I -S -c <this file>` with
# an empty environment. Before any model code runs it loads the contexts, imports the modules model
# code may use, caps its memory, and locks itself out of the file system and network with Landlock.
import builtins, collections, ctypes, datetime, functools, io, itertools, json, math, os
import linecache, re, resource, signal, statistics, string, sys, textwrap, traceback

_proto_in = sys.stdin
_proto_out = sys.stdout
_MODULES = ("collections", "datetime", "functools", "itertools", "json", "math", "re",
            "statistics", "string", "textwrap")


def _send(message):
    _proto_out.write(json.dumps(message) + "\n")
    _proto_out.flush()


def _receive():
    line = _proto_in.readline()
    return json.loads(line) if line else None


# ---- protections -------------------------------------------------------------------------

def _landlock():
    """Denies every file-system access (and TCP bind/connect where supported) from now on."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return "Landlock is not available on this kernel"
    fs_rights = (1 << 13) - 1          # ABI 1: execute .. make_sym
    if abi >= 2: fs_rights |= 1 << 13  # refer
    if abi >= 3: fs_rights |= 1 << 14  # truncate
    if abi >= 5: fs_rights |= 1 << 15  # ioctl_dev
    net_rights = 3 if abi >= 4 else 0  # bind_tcp | connect_tcp
    scoped = 3 if abi >= 6 else 0      # abstract unix sockets | signals

    class Attr(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    attr = Attr(fs_rights, net_rights, scoped)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = libc.syscall(444, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return "landlock_create_ruleset failed: " + os.strerror(ctypes.get_errno())
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return "prctl(PR_SET_NO_NEW_PRIVS) failed"
    if libc.syscall(446, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        return "landlock_restrict_self failed: " + os.strerror(ctypes.get_errno())
    os.close(ruleset)
    return None


def _limit_memory(extra_bytes):
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    cap = mapped + extra_bytes
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


# ---- session -------------------------------------------------------------------------------

class _Timeout(BaseException):
    pass


class _CappedOutput(io.TextIOBase):
    def __init__(self, cap):
        self.parts, self.kept, self.cap, self.dropped = [], 0, cap, 0

    def write(self, text):
        room = self.cap - self.kept
        if len(text) <= room:
            self.parts.append(text)
            self.kept += len(text)
        else:
            self.parts.append(text[:room])
            self.kept = self.cap
            self.dropped += len(text) - room
        return len(text)


class _Session:
    def __init__(self, start):
        self.limits = start["limits"]
        self.final = None
        self.denied = []
        self.host_items = 0
        self.texts = []
        # `re` and `json` are imported already, as in the Monty worker (the prompt says so).
        self.globals = {"__name__": "__main__", "__builtins__": builtins, "re": re, "json": json}
        contexts = start["contexts"]
        several = len(contexts) > 1
        for index, context in enumerate(contexts):
            # Invalid UTF-8 reads as U+FFFD, as in the Monty worker.
            with open(context["path"], encoding="utf-8", errors="replace") as handle:
                value = handle.read() if context["format"] == "text" else json.load(handle)
            self.texts.append(value if isinstance(value, str) else None)
            self.globals["context_%d" % index if several else "context"] = value
        if several:
            self.globals["context"] = self.globals["context_0"]
        if start.get("meta") is not None:
            self.globals["contextMeta"] = start["meta"]
        self.line_cache = {}
        for name in ("llm_query", "llm_query_batched", "rlm_query", "rlm_query_batched", "FINAL_VAR",
                     "FINAL", "SHOW_VARS", "find_all", "grep", "line_range", "line_count",
                     "chunk_text", "slice_text"):
            self.globals[name] = getattr(self, "_" + name)
        # The host's further functions shadow native helpers of the same name.
        for spec in start.get("functions") or []:
            self.globals[spec["name"]] = self._function(spec)
        self.reserved = set(self.globals)
        signal.signal(signal.SIGALRM, self._on_timer)

    def _on_timer(self, *_):
        raise _Timeout("time limit exceeded")

    # -- host functions
    def _host(self, kind, prompts, model):
        if model is not None and not isinstance(model, str):
            raise TypeError("model must be str or None")
        self.host_items += len(prompts)
        if self.host_items > self.limits["max_host_calls"]:
            raise RuntimeError("host call limit reached (%d per execution)" % self.limits["max_host_calls"])
        if not prompts:
            return []
        # The time limit counts interpreter time only: pause the timer while the host works.
        left = signal.setitimer(signal.ITIMER_REAL, 0)[0]
        _send({"type": "host_call", "kind": kind, "prompts": prompts, "model": model})
        reply = _receive()
        if left > 0:
            signal.setitimer(signal.ITIMER_REAL, left)
        results = (reply or {}).get("results") or []
        answers = [item.get("Ok") if "Ok" in item else "Error: " + str(item.get("Err")) for item in results]
        return answers + ["Error: the host returned no answer"] * (len(prompts) - len(answers))

    def _function(self, spec):
        name, parameters = spec["name"], spec["parameters"]

        def call(*args, **kwargs):
            if len(args) > len(parameters):
                raise TypeError("%s() takes at most %d positional arguments (%d given)"
                                % (name, len(parameters), len(args)))
            bound = {parameter["name"]: value for parameter, value in zip(parameters, args)}
            for key, value in kwargs.items():
                if all(parameter["name"] != key for parameter in parameters):
                    raise TypeError("%s() got an unexpected keyword argument '%s'" % (name, key))
                if key in bound:
                    raise TypeError("%s() got multiple values for argument '%s'" % (name, key))
                bound[key] = value
            for parameter in parameters:
                if parameter["name"] not in bound:
                    if parameter["required"]:
                        raise TypeError("%s() missing required argument '%s'" % (name, parameter["name"]))
                    bound[parameter["name"]] = parameter["default"]
            self.host_items += 1
            if self.host_items > self.limits["max_host_calls"]:
                raise RuntimeError("host call limit reached (%d per execution)" % self.limits["max_host_calls"])
            left = signal.setitimer(signal.ITIMER_REAL, 0)[0]
            _send({"type": "function_call", "name": name, "arguments": bound})
            reply = _receive() or {}
            if left > 0:
                signal.setitimer(signal.ITIMER_REAL, left)
            result = reply.get("result") or {"Err": {"kind": "RuntimeError", "message": "the host is gone"}}
            if "Ok" in result:
                return result["Ok"]
            error = result.get("Err") or {}
            raise getattr(builtins, error.get("kind", "RuntimeError"), RuntimeError)(error.get("message", ""))

        call.__name__ = name
        return call

    def _single(self, kind, prompt, model):
        if not isinstance(prompt, str):
            raise TypeError("%s(): 'prompt' must be str, not %s" % (kind, type(prompt).__name__))
        return self._host(kind, [prompt], model)[0]

    def _batch(self, kind, prompts, model):
        if not isinstance(prompts, (list, tuple)) or not all(isinstance(p, str) for p in prompts):
            raise TypeError("%s(): 'prompts' must be a list of str" % kind)
        return self._host(kind, list(prompts), model)

    def _llm_query(self, prompt, model=None): return self._single("llm_query", prompt, model)
    def _rlm_query(self, prompt, model=None): return self._single("rlm_query", prompt, model)
    def _llm_query_batched(self, prompts, model=None): return self._batch("llm_query_batched", prompts, model)
    def _rlm_query_batched(self, prompts, model=None): return self._batch("rlm_query_batched", prompts, model)

    def _FINAL_VAR(self, name):
        if isinstance(name, str) and name.isidentifier():
            self.final = ("variable", name)
        else:
            self.final = ("value", str(name))

    def _FINAL(self, answer):
        self.final = ("value", str(answer))

    def _SHOW_VARS(self):
        return {v["name"]: v["type_name"] for v in self.variables()}

    # -- helpers (CPython slices in O(1), so plain Python is fast enough here)
    def _text(self, text):
        if text is None:
            text = 0
        if isinstance(text, str):
            return text
        if isinstance(text, int) and 0 <= text < len(self.texts):
            if self.texts[text] is None:
                raise TypeError("context %d is not a string; pass text=... explicitly" % text)
            return self.texts[text]
        raise ValueError("there is no context %r" % (text,))

    def _lines_of(self, text):
        key = id(text)
        if key not in self.line_cache:
            self.line_cache[key] = text.splitlines()
        return self.line_cache[key]

    def _find_all(self, pattern, text=None, max_matches=10000):
        found = []
        for match in re.finditer(pattern, self._text(text)):
            if len(found) >= max_matches:
                break
            found.append((match.start(), match.end(), match.group(0)))
        return found

    def _grep(self, pattern, context_lines=0, text=None, max_matches=500):
        lines = self._lines_of(self._text(text))
        compiled, out, until, hits = re.compile(pattern), [], None, 0
        for index, line in enumerate(lines):
            if hits >= max_matches:
                break
            if not compiled.search(line):
                continue
            hits += 1
            first = max(index - context_lines, until or 0)
            if context_lines and until is not None and first > until:
                out.append("--\n")
            for shown in range(first, min(index + context_lines + 1, len(lines))):
                if shown > index and compiled.search(lines[shown]):
                    break
                out.append("%d%s %s\n" % (shown, ":" if shown == index else "-", lines[shown]))
                until = shown + 1
        return "".join(out)

    def _line_range(self, start, end=None, text=None):
        return self._lines_of(self._text(text))[start:end]

    def _line_count(self, text=None):
        return len(self._lines_of(self._text(text)))

    def _chunk_text(self, size, overlap=0, text=None):
        if size <= 0 or not 0 <= overlap < size:
            raise ValueError("chunk_text(): need size > 0 and 0 <= overlap < size")
        text, step, pieces, start = self._text(text), size - overlap, [], 0
        while True:
            pieces.append(text[start:start + size])
            if start + size >= len(text):
                return pieces
            start += step

    def _slice_text(self, start, end, text=None):
        return self._text(text)[start:end]

    # -- requests
    def variables(self):
        found = []
        for name, value in sorted(self.globals.items()):
            if name.startswith("_") or (name in self.reserved and not name.startswith("context")):
                continue
            if type(value).__name__ in ("module", "builtin_function_or_method"):
                continue
            found.append({"name": name, "type_name": type(value).__name__})
        return found

    def variable(self, name, use_repr):
        if name not in self.globals:
            return None
        try:
            return {"Ok": (repr if use_repr else str)(self.globals[name])}
        except Exception as error:  # noqa: BLE001 - reported to the host
            return {"Err": "%s: %s" % (type(error).__name__, error)}

    def execute(self, code):
        self.final, self.denied, self.host_items = None, [], 0
        output = _CappedOutput(self.limits["output_chars"])
        report = {"stdout": "", "stdout_truncated_chars": 0, "stderr": "", "exception": None,
                  "final_answer": None, "denied_operations": []}
        timeout = self.limits["timeout"]
        seconds = timeout["secs"] + timeout["nanos"] / 1e9
        sys.stdout = sys.stderr = output
        sys.setrecursionlimit(self.limits["recursion_depth"] + 50)
        # Lets tracebacks quote the failing line of this cell.
        linecache.cache["<cell>"] = (len(code), None, code.splitlines(True), "<cell>")
        try:
            compiled = compile(code, "<cell>", "exec")
            signal.setitimer(signal.ITIMER_REAL, seconds)
            try:
                exec(compiled, self.globals)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as error:  # noqa: BLE001 - everything is reported to the model
            report["exception"], report["stderr"] = self._describe(error)
        finally:
            sys.stdout, sys.stderr = _proto_out, sys.__stderr__
        report["stdout"] = "".join(output.parts)
        report["stdout_truncated_chars"] = output.dropped
        if self.final is not None:
            kind, value = self.final
            if kind == "value":
                report["final_answer"] = {"variable": None, "value": value}
            elif name_value := self.variable(value, False):
                if "Ok" in name_value:
                    report["final_answer"] = {"variable": value, "value": name_value["Ok"]}
            elif report["exception"] is None:
                message = "FINAL_VAR('%s'): no variable named '%s'; assign it first, or use FINAL(text)" % (value, value)
                report["exception"] = {"kind": "NameError", "message": message, "line": None}
                report["stderr"] += "NameError: " + message + "\n"
        return report

    def _describe(self, error):
        if isinstance(error, _Timeout):
            kind = "TimeoutError"
        else:
            kind = type(error).__name__
        if isinstance(error, (PermissionError, OSError)) and getattr(error, "filename", None):
            self.denied.append("%s(%s)" % (kind, error.filename))
        line = None
        if isinstance(error, SyntaxError):
            line = error.lineno
        else:
            for frame in traceback.extract_tb(error.__traceback__):
                if frame.filename == "<cell>":
                    line = frame.lineno
        # Show only the model's own frames, not the worker's.
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == "<cell>"]
        message = str(error) if not isinstance(error, _Timeout) else "time limit exceeded"
        text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) if frames else ""
        if isinstance(error, _Timeout):
            text += "TimeoutError: time limit exceeded\n"
        else:
            text += "".join(traceback.format_exception_only(type(error), error))
        return {"kind": kind, "message": message, "line": line}, text


def _main():
    start = _receive()
    if not start or start.get("type") != "start":
        _send({"type": "start_failed", "message": "expected a start message"})
        return
    try:
        session = _Session(start)
        for module in _MODULES:
            __import__(module)
        if start.get("os_limits", True):
            extra = start["limits"]["memory_bytes"]
            _limit_memory(extra)
        problem = _landlock()
        if problem is not None and not start.get("allow_reduced_protection"):
            _send({"type": "start_failed", "message": problem + " (refusing to run unprotected)"})
            return
    except Exception as error:  # noqa: BLE001 - reported to the host
        _send({"type": "start_failed", "message": "%s: %s" % (type(error).__name__, error)})
        return
    _send({"type": "ready", "reduced_protection": problem})
    while True:
        request = _receive()
        if request is None:
            return
        kind = request.get("type")
        if kind == "execute":
            report = session.execute(request["code"])
            report["denied_operations"] = session.denied
            _send({"type": "done", "report": report})
        elif kind == "variable":
            _send({"type": "value", "value": session.variable(request["name"], request["repr"])})
        elif kind == "variables":
            _send({"type": "variables", "variables": session.variables()})
        else:
            _send({"type": "start_failed", "message": "unexpected message"})


_main()
