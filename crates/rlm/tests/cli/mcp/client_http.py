"""MCP client sessions over streamable HTTP with the official Python SDK (`mcp` on PyPI),
driven by crates/rlm/tests/cli/mcp_http.rs. Usage: client_http.py URL

Speaks to a running `rlm mcp --http ... --page-size 3` at URL and prints one JSON object with
what it saw; the Rust test makes the assertions. Two sessions are open at once; each ends
with the SDK's DELETE when its context closes.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


def tool_result(result):
    return {
        "is_error": bool(result.isError),
        "text": "\n".join(block.text for block in result.content if block.type == "text"),
        "structured": result.structuredContent,
    }


async def main(url):
    seen = {}
    async with streamablehttp_client(url) as (read, write, session_id):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            seen["server"] = init.serverInfo.name
            seen["protocol"] = init.protocolVersion
            seen["session"] = session_id()
            tools = await session.list_tools()
            seen["tools"] = {tool.name: tool.inputSchema for tool in tools.tools}
            seen["search"] = tool_result(
                await session.call_tool("search", {"query": "lighthouse keeper", "k": 2})
            )
            seen["outside"] = tool_result(
                await session.call_tool("inspect", {"paths": ["../outside.txt"]})
            )

            # A second session while the first is open: its own server, same store.
            async with streamablehttp_client(url) as (read2, write2, session_id2):
                async with ClientSession(read2, write2) as other:
                    await other.initialize()
                    seen["other_session"] = session_id2()
                    seen["other_list"] = tool_result(await other.call_tool("list_buffers", {}))

            # The first session goes on after the second ended.
            first = await session.list_resources()
            pages = [[str(resource.uri) for resource in first.resources]]
            cursor = first.nextCursor
            while cursor is not None and len(pages) < 100:
                page = await session.list_resources(cursor)
                pages.append([str(resource.uri) for resource in page.resources])
                cursor = page.nextCursor
            seen["resource_pages"] = pages
            chunk = next(uri for page in pages for uri in page if "/chunk/" in uri)
            contents = await session.read_resource(chunk)
            seen["chunk_text"] = contents.contents[0].text
    print(json.dumps(seen, default=str))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
