"""The Python MCP SDK's Streamable HTTP client against `skillcat mcp --http`.

Run by tests/integration/mcp/http.rs with the venv scripts/test makes (PyPI `mcp`, pinned there):

    python mcp_http_client.py URL TOKEN NEW_SKILL_DIR

Initializes, lists and reads resources, asks skills/list and resources/directory/read, calls
a script tool, then writes a skill folder at NEW_SKILL_DIR and waits for
notifications/resources/list_changed. Prints one JSON object with what it saw; exits non-zero
on any failure.
"""

import json
import os
import sys
from typing import Any

import anyio
import httpx2
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter


async def main(url: str, token: str, new_skill: str) -> dict[str, Any]:
    changed = anyio.Event()
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            seen.append("resources/list_changed")
            changed.set()
        elif isinstance(message, types.ToolListChangedNotification):
            seen.append("tools/list_changed")
        elif isinstance(message, types.PromptListChangedNotification):
            seen.append("prompts/list_changed")

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    out: dict[str, Any] = {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                init = await session.initialize()
                out["protocolVersion"] = init.protocol_version
                out["server"] = init.server_info.name
                resources = await session.list_resources()
                out["resources"] = sorted(r.uri for r in resources.resources)
                doc = await session.read_resource("skill://echo/SKILL.md")
                out["document"] = doc.contents[0].text
                raw = TypeAdapter(dict[str, Any])
                skills = await session.send_request(
                    types.Request[dict[str, Any] | None, str](method="skills/list", params=None), raw
                )
                out["skills"] = sorted(s["uri"] for s in skills["skills"])
                listing = await session.send_request(
                    types.Request[dict[str, Any], str](
                        method="resources/directory/read", params={"uri": "skill://echo/scripts"}
                    ),
                    raw,
                )
                out["directory"] = sorted(r["uri"] for r in listing["resources"])
                tools = await session.list_tools()
                out["tools"] = sorted(t.name for t in tools.tools)
                result = await session.call_tool("run_echo_greet", {"who": "Python"})
                out["call"] = {
                    "isError": result.is_error,
                    "text": result.content[0].text,
                }
                # A skill folder added during the session: the server follows within seconds.
                os.makedirs(os.path.join(new_skill, "scripts"), exist_ok=True)
                with open(os.path.join(new_skill, "SKILL.md"), "w") as f:
                    f.write("---\nname: added\ndescription: Added while a client was connected.\n---\nHello.\n")
                with anyio.fail_after(20):
                    await changed.wait()
                out["notifications"] = seen
                resources = await session.list_resources()
                out["resources_after"] = sorted(r.uri for r in resources.resources)
    return out


if __name__ == "__main__":
    url, token, new_skill = sys.argv[1], sys.argv[2], sys.argv[3]
    print(json.dumps(anyio.run(main, url, token, new_skill)))
