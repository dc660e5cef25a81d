"""An MCP client with (or without) sampling, with the official Python SDK (`mcp` on PyPI),
driven by crates/rlm/tests/cli/mcp_sampling.rs. Usage: sampling_client.py RLM_BINARY ROOT MODE [URL]

With URL the client connects to a running `rlm mcp --http` there (streamable HTTP) instead of
starting `RLM_BINARY mcp` over stdio.

MODE `sampling`: the client declares sampling and its "model" answers from a script: the root
model's first turn writes code calling `llm_query(PROMPT)`, the sub-call gets ANSWER, the
root's next turn gives `FINAL_VAR(answer)`. Each sampling request is recorded.
MODE `plain`: no sampling callback, so no sampling capability.

Prints one JSON object with what it saw; the Rust test makes the assertions.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

PROMPT = "What does the oracle say? Reply with the word only."
ANSWER = "heliotrope-7731"
ROOT_TURNS = [
    # The closing fence and what follows are past the engine's stop sequence: rlm cuts them.
    '```repl\nanswer = llm_query("' + PROMPT + '")\nprint(answer)\n```\nignored after the fence',
    "FINAL_VAR(answer)",
]


def tool_result(result):
    return {
        "is_error": bool(result.isError),
        "text": "\n".join(block.text for block in result.content if block.type == "text"),
        "structured": result.structuredContent,
    }


def text_of(message):
    content = message.content
    return content.text if content.type == "text" else f"<{content.type}>"


def connect(binary, root, url):
    """The client's streams: over HTTP to URL, or to a stdio server it starts."""
    if url:
        return streamablehttp_client(url)
    params = StdioServerParameters(
        command=binary,
        args=["mcp", "--root", root],
        env=dict(os.environ),
        cwd=root,
    )
    return stdio_client(params)


async def main(binary, root, mode, url=None):
    requests = []
    root_turns = iter(ROOT_TURNS)

    async def sample(context, params):
        texts = [text_of(message) for message in params.messages]
        hints = []
        if params.modelPreferences and params.modelPreferences.hints:
            hints = [hint.name for hint in params.modelPreferences.hints]
        is_subcall = texts == [PROMPT]
        requests.append(
            {
                "subcall": is_subcall,
                "roles": [message.role for message in params.messages],
                "first": texts[0],
                "has_system_prompt": bool(params.systemPrompt),
                "max_tokens": params.maxTokens,
                "stop_sequences": params.stopSequences,
                "hints": hints,
            }
        )
        reply = ANSWER if is_subcall else next(root_turns, "FINAL(out of script)")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=reply),
            model="scripted-client-model",
            stopReason="endTurn",
        )

    seen = {"api_keys": sorted(name for name in os.environ if name.endswith("_API_KEY"))}
    callback = sample if mode == "sampling" else None
    async with connect(binary, root, url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write, sampling_callback=callback) as session:
            await session.initialize()
            if mode == "sampling":
                # No model anywhere: the client's model answers the root turns; the
                # sub-calls go to it too, with a model hint.
                seen["run"] = tool_result(
                    await session.call_tool(
                        "run",
                        {
                            "query": "What does the oracle say?",
                            "context": "The oracle is asked through llm_query.",
                            "subcall_model": "mcp:hinted-model",
                        },
                    )
                )
                seen["requests"] = requests
            else:
                seen["asked_for_sampling"] = tool_result(
                    await session.call_tool(
                        "run", {"query": "q", "context": "c", "model": "sampling"}
                    )
                )
                seen["no_model"] = tool_result(
                    await session.call_tool("run", {"query": "q", "context": "c"})
                )
                seen["after"] = tool_result(
                    await session.call_tool("inspect", {"text": "a,b\n1,2\n", "name": "t.csv"})
                )
    print(json.dumps(seen, default=str))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
