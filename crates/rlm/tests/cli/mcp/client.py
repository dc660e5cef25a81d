"""An MCP client session over stdio with the official Python SDK (`mcp` on PyPI), driven by
crates/rlm/tests/cli/mcp.rs. Usage: client.py RLM_BINARY ROOT

Speaks to `rlm mcp --root ROOT` and prints one JSON object with what it saw; the Rust test
makes the assertions. The store and the fake provider come from the environment it inherits.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError


def tool_result(result):
    return {
        "is_error": bool(result.isError),
        "text": "\n".join(block.text for block in result.content if block.type == "text"),
        "structured": result.structuredContent,
    }


async def main(binary, root):
    import os

    params = StdioServerParameters(
        command=binary,
        args=["mcp", "--root", root, "--page-size", "3"],
        env=dict(os.environ),
        cwd=root,
    )
    seen = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            seen["server"] = init.serverInfo.name
            seen["protocol"] = init.protocolVersion
            tools = await session.list_tools()
            seen["tools"] = {tool.name: tool.inputSchema for tool in tools.tools}
            seen["output_schemas"] = {tool.name: tool.outputSchema for tool in tools.tools}

            # Every successful call below is checked by the SDK itself: it validates
            # structuredContent against the tool's outputSchema and raises when they differ.
            seen["valid"] = {
                name: tool_result(await session.call_tool(name, arguments))
                for name, arguments in [
                    ("inspect", {"paths": ["story.txt"]}),
                    ("load", {"paths": ["story.txt"], "name": "story.txt", "chunk_size": 70}),
                    ("grep", {"pattern": "keeper", "context": 1}),
                    ("peek", {"buffer": "story.txt", "lines": "1:2"}),
                    ("ctx_assemble", {}),
                ]
            }

            seen["search"] = tool_result(
                await session.call_tool("search", {"query": "lighthouse keeper", "k": 2})
            )
            progress = []

            async def on_progress(value, total, message):
                progress.append({"progress": value, "total": total, "message": message})

            seen["run"] = tool_result(
                await session.call_tool(
                    "run",
                    {"query": "What is the code?", "context": "the code is 7", "model": "openai:root"},
                    progress_callback=on_progress,
                )
            )
            seen["run_progress"] = progress
            seen["run_store"] = tool_result(
                await session.call_tool(
                    "run",
                    {"query": "Where is the keeper?", "store": True, "model": "openai:store"},
                )
            )
            query_progress = []

            async def on_query_progress(value, total, message):
                query_progress.append({"progress": value, "total": total, "message": message})

            seen["query"] = tool_result(
                await session.call_tool(
                    "query",
                    {"question": "Where does the keeper live?", "model": "openai:query"},
                    progress_callback=on_query_progress,
                )
            )
            seen["query_progress"] = query_progress
            seen["run_store_outside"] = tool_result(
                await session.call_tool("run", {"query": "x", "store": "../elsewhere"})
            )
            seen["wrong_type"] = tool_result(await session.call_tool("search", {"query": 5}))
            seen["missing"] = tool_result(await session.call_tool("peek", {"lines": "1:2"}))
            seen["outside"] = tool_result(
                await session.call_tool("inspect", {"paths": ["../outside.txt"]})
            )
            seen["store_error"] = tool_result(
                await session.call_tool("peek", {"buffer": "no-such-buffer", "lines": "1:2"})
            )
            seen["load_missing"] = tool_result(
                await session.call_tool("load", {"paths": ["no-such-file.txt"]})
            )
            try:
                await session.call_tool("no_such_tool", {})
                seen["unknown_tool"] = "no error"
            except McpError as error:
                seen["unknown_tool"] = error.error.message
            # The session is still up after all of those.
            seen["list_after_errors"] = tool_result(await session.call_tool("list_buffers", {}))

            first = await session.list_resources()
            pages = [[resource.uri for resource in first.resources]]
            cursor = first.nextCursor
            while cursor is not None and len(pages) < 100:
                page = await session.list_resources(cursor)
                pages.append([resource.uri for resource in page.resources])
                cursor = page.nextCursor
            seen["resource_pages"] = pages
            chunk = next(uri for page in pages for uri in page if "/chunk/" in str(uri))
            contents = await session.read_resource(chunk)
            seen["chunk_text"] = contents.contents[0].text
    print(json.dumps(seen, default=str))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
