"""The rest of the toolkit: the store (load, search, grep, chunks), ``inspect``, ``query``,
``view`` and the prompt pipeline. Each runs the CLI's command in this process and returns the
records its ``--json`` prints as plain Python objects (dataclasses for the common ones, dicts
otherwise, with every field the CLI prints)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from . import _core
from ._core import PathLike, path_arg

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


def _ranges(items: Iterable[Dict[str, Any]]) -> List[Tuple[int, int]]:
    return [(int(r["start"]), int(r["end"])) for r in items]


def _scope(buffers: Optional[Sequence[str]], path: Optional[str]) -> List[str]:
    args: List[str] = []
    for buffer in buffers or ():
        args += ["--buffer", str(buffer)]
    if path is not None:
        args += ["--path", path]
    return args


class Store:
    """A store directory (created by the first :meth:`load`): the same store the ``rlm``
    commands use with ``--store PATH``."""

    def __init__(self, path: PathLike = ".rlm") -> None:
        self.path = os.path.abspath(path_arg(path))

    def _args(self, *args: str) -> List[str]:
        return [*args, "--store", self.path]

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
        args = ["load", *map(path_arg, paths)]
        if name is not None:
            args += ["--name", name]
        for glob in include:
            args += ["--include", glob]
        for glob in exclude:
            args += ["--exclude", glob]
        args += ["--embed"] if embed else ["--no-embed"]
        if hidden:
            args.append("--hidden")
        if no_ignore:
            args.append("--no-ignore")
        records = _core.run_json(self._args(*args))
        return _only(records, "load")

    def search(
        self,
        query: str,
        mode: str = "bm25",
        top: int = 10,
        buffers: Optional[Sequence[str]] = None,
        path: Optional[str] = None,
    ) -> List[SearchHit]:
        """Ranked chunks for ``query``: ``mode`` is ``bm25``, ``semantic`` or ``hybrid``
        (the last two need embeddings: ``load(..., embed=True)``)."""
        if mode not in SEARCH_MODES:
            raise _core.RlmInputError(
                f"error: unknown search mode {mode!r}\nhint: modes: {', '.join(SEARCH_MODES)}", 2
            )
        args = ["search", query, "--mode", mode, "--top", str(top), *_scope(buffers, path)]
        return [
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
            for r in _core.run_json(self._args(*args))
            if r.get("type") == "hit"
        ]

    def grep(
        self,
        pattern: str,
        buffers: Optional[Sequence[str]] = None,
        path: Optional[str] = None,
        context: int = 0,
    ) -> List[GrepMatch]:
        """Lines matching the regular expression ``pattern`` (Rust regex syntax), with
        ``context`` lines around each."""
        args = ["grep", pattern, "-C", str(context), *_scope(buffers, path)]
        found: List[GrepMatch] = []
        for r in _core.run_json(self._args(*args)):
            if r.get("type") == "match":
                found.append(
                    GrepMatch(r["buffer"], int(r["line"]), r["text"], _ranges(r["matches"]))
                )
            elif r.get("type") == "context":
                found.append(GrepMatch(r["buffer"], int(r["line"]), r["text"], is_context=True))
        return found

    def buffers(self) -> List[Dict[str, Any]]:
        """Every buffer: id, name, path, bytes, lines, chunks, ..."""
        return [r for r in _core.run_json(self._args("list")) if r.get("type") == "buffer"]

    def chunks(self, buffer: str) -> List[Dict[str, Any]]:
        """The chunk table of one buffer (name or id): each chunk's id and line range."""
        records = _core.run_json(self._args("show", str(buffer), "--chunks"))
        return [r for r in records if r.get("type") == "chunk"]

    def chunk(self, chunk_id: int) -> str:
        """The text of one chunk (an id from :meth:`search` or :meth:`chunks`)."""
        records = _core.run_json(self._args("peek", "--chunk", str(int(chunk_id))))
        return "".join(r.get("text", "") for r in records)

    def peek(self, buffer: str, lines: Tuple[int, int]) -> str:
        """Lines ``lines[0]`` to ``lines[1]`` (1-based, inclusive) of a buffer."""
        start, end = lines
        records = _core.run_json(self._args("peek", str(buffer), "--lines", f"{start}:{end}"))
        return "".join(r.get("text", "") for r in records)

    def delete(self, buffer: str) -> None:
        """Removes one buffer (name or id) from the store."""
        _core.run_json(self._args("delete", str(buffer)))

    def __repr__(self) -> str:
        return f"Store({self.path!r})"


def _only(records: List[Dict[str, Any]], kind: str) -> Dict[str, Any]:
    for record in records:
        if record.get("type") == kind:
            return {k: v for k, v in record.items() if k != "type"}
    raise _core.RlmError(f"error: the command printed no {kind} record (a bug in rlm)")


