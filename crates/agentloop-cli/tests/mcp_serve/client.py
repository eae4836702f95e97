"""A client of `agentloop mcp serve` built on the reference Python MCP SDK.

Usage: client.py TRANSPORT TARGET SCENARIO
  TRANSPORT  stdio (TARGET: a JSON array, the server's command line) or
             http (TARGET: the endpoint's URL; $MCP_BEARER, when set, is
             sent as the bearer token)
  SCENARIO   ask       list the tools, ask, go on with the chat
             cancel    ask, cancel at the first progress, ask again
             steer     ask in a chat of its own id; at the first progress,
                       ask the same chat again (queued for the running
                       turn); then go on with the chat
             approve   ask with elicitation: approve every form
             answer    ask with elicitation: answer every form "blue"
             decline   ask with elicitation: decline every form
             no-elicit ask with no elicitation capability
             projects  the server's project tools ($MCP_PROJECT: a project)

$MCP_MODE picks how the client negotiates: `auto` (the SDK's default:
the newest revision the server offers, else the initialize handshake) or
`legacy` (the initialize handshake).

Prints one JSON object of what it saw on stdout.
"""

import json
import logging
import os
import sys

import anyio
import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client


def tool_result(result):
    return {
        "is_error": bool(result.is_error),
        "text": "\n".join(c.text for c in result.content if c.type == "text"),
        "structured": result.structured_content,
    }


async def ask(session, seen):
    listed = await session.list_tools()
    seen["tools"] = [
        {"name": t.name, "input": t.input_schema, "output": t.output_schema} for t in listed.tools
    ]
    progress = []

    async def on_progress(value, total, message):
        progress.append({"progress": value, "message": message})

    first = await session.call_tool("ask", {"prompt": "Say hello."}, progress_callback=on_progress)
    seen["first"] = tool_result(first)
    seen["progress"] = progress
    chat_id = first.structured_content["chat_id"]
    second = await session.call_tool("ask", {"prompt": "Again.", "chat_id": chat_id})
    seen["second"] = tool_result(second)
    bad = await session.call_tool("ask", {"prompt": 7})
    seen["bad"] = tool_result(bad)


async def cancel(session, seen):
    progressed = anyio.Event()
    progress = []

    async def on_progress(value, total, message):
        progress.append(message)
        progressed.set()

    async with anyio.create_task_group() as group:

        async def call():
            await session.call_tool("ask", {"prompt": "Write the file."}, progress_callback=on_progress)
            seen["cancelled_call_returned"] = True

        group.start_soon(call)
        with anyio.fail_after(30):
            await progressed.wait()
        # Abandoning the call is how the SDK cancels it: it tells the
        # server (`notifications/cancelled`, or the request's stream closed).
        group.cancel_scope.cancel()
    seen["progress_before_cancel"] = progress
    after = await session.call_tool("ask", {"prompt": "Something else."})
    seen["after"] = tool_result(after)


async def steer(session, seen):
    progressed = anyio.Event()
    progress = []

    async def on_progress(value, total, message):
        progress.append(message)
        progressed.set()

    async with anyio.create_task_group() as group:

        async def call():
            first = await session.call_tool(
                "ask", {"prompt": "Look around.", "chat_id": "steered"}, progress_callback=on_progress
            )
            seen["first"] = tool_result(first)

        group.start_soon(call)
        with anyio.fail_after(30):
            await progressed.wait()
        queued = await session.call_tool("ask", {"prompt": "Keep it short.", "chat_id": "steered"})
        seen["queued"] = tool_result(queued)
    seen["progress"] = progress
    after = await session.call_tool("ask", {"prompt": "Anything else?", "chat_id": "steered"})
    seen["after"] = tool_result(after)


FORMS = []


async def approve_every_form(context, params):
    FORMS.append({"message": params.message, "schema": params.requested_schema})
    return types.ElicitResult(action="accept", content={"approve": True})


async def answer_every_form(context, params):
    FORMS.append({"message": params.message, "schema": params.requested_schema})
    return types.ElicitResult(action="accept", content={"answer": "blue"})


async def decline_every_form(context, params):
    FORMS.append({"message": params.message, "schema": params.requested_schema})
    return types.ElicitResult(action="decline")


async def approve(session, seen):
    result = await session.call_tool("ask", {"prompt": "Write the file."})
    seen["forms"] = FORMS
    seen["result"] = tool_result(result)


async def no_elicit(session, seen):
    result = await session.call_tool("ask", {"prompt": "Write the file."})
    seen["result"] = tool_result(result)


async def projects(session, seen):
    listed = await session.list_tools()
    seen["tools"] = sorted(t.name for t in listed.tools)
    found = await session.call_tool("list_projects", {})
    seen["projects"] = tool_result(found)
    project_id = os.environ.get("MCP_PROJECT")
    if project_id:
        task = await session.call_tool("create_task", {"project_id": project_id, "title": "From MCP"})
        seen["task"] = tool_result(task)
        if not task.is_error:
            run = await session.call_tool(
                "start_agent_run",
                {"task_id": task.structured_content["id"], "agent_type": "planification"},
            )
            seen["run"] = tool_result(run)
            with anyio.fail_after(60):
                while True:
                    got = await session.call_tool("get_agent_run", {"run_id": run.structured_content["id"]})
                    if got.structured_content["status"] not in ("running",):
                        break
                    await anyio.sleep(0.05)
            seen["finished"] = tool_result(got)


SCENARIOS = {
    "projects": projects,
    "ask": ask,
    "cancel": cancel,
    "steer": steer,
    "approve": approve,
    "answer": approve,
    "decline": approve,
    "no-elicit": no_elicit,
}
ELICIT = {"approve": approve_every_form, "answer": answer_every_form, "decline": decline_every_form}


async def main():
    # The SDK's warnings and errors (a failed POST, say) go to stderr,
    # which the test shows when the client fails.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    transport, target, scenario = sys.argv[1:4]
    mode = os.environ.get("MCP_MODE", "auto")
    seen = {}
    if transport == "stdio":
        command = json.loads(target)
        server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    else:
        headers = {}
        if os.environ.get("MCP_BEARER"):
            headers["Authorization"] = "Bearer " + os.environ["MCP_BEARER"]
        server = streamable_http_client(target, http_client=httpx2.AsyncClient(headers=headers, timeout=60))
    # A callback makes the SDK declare the elicitation capability.
    client = Client(server, mode=mode, elicitation_callback=ELICIT.get(scenario))
    async with client:
        seen["protocol"] = client.protocol_version
        seen["server"] = client.server_info.name if client.server_info else None
        seen["capabilities"] = client.server_capabilities.model_dump(exclude_none=True)
        await SCENARIOS[scenario](client, seen)
    print(json.dumps(seen))


anyio.run(main)
