"""``RLMLogger``: where completions write their trajectories, as in the reference
(``from rlm.logger import RLMLogger`` becomes ``from rlm_rs.logger import RLMLogger``).

Each completion writes one JSON Lines trajectory into ``log_dir`` (rlm's log format: ``rlm
view`` or :func:`rlm_rs.view` turns it into an HTML page); its path is the completion's
``log_path``. Without a logger, trajectories go where the CLI puts them
(``$XDG_STATE_HOME/rlm/runs``).
"""

from __future__ import annotations

import os
from typing import List


class RLMLogger:
    """Writes each completion's trajectory into ``log_dir`` (created when missing)."""

    def __init__(self, log_dir: str = "./logs", file_name: str = "rlm") -> None:
        self.log_dir = os.path.abspath(os.fspath(log_dir))
        # Accepted for the reference's signature; rlm names each file after its run id.
        self.file_name = file_name

    def log_files(self) -> List[str]:
        """The trajectories written so far, oldest first."""
        if not os.path.isdir(self.log_dir):
            return []
        paths = [
            os.path.join(self.log_dir, name)
            for name in os.listdir(self.log_dir)
            if name.endswith(".jsonl")
        ]
        return sorted(paths, key=os.path.getmtime)