def inspect(path: PathLike, sample_chars: int = 200) -> Dict[str, Any]:
    """The metadata ``rlm inspect`` prints for a file: format, size in bytes, characters and
    lines, records and fields for structured data, a sample."""
    records = _core.run_json(["inspect", path_arg(path), "--sample-chars", str(sample_chars)])
    return _only(records, "metadata")


def query(
    question: str,
    store: "Store | PathLike" = ".rlm",
    model: Optional[str] = None,
    buffers: Optional[Sequence[str]] = None,
    path: Optional[str] = None,
    mode: Optional[str] = None,
    top_k: Optional[int] = None,
    max_cost: Optional[float] = None,
    max_tokens: Optional[int] = None,
    timeout: Optional[float] = None,
    log_dir: Optional[PathLike] = None,
    extra_flags: Sequence[str] = (),
) -> QueryResult:
    """Plans searches for ``question``, reads the chunks they find with extractor calls and
    writes a report citing the chunks it used (``rlm query``)."""
    location = store.path if isinstance(store, Store) else os.path.abspath(path_arg(store))
    args = ["query", question, "--store", location, *_scope(buffers, path)]
    for flag, value in (
        ("--model", model),
        ("--mode", mode),
        ("--top-k", top_k),
        ("--max-cost", max_cost),
        ("--max-tokens", max_tokens),
        ("--timeout", timeout),
    ):
        if value is not None:
            args.append(f"{flag}={value}")
    if log_dir is not None:
        args += ["--log", path_arg(log_dir)]
    args += list(extra_flags)
    code, records, errors = _core.run_json_outcome(args)
    result = next((r for r in records if r.get("type") == "result"), None)
    if result is None:
        raise _core._failure(code or 1, errors)
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
    args = ["view", path_arg(log)]
    if output is not None:
        args += ["--output", path_arg(output)]
    records = _core.run_json(args)
    for record in records:
        for key in ("page", "output", "path"):
            if isinstance(record.get(key), str):
                return record[key]
    raise _core.RlmError("error: rlm view printed no page path (a bug in rlm)")


class PromptAssembler:
    """The prompt pipeline for coding agents (``rlm prompt build``): a system section, the
    stage's instructions, the conversation (its older part summarized by a model when it is
    long) and material by priority — notes, ADRs, sources, logs, test results — within token
    budgets.

    >>> assembler = PromptAssembler(stage="coding", sources=["src/**/*.rs"])  # doctest: +SKIP
    >>> messages = assembler.build(history)["messages"]                        # doctest: +SKIP
    """

    _MATERIAL = (
        ("notes", "--notes"),
        ("adr", "--adr"),
        ("sources", "--source"),
        ("build_logs", "--build-log"),
        ("pod_logs", "--pod-log"),
        ("test_results", "--test-results"),
        ("library", "--library"),
    )

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

    def _args(self, action: str, history_file: Optional[str]) -> List[str]:
        args = ["prompt", action, "--stage", self.stage]
        for key, flag in self._MATERIAL:
            for value in self.material[key]:
                args += [flag, value]
        if history_file is not None:
            args += ["--history", history_file]
        if self.budget_total is not None:
            args.append(f"--budget-total={self.budget_total}")
        if self.model is not None:
            args += ["--model", self.model]
        if self.tokenizer is not None:
            args += ["--tokenizer", self.tokenizer]
        return args + self.extra_flags

    def _with_history(self, history: Optional[Sequence[Dict[str, Any]]], work: Any) -> Any:
        import tempfile  # here, not at import: it is needed only for histories

        if history is None:
            return work(None)
        with tempfile.TemporaryDirectory(prefix="rlm-rs-") as scratch:
            history_file = os.path.join(scratch, "history.jsonl")
            with open(history_file, "w", encoding="utf-8") as out:
                for message in history:
                    out.write(json.dumps(message, ensure_ascii=False) + "\n")
            return work(history_file)

    def build(self, history: Optional[Sequence[Dict[str, Any]]] = None) -> Dict[str, Any]:
        """The prompt for one agent turn: ``{"messages": [system, user], "plan": {...}}``,
        ``history`` being ``{"role", "content"}`` messages."""

        def work(history_file: Optional[str]) -> Dict[str, Any]:
            import tempfile

            with tempfile.TemporaryDirectory(prefix="rlm-rs-") as scratch:
                plan_file = os.path.join(scratch, "plan.json")
                args = self._args("build", history_file)
                args += ["--format", "json", "--plan-output", plan_file]
                built = json.loads(_core.run(args))
                with open(plan_file, encoding="utf-8") as plan:
                    return {"messages": built["messages"], "plan": json.load(plan)}

        return self._with_history(history, work)

    def plan(self, history: Optional[Sequence[Dict[str, Any]]] = None) -> Dict[str, Any]:
        """What :meth:`build` would put in, summarize and spend, without calling a model."""

        def work(history_file: Optional[str]) -> Dict[str, Any]:
            records = _core.run_json(self._args("plan", history_file))
            return records[0] if len(records) == 1 else {"records": records}

        return self._with_history(history, work)
