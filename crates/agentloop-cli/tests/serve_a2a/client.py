"""Drives `agentloop serve`'s A2A endpoint with the reference Python SDK
(`a2a-sdk`'s `ClientFactory`): the card is read from the server's
well-known path, every call goes through the SDK's JSON-RPC transport.

With `--v0.3` first, the client speaks A2A 0.3: it keeps only the card's
0.3 interface, so `ClientFactory` picks its compat JSON-RPC transport, and
names the project in the message's `metadata.tenant` (0.3 has no tenant);
the output then also lists the JSON-RPC methods sent (`methods`).

Usage: client.py [--v0.3] BASE_URL TOKEN COMMAND ARGS...
  send TENANT AGENT TEXT         SendMessage (blocking), prints the task
  stream TENANT AGENT TEXT       SendStreamingMessage, prints every item
  reply TASK_ID TEXT             streams a reply to an input-required task
  reply-data TASK_ID JSON        the same with a data part
  get TASK_ID                    GetTask
  cancel TASK_ID                 CancelTask
  list JSON                      ListTasks with these params (1.0 JSON)
  stream-cancel TENANT AGENT TEXT
                                 streams, cancels the task from a second
                                 client at its first item, reads the rest
  raw JSON                       POSTs a JSON-RPC request as it is (no SDK),
                                 prints {"answer": ...} or, for an SSE
                                 answer, {"items": [...]} (each data line)

Without `--v0.3`, everything the server answers is read as a strict
A2A 1.0 proto-JSON reader reads it (unknown fields rejected): the agent
card as served, and every JSON-RPC result the SDK's transport parses.

Prints one JSON object on its last line: {"items": [...]} or
{"task": ...}, or {"error": "<class>: <message>"} when the SDK raised.
"""

import asyncio
import json
import sys
import uuid

import httpx
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Struct, Value

import a2a.client.transports.jsonrpc as jsonrpc_transport
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.compat.v0_3.versions import is_legacy_version
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
)


def as_dict(message):
    return MessageToDict(message)


def strict_parse(data, message):
    """Parses like a strict proto-JSON reader: an unknown field is an error."""
    if isinstance(data, (str, bytes)):
        data = json.loads(data)
    return ParseDict(data, message, ignore_unknown_fields=False)


async def strict_card(http, base):
    """The agent card as served, read strictly (no 0.3 compatibility)."""
    answer = await http.get(f"{base}/.well-known/agent-card.json")
    answer.raise_for_status()
    strict_parse(answer.json(), AgentCard())


LEGACY = False
METHODS = []


async def record_method(request):
    """Notes the JSON-RPC method of every request the SDK sends."""
    try:
        METHODS.append(json.loads(request.content)["method"])
    except (ValueError, KeyError, TypeError):
        pass


async def make_client(base, token, streaming=True):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx.AsyncClient(
        headers=headers, timeout=60, event_hooks={"request": [record_method]}
    )
    config = ClientConfig(httpx_client=http, streaming=streaming)
    factory = ClientFactory(config)
    if not LEGACY:
        await strict_card(http, base)
        return await factory.create_from_url(base), http
    card = await A2ACardResolver(http, base).get_agent_card()
    legacy = [i for i in card.supported_interfaces if is_legacy_version(i.protocol_version)]
    if not legacy:
        raise SystemExit(f"the card lists no 0.3 interface: {card}")
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(legacy)
    return factory.create(card), http


def request(tenant, agent, text, task_id=None, data=None):
    parts = [Part(text=text)] if text is not None else []
    if data is not None:
        value = Value()
        value.struct_value.update(data)
        parts.append(Part(data=value))
    message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts)
    if task_id:
        message.task_id = task_id
    meta = {}
    if agent:
        meta["agentType"] = agent
    if LEGACY and tenant:
        meta["tenant"] = tenant
    if meta:
        struct = Struct()
        struct.update(meta)
        message.metadata.CopyFrom(struct)
    return SendMessageRequest(tenant=tenant or "", message=message)


async def collect(client, req):
    return [as_dict(item) for item in [i async for i in client.send_message(req)]]


async def raw(base, token, body):
    """A JSON-RPC request without the SDK: the answer as it came."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        async with http.stream("POST", f"{base}/a2a", json=body) as answer:
            if answer.headers.get("content-type", "").startswith("text/event-stream"):
                items = []
                async for line in answer.aiter_lines():
                    if line.startswith("data:"):
                        items.append(json.loads(line[len("data:"):]))
                return {"items": items}
            return {"status": answer.status_code, "answer": json.loads(await answer.aread())}


async def main():
    global LEGACY
    argv = sys.argv[1:]
    if argv and argv[0] == "--v0.3":
        LEGACY = True
        argv = argv[1:]
    else:
        jsonrpc_transport.parse_lenient = strict_parse
    base, token, command, *args = argv
    try:
        if command == "send":
            tenant, agent, text = args
            client, _ = await make_client(base, token, streaming=False)
            out = {"items": await collect(client, request(tenant, agent, text))}
        elif command == "stream":
            tenant, agent, text = args
            client, _ = await make_client(base, token)
            out = {"items": await collect(client, request(tenant, agent, text))}
        elif command == "reply":
            task_id, text = args
            client, _ = await make_client(base, token)
            out = {"items": await collect(client, request("", None, text, task_id=task_id))}
        elif command == "reply-data":
            task_id, data = args
            client, _ = await make_client(base, token)
            req = request("", None, None, task_id=task_id, data=json.loads(data))
            out = {"items": await collect(client, req)}
        elif command == "get":
            (task_id,) = args
            client, _ = await make_client(base, token)
            out = {"task": as_dict(await client.get_task(GetTaskRequest(id=task_id)))}
        elif command == "cancel":
            (task_id,) = args
            client, _ = await make_client(base, token)
            out = {"task": as_dict(await client.cancel_task(CancelTaskRequest(id=task_id)))}
        elif command == "list":
            (params,) = args
            client, _ = await make_client(base, token)
            req = strict_parse(json.loads(params), ListTasksRequest())
            out = {"list": as_dict(await client.list_tasks(req))}
        elif command == "stream-cancel":
            tenant, agent, text = args
            client, _ = await make_client(base, token)
            canceller, _ = await make_client(base, token)
            items, cancelled = [], None
            async for item in client.send_message(request(tenant, agent, text)):
                items.append(as_dict(item))
                if cancelled is None and item.HasField("task"):
                    task = await canceller.cancel_task(CancelTaskRequest(id=item.task.id))
                    cancelled = as_dict(task)
            out = {"items": items, "cancelled": cancelled}
        elif command == "raw":
            (body,) = args
            out = await raw(base, token, json.loads(body))
        else:
            raise SystemExit(f"unknown command {command}")
    except Exception as e:  # the test reads what the SDK raised
        out = {"error": f"{type(e).__name__}: {e}"}
    if LEGACY:
        out["methods"] = METHODS
    print(json.dumps(out))


asyncio.run(main())
