"""``from rlm.core.rlm import RLM`` as ``from rlm_rs.core.rlm import RLM``."""

from .._rlm import RLM

__all__ = ["RLM"]
