"""The reference's custom-tool helpers (``rlm.environments``): reserved names, parsing and the
prompt's list. Model code always runs in rlm's sandbox, so there are no environment classes."""

from .._tools import (
    RESERVED_TOOL_NAMES,
    ToolInfo,
    extract_tool_value,
    format_tools_for_prompt,
    parse_custom_tools,
    parse_tool_entry,
    validate_custom_tools,
)

__all__ = [
    "RESERVED_TOOL_NAMES",
    "ToolInfo",
    "extract_tool_value",
    "format_tools_for_prompt",
    "parse_custom_tools",
    "parse_tool_entry",
    "validate_custom_tools",
]
