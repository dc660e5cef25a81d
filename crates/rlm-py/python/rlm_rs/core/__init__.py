"""The reference's ``rlm.core`` paths: ``rlm_rs.core.rlm.RLM``, ``rlm_rs.core.types``."""
