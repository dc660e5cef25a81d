"""The rest of the toolkit: the store (load, search, grep, chunks), ``inspect``, ``query``,
``view`` and the prompt pipeline. Each calls the operation in this process with its request's
fields and returns its records as Python objects (dataclasses for the common ones, dicts
otherwise, with every field the CLI's ``--json`` prints)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
# `typing` is only for the type checker: importing it costs milliseconds at `import rlm_rs`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from . import _core
from ._core import path_arg

if TYPE_CHECKING:  # pragma: no cover
    from ._core import PathLike

SEARCH_MODES = ("bm25", "semantic", "hybrid")


@dataclass
class SearchHit:
    """One search result: the chunk, where it is, its score and a snippet."""

    rank: int
    chunk_id: int
    buffer: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    mode: str
    highlights: List[Tuple[int, int]] = field(default_factory=list)


@dataclass
class GrepMatch:
    """A line that matched (``context`` lines around it have ``is_context`` set)."""

    buffer: str
    line: int
    text: str
    matches: List[Tuple[int, int]] = field(default_factory=list)
    is_context: bool = False


@dataclass
class QueryResult:
    """What :func:`query` returns: the cited report, the findings it was written from, the
    plan, usage and the log. ``status`` is ``answered``, ``partial`` or ``no_findings`` as
    the CLI says it; ``citations_unknown`` lists chunk ids the report cited but never read."""

    status: str
    report: str
    findings: List[Dict[str, Any]]
    plan: Dict[str, Any]
    usage: Dict[str, Any]
    run_id: str
    log_path: Optional[str]
    chunks_selected: int = 0
    chunks_analyzed: int = 0
    citations_unknown: List[int] = field(default_factory=list)
    record: Dict[str, Any] = field(default_factory=dict, repr=False)

    def _repr_html_(self) -> Optional[str]:
        """The viewer's page of the query, inline in a notebook (None without a log)."""
        if not self.log_path or not os.path.exists(self.log_path):
            return None
        from ._types import RunLog

        return RunLog(self.log_path)._repr_html_()


def _ranges(items: Iterable[Dict[str, Any]]) -> List[Tuple[int, int]]:
    return [(int(r["start"]), int(r["end"])) for r in items]


def _scope(buffers: Optional[Sequence[str]], path: Optional[str]) -> Dict[str, Any]:
    return {"buffers": [str(buffer) for buffer in buffers or ()], "path": path}


class Page(list):
    """One page of an answer that reads the store: a list, with ``next_cursor`` (pass it back
    as ``cursor=`` for the records that follow; ``None`` when nothing was left out) and the
    ``notes`` that say what was left out."""

    next_cursor: Optional[str] = None
    notes: List[str] = []


class Text(str):
    """Text read from the store; ``rest`` names the range that continues it (``{"buffer",
    "lines"}`` or ``{"buffer", "bytes"}``) when it stopped at the reply ceiling, else ``None``."""

    rest: Optional[Dict[str, Any]] = None


def _page(items: Iterable[Any], finished: "_core.Finished") -> Page:
    page = Page(items)
    page.next_cursor = finished.next_cursor
    page.notes = list(finished.notes)
    return page


