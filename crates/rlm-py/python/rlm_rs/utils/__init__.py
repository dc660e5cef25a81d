"""The reference's ``rlm.utils`` paths: ``rlm_rs.utils.exceptions``."""
