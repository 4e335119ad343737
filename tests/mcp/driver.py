"""A real MCP client (the official Python SDK) driving `filewatchd mcp` over stdio, for the
Rust tests in tests/mcp*.rs.

    driver.py FILEWATCHD_BIN [ARGS...]

starts `FILEWATCHD_BIN mcp ARGS...` in the current directory with this process's whole
environment, initializes, then answers one JSON line on stdout for each JSON line on stdin:

    {"list": true}                        -> {"tools": [{"name", "description", "input_schema"}]}
    {"call": NAME, "arguments": {...}, "meta"?: {...}}
                                          -> {"is_error": bool, "text": "..."} (a JSON-RPC
                                             error: is_error and {"error":{"code":"protocol_error"}})
    {"run": [ARGV...], "stdin": "..."}    -> {"status": N, "stdout", "stderr"}

`run` starts a process as a child of this one (as an agent runs its hooks), so that the
server, also this process's child, shares the agent process with it. The first line it
prints is {"ready": true, "server": NAME} once the server has initialized.
"""

import asyncio
import json
import os
import subprocess
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def answer(session, request):
    if request.get("list"):
        listed = await session.list_tools()
        tools = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in listed.tools
        ]
        return {"tools": tools}
    if "call" in request:
        try:
            meta = request.get("meta")
            result = await session.call_tool(request["call"], request.get("arguments") or {}, meta=meta)
        except Exception as err:  # a JSON-RPC error (an unknown tool): the answer says so
            refusal = {"error": {"code": "protocol_error", "message": str(err)}}
            return {"is_error": True, "text": json.dumps(refusal)}
        text = "".join(getattr(block, "text", "") for block in result.content)
        return {"is_error": bool(result.is_error), "text": text}
    if "run" in request:
        done = subprocess.run(
            request["run"],
            input=request.get("stdin", "").encode(),
            capture_output=True,
            timeout=60,
        )
        return {
            "status": done.returncode,
            "stdout": done.stdout.decode(errors="replace"),
            "stderr": done.stderr.decode(errors="replace"),
        }
    return {"driver_error": f"unknown request {request!r}"}


async def main():
    binary, args = sys.argv[1], sys.argv[2:]
    server = StdioServerParameters(command=binary, args=["mcp", *args], env=dict(os.environ), cwd=os.getcwd())
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            say({"ready": True, "server": init.server_info.name})
            loop = asyncio.get_running_loop()
            while True:
                line = await loop.run_in_executor(None, sys.stdin.readline)
                if not line:
                    return
                try:
                    say(await answer(session, json.loads(line)))
                except Exception as err:  # the Rust test reads the failure as an answer
                    say({"driver_error": f"{type(err).__name__}: {err}"})


if __name__ == "__main__":
    asyncio.run(main())