class Store:
    """A store directory (created by the first :meth:`load`), or a PostgreSQL store named by a
    ``postgres://USER@HOST/DATABASE?schema=NAME`` URL (password in the URL, ``PGPASSWORD`` or
    ``~/.pgpass``): the same store the ``rlm`` commands use with ``--store``. Each answer that
    reads it (search, grep, buffers, chunks, peek) holds at most ``max_reply_bytes`` of JSON
    (default 1 MiB): lists come as :class:`Page` with a ``next_cursor`` for the rest, texts as
    :class:`Text` with ``rest``."""

    def __init__(self, path: PathLike = ".rlm", max_reply_bytes: Optional[int] = None) -> None:
        text = path_arg(path)
        # A URL is the server's address, not a path: kept as written (abspath would fold it).
        self.path = text if _is_store_url(text) else os.path.abspath(text)
        self.max_reply_bytes = max_reply_bytes

    def _call(self, operation: str, request: Dict[str, Any], allow_failed: bool = False) -> "_core.Finished":
        return _core.call(
            operation,
            request,
            store=self.path,
            allow_failed=allow_failed,
            max_reply_bytes=self.max_reply_bytes,
        )

    def _records(self, operation: str, request: Dict[str, Any]) -> List[Dict[str, Any]]:
        return self._call(operation, request).records

    def _text(self, request: Dict[str, Any]) -> Text:
        records = self._records("peek", request)
        text = Text("".join(r.get("text", "") for r in records))
        text.rest = next((r["rest"] for r in records if r.get("rest")), None)
        return text

    def load(
        self,
        *paths: PathLike,
        name: Optional[str] = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        embed: bool = False,
        hidden: bool = False,
        no_ignore: bool = False,
    ) -> Dict[str, Any]:
        """Loads files and directories (walked as ``rlm load`` walks them: ``.gitignore``
        honoured, binaries skipped). Returns ``{"loaded": [...], "unchanged": [...],
        "skipped": [...], "removed": [...]}``."""
        if not paths:
            raise _core.RlmInputError("error: load needs at least one path", 2)
        request = {
            "paths": [path_arg(path) for path in paths],
            "name": name,
            "include": list(include),
            "exclude": list(exclude),
            "embed": embed,
            "no_embed": not embed,
            "hidden": hidden,
            "no_ignore": no_ignore,
        }
        return _only(self._records("load", request), "load")

    def search(
        self,
        query: str,
        mode: str = "bm25",
        k: Optional[int] = None,
        buffers: Optional[Sequence[str]] = None,
        path: Optional[str] = None,
        *,
        top: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Page:
        """The ``k`` best chunks for ``query`` (default 10; ``top`` is an older name):
        ``mode`` is ``bm25``, ``semantic`` or ``hybrid`` (the last two need embeddings:
        ``load(..., embed=True)``)."""
        if mode not in SEARCH_MODES:
            raise _core.RlmInputError(
                f"error: unknown search mode {mode!r}\nhint: modes: {', '.join(SEARCH_MODES)}", 2
            )
        count = _count(k, top, "top")
        request = {"query": query, "mode": mode, "k": 10 if count is None else count, **_scope(buffers, path)}
        if cursor is not None:
            request["cursor"] = cursor
        finished = self._call("search", request)
        return _page([
            SearchHit(
                rank=int(r["rank"]),
                chunk_id=int(r["chunk_id"]),
                buffer=r["buffer"],
                start_line=int(r["start_line"]),
                end_line=int(r["end_line"]),
                score=float(r["score"]),
                snippet=r["snippet"],
                mode=r["mode"],
                highlights=_ranges(r.get("highlights") or []),
            )
            for r in finished.records
            if r.get("type") == "hit"
        ], finished)

    def grep(
        self,
        pattern: str,
        buffers: Optional[Sequence[str]] = None,
        path: Optional[str] = None,
        context: int = 0,
        cursor: Optional[str] = None,
    ) -> Page:
        """Lines matching the regular expression ``pattern`` (Rust regex syntax), with
        ``context`` lines around each; a :class:`Page` (pass its ``next_cursor`` back as
        ``cursor`` for the lines that follow)."""
        request = {"pattern": pattern, "context": context, **_scope(buffers, path)}
        if cursor is not None:
            request["cursor"] = cursor
        # Nothing matching is an empty list, not an error (the CLI's exit code 1).
        finished = self._call("grep", request, allow_failed=True)
        found: List[GrepMatch] = []
        for r in finished.records:
            if r.get("type") == "match":
                found.append(
                    GrepMatch(r["buffer"], int(r["line"]), r["text"], _ranges(r["matches"]))
                )
            elif r.get("type") == "context":
                found.append(GrepMatch(r["buffer"], int(r["line"]), r["text"], is_context=True))
        return _page(found, finished)

    def buffers(self, cursor: Optional[str] = None) -> Page:
        """Every buffer: id, name, path, bytes, lines, chunks, ... (a :class:`Page`)."""
        finished = self._call("list", {} if cursor is None else {"cursor": cursor})
        return _page([r for r in finished.records if r.get("type") == "buffer"], finished)

    def chunks(self, buffer: str, cursor: Optional[str] = None) -> Page:
        """The chunk table of one buffer (name or id): each chunk's id and line range (a
        :class:`Page`)."""
        request: Dict[str, Any] = {"buffer": str(buffer), "chunks": True}
        if cursor is not None:
            request["cursor"] = cursor
        finished = self._call("show", request)
        return _page([r for r in finished.records if r.get("type") == "chunk"], finished)

    def chunk(self, chunk_id: int) -> Text:
        """The text of one chunk (an id from :meth:`search` or :meth:`chunks`); ``rest`` says
        where the rest is when it was longer than one answer."""
        return self._text({"chunk": int(chunk_id)})

    def peek(self, buffer: str, lines: Tuple[int, int]) -> Text:
        """Lines ``lines[0]`` to ``lines[1]`` (1-based, inclusive) of a buffer; ``rest`` says
        which lines follow when they were more than one answer holds."""
        start, end = lines
        return self._text({"buffer": str(buffer), "lines": f"{start}:{end}"})

    def delete(self, buffer: str) -> None:
        """Removes one buffer (name or id) from the store."""
        self._records("delete", {"buffers": [str(buffer)]})

    def __repr__(self) -> str:
        return f"Store({_without_password(self.path)!r})"


def _count(k: Optional[int], alias: Optional[int], alias_name: str) -> Optional[int]:
    """The result count, given as ``k`` or by its older name."""
    if k is not None and alias is not None and k != alias:
        raise _core.RlmInputError(
            f"error: k={k} and {alias_name}={alias} are the same count; give one", 2
        )
    return k if k is not None else alias


def _only(records: List[Dict[str, Any]], kind: str) -> Dict[str, Any]:
    for record in records:
        if record.get("type") == kind:
            return {k: v for k, v in record.items() if k != "type"}
    raise _core.RlmError(f"error: the command printed no {kind} record (a bug in rlm)")


def inspect(path: PathLike, sample_chars: int = 200) -> Dict[str, Any]:
    """The metadata ``rlm inspect`` prints for a file: format, size in bytes, characters and
    lines, records and fields for structured data, a sample."""
    records = _core.call("inspect", {"paths": [path_arg(path)], "sample_chars": sample_chars}).records
    return _only(records, "metadata")


def query(
    question: str,
    store: "Store | PathLike" = ".rlm",
    model: Optional[str] = None,
    buffers: Optional[Sequence[str]] = None,
    path: Optional[str] = None,
    mode: Optional[str] = None,
    k: Optional[int] = None,
    max_cost: Optional[float] = None,
    max_tokens: Optional[int] = None,
    timeout: Optional[float] = None,
    log_dir: Optional[PathLike] = None,
    extra_flags: Sequence[str] = (),
    *,
    subcall_model: Optional[str] = None,
    record: Optional[PathLike] = None,
    replay: Optional[PathLike] = None,
    top_k: Optional[int] = None,
    verbose: bool = False,
    on_event: Optional[_core.EventCallback] = None,
    **fields: Any,
) -> QueryResult:
    """Plans searches for ``question``, reads the chunks they find with extractor calls and
    writes a report citing the chunks it used (``rlm query``). ``k`` is the most chunks
    analysed (``top_k`` is an older name); ``subcall_model`` reads them, ``record``/``replay``
    write or answer from a recording of every model call, as for :class:`RLM`. Any other field
    of the query's request may be given by name (``skip_plan=True``); ``extra_flags`` takes
    them as the CLI's flags. Quiet unless ``verbose`` (progress lines on stderr);
    ``on_event(kind, fields)`` hears every event."""
    location = store.path if isinstance(store, Store) else os.path.abspath(path_arg(store))
    request: Dict[str, Any] = {
        "question": question,
        **_scope(buffers, path),
        "model": model,
        "mode": mode,
        "k": _count(k, top_k, "top_k"),
        "max_cost": max_cost,
        "max_tokens": max_tokens,
        "timeout": timeout,
        "log": None if log_dir is None else path_arg(log_dir),
        "subcall_model": subcall_model,
        "record": None if record is None else path_arg(record),
        "replay": None if replay is None else path_arg(replay),
    }
    request.update(_core.flags_to_fields(extra_flags, "query"))
    request.update(fields)

    def hear(kind: str, event: Dict[str, Any]) -> None:
        if verbose and kind in ("info", "note", "warning", "problem", "query"):
            import sys

            print(f"rlm_rs: {event.get('text') or event.get('event')}", file=sys.stderr, flush=True)
        if on_event is not None:
            on_event(kind, event)

    listening = verbose or on_event is not None
    finished = _core.call(
        "query", request, store=location, allow_failed=True, on_event=hear if listening else None
    )
    result = next((r for r in finished.records if r.get("type") == "result"), None)
    if result is None:
        raise _core._failure(finished.status or 1, finished.problems)
    return QueryResult(
        status=result.get("status", ""),
        report=result.get("report", ""),
        findings=list(result.get("findings") or []),
        plan=dict(result.get("plan") or {}),
        usage=dict(result.get("usage") or {}),
        run_id=result.get("run_id", ""),
        log_path=result.get("log"),
        chunks_selected=int(result.get("chunks_selected") or 0),
        chunks_analyzed=int(result.get("chunks_analyzed") or 0),
        citations_unknown=[int(c) for c in result.get("citations_unknown") or []],
        record=result,
    )


async def aquery(question: str, **kwargs: Any) -> QueryResult:
    """:func:`query` for ``asyncio``: runs on a worker thread, the event loop free."""
    import asyncio  # here, not at import: asyncio costs tens of milliseconds to import

    return await asyncio.to_thread(query, question, **kwargs)


def view(log: PathLike, output: Optional[PathLike] = None) -> str:
    """Writes the HTML page of a run or query log (``rlm view``) and returns its path."""
    request = {"run": path_arg(log), "output": None if output is None else path_arg(output)}
    for record in _core.call("view", request).records:
        if isinstance(record.get("path"), str):
            return record["path"]
    raise _core.RlmError("error: rlm view gave no page path (a bug in rlm)")


class PromptAssembler:
    """The prompt pipeline for coding agents (``rlm prompt build``): a system section, the
    stage's instructions, the conversation (its older part summarized by a model when it is
    long) and material by priority — notes, ADRs, sources, logs, test results — within token
    budgets.

    >>> assembler = PromptAssembler(stage="coding", sources=["src/**/*.rs"])  # doctest: +SKIP
    >>> messages = assembler.build(history)["messages"]                        # doctest: +SKIP
    """

    def __init__(
        self,
        stage: str = "coding",
        notes: Sequence[PathLike] = (),
        adr: Sequence[PathLike] = (),
        sources: Sequence[PathLike] = (),
        build_logs: Sequence[PathLike] = (),
        pod_logs: Sequence[PathLike] = (),
        test_results: Sequence[PathLike] = (),
        library: Sequence[PathLike] = (),
        budget_total: Optional[int] = None,
        model: Optional[str] = None,
        tokenizer: Optional[str] = None,
        extra_flags: Sequence[str] = (),
    ) -> None:
        self.stage = stage
        self.material: Dict[str, List[str]] = {
            "notes": [path_arg(p) for p in notes],
            "adr": [path_arg(p) for p in adr],
            "sources": [path_arg(p) for p in sources],
            "build_logs": [path_arg(p) for p in build_logs],
            "pod_logs": [path_arg(p) for p in pod_logs],
            "test_results": [path_arg(p) for p in test_results],
            "library": [path_arg(p) for p in library],
        }
        self.budget_total = budget_total
        self.model = model
        self.tokenizer = tokenizer
        self.extra_flags = list(extra_flags)

    def _request(self, history: Optional[Sequence[Dict[str, Any]]]) -> Dict[str, Any]:
        request: Dict[str, Any] = {
            "stage": self.stage,
            "notes": self.material["notes"],
            "adr": self.material["adr"],
            "source": self.material["sources"],
            "build_log": self.material["build_logs"],
            "pod_log": self.material["pod_logs"],
            "test_results": self.material["test_results"],
            "library": self.material["library"],
            "budget_total": self.budget_total,
            "model": self.model,
            "tokenizer": self.tokenizer,
            "messages": None if history is None else [dict(m) for m in history],
        }
        request.update(_core.flags_to_fields(self.extra_flags, "prompt_build"))
        return request

    def build(self, history: Optional[Sequence[Dict[str, Any]]] = None) -> Dict[str, Any]:
        """The prompt for one agent turn: ``{"messages": [system, user], "plan": {...}}``,
        ``history`` being ``{"role", "content"}`` messages."""
        request = {"action": "build", **self._request(history)}
        built: Dict[str, Any] = {}
        for record in _core.call("prompt", request).records:
            if record.get("type") == "prompt":
                built["messages"] = record["messages"]
            elif record.get("type") == "plan":
                built["plan"] = {k: v for k, v in record.items() if k != "type"}
        return built

    def plan(self, history: Optional[Sequence[Dict[str, Any]]] = None) -> Dict[str, Any]:
        """What :meth:`build` would put in, summarize and spend, without calling a model."""
        request = {"action": "plan", **self._request(history)}
        records = _core.call("prompt", request).records
        return records[0] if len(records) == 1 else {"records": records}


def _is_store_url(text: str) -> bool:
    return text.startswith(("postgres://", "postgresql://"))


def _without_password(text: str) -> str:
    """A store URL with its password (if it carries one) replaced by ``***``."""
    if not _is_store_url(text):
        return text
    scheme, _, rest = text.partition("://")
    userinfo, at, address = rest.partition("@")
    if not at or ":" not in userinfo:
        return text
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:***@{address}"
