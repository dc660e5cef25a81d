"""``RLMLogger``: where completions write their trajectories, as in the reference
(``from rlm.logger import RLMLogger`` becomes ``from rlm_rs.logger import RLMLogger``).

Each completion writes one JSON Lines trajectory, ``<file_name>_<time>_<run id>.jsonl``, into
``log_dir`` (rlm's log format, the reference's shape: a ``metadata`` line, one ``iteration``
line per turn, a ``result`` line; ``rlm view``, :func:`rlm_rs.view` or :class:`rlm_rs.RunLog`
turn it into an HTML page). With a logger, a completion's ``metadata`` holds the trajectory.
``RLMLogger()`` without a directory keeps only that: the file is written to a scratch
directory and removed. Without any logger, trajectories go where the CLI puts them
(``$XDG_STATE_HOME/rlm/runs``) and ``metadata`` is ``None``.
"""

from __future__ import annotations

import os
# `typing` is only for the type checker: importing it costs milliseconds at `import rlm_rs`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Dict, List, Optional


class RLMLogger:
    """Writes each completion's trajectory into ``log_dir`` (created when missing), or keeps
    it in memory only when ``log_dir`` is ``None``."""

    def __init__(self, log_dir: "Optional[os.PathLike[str] | str]" = None, file_name: str = "rlm") -> None:
        if not isinstance(file_name, str) or not file_name or not all(
            c.isascii() and (c.isalnum() or c in "-_") for c in file_name
        ) or len(file_name) > 64:
            from ._exceptions import RlmInputError

            raise RlmInputError(
                f"error: file_name {file_name!r} must be 1 to 64 letters, digits, '-' or '_'", 2
            )
        self.log_dir: Optional[str] = None if log_dir is None else os.path.abspath(os.fspath(log_dir))
        if self.log_dir is not None:
            os.makedirs(self.log_dir, exist_ok=True)
        self.file_name = file_name
        # The last completion's trajectory file (None in memory-only mode).
        self.log_file_path: Optional[str] = None
        self._trajectory: Optional[Dict[str, Any]] = None
        self._scratch: Optional[str] = None

    def _directory(self) -> str:
        """Where the next completion writes: ``log_dir``, or a scratch directory."""
        if self.log_dir is not None:
            return self.log_dir
        import tempfile  # here: only a logger without a directory needs it

        self._scratch = tempfile.mkdtemp(prefix="rlm-log-")
        return self._scratch

    def _ran(self, path: str, trajectory: Dict[str, Any]) -> None:
        self._trajectory = trajectory
        self.log_file_path = path if self.log_dir is not None else None

    def _done(self) -> None:
        if self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def get_trajectory(self) -> Optional[Dict[str, Any]]:
        """The last completion's trajectory: ``{"run_metadata", "iterations", "result"}``."""
        return self._trajectory

    def clear_iterations(self) -> None:
        """Forgets the last trajectory (the files stay)."""
        self._trajectory = None

    @property
    def iteration_count(self) -> int:
        return len((self._trajectory or {}).get("iterations") or [])

    def log_files(self) -> List[str]:
        """The trajectories written so far (child runs' included), oldest first."""
        if self.log_dir is None or not os.path.isdir(self.log_dir):
            return []
        paths = [
            os.path.join(self.log_dir, name)
            for name in os.listdir(self.log_dir)
            if name.endswith(".jsonl")
        ]
        return sorted(paths, key=os.path.getmtime)

    def __repr__(self) -> str:
        return f"RLMLogger(log_dir={self.log_dir!r}, file_name={self.file_name!r})"
