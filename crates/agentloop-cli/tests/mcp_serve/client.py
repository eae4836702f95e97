"""A client of `agentloop mcp serve` built on the reference Python MCP SDK.

Usage: client.py TRANSPORT TARGET SCENARIO
  TRANSPORT  stdio (TARGET: a JSON array, the server's command line) or
             http (TARGET: the endpoint's URL; $MCP_BEARER, when set, is
             sent as the bearer token)
  SCENARIO   ask       list the tools, ask, go on with the chat
             cancel    ask, cancel at the first progress, ask again
             approve   ask with elicitation: approve every form
             answer    ask with elicitation: answer every form "blue"
             no-elicit ask with no elicitation capability

Prints one JSON object of what it saw on stdout.
"""

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


def tool_result(result):
    return {
        "is_error": bool(result.isError),
        "text": "\n".join(c.text for c in result.content if c.type == "text"),
        "structured": result.structuredContent,
    }


async def ask(session, seen):
    listed = await session.list_tools()
    seen["tools"] = [
        {"name": t.name, "input": t.inputSchema, "output": t.outputSchema} for t in listed.tools
    ]
    progress = []

    async def on_progress(value, total, message):
        progress.append({"progress": value, "message": message})

    first = await session.call_tool("ask", {"prompt": "Say hello."}, progress_callback=on_progress)
    seen["first"] = tool_result(first)
    seen["progress"] = progress
    chat_id = first.structuredContent["chat_id"]
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

    # The SDK numbers requests from this counter; the next one is the call.
    request_id = session._request_id
    async with anyio.create_task_group() as group:

        async def call():
            await session.call_tool("ask", {"prompt": "Write the file."}, progress_callback=on_progress)
            seen["cancelled_call_returned"] = True

        group.start_soon(call)
        with anyio.fail_after(30):
            await progressed.wait()
        await session.send_notification(
            types.ClientNotification(
                types.CancelledNotification(
                    params=types.CancelledNotificationParams(requestId=request_id, reason="test")
                )
            )
        )
        # The server answers a cancelled request with nothing: stop waiting.
        group.cancel_scope.cancel()
    seen["progress_before_cancel"] = progress
    after = await session.call_tool("ask", {"prompt": "Something else."})
    seen["after"] = tool_result(after)


FORMS = []


async def approve_every_form(context, params):
    FORMS.append({"message": params.message, "schema": params.requestedSchema})
    return types.ElicitResult(action="accept", content={"approve": True})


async def answer_every_form(context, params):
    FORMS.append({"message": params.message, "schema": params.requestedSchema})
    return types.ElicitResult(action="accept", content={"answer": "blue"})


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
        if not task.isError:
            run = await session.call_tool(
                "start_agent_run",
                {"task_id": task.structuredContent["id"], "agent_type": "planification"},
            )
            seen["run"] = tool_result(run)
            with anyio.fail_after(60):
                while True:
                    got = await session.call_tool("get_agent_run", {"run_id": run.structuredContent["id"]})
                    if got.structuredContent["status"] not in ("running",):
                        break
                    await anyio.sleep(0.05)
            seen["finished"] = tool_result(got)


SCENARIOS = {
    "projects": projects,
    "ask": ask,
    "cancel": cancel,
    "approve": approve,
    "answer": approve,
    "no-elicit": no_elicit,
}
ELICIT = {"approve": approve_every_form, "answer": answer_every_form}


async def main():
    transport, target, scenario = sys.argv[1:4]
    seen = {}
    # A callback makes the SDK declare the elicitation capability.
    elicit = ELICIT.get(scenario)

    async def run(read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            init = await session.initialize()
            seen["server"] = init.serverInfo.name
            seen["capabilities"] = init.capabilities.model_dump(exclude_none=True)
            await SCENARIOS[scenario](session, seen)

    if transport == "stdio":
        command = json.loads(target)
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            await run(read, write)
    else:
        headers = {}
        if os.environ.get("MCP_BEARER"):
            headers["Authorization"] = "Bearer " + os.environ["MCP_BEARER"]
        async with streamablehttp_client(target, headers=headers) as (read, write, _):
            await run(read, write)
    print(json.dumps(seen))


anyio.run(main)
