"""Drives `agentloop serve`'s A2A endpoint with the reference Python SDK
(`a2a-sdk`'s `ClientFactory`): the card is read from the server's
well-known path, every call goes through the SDK's JSON-RPC transport.

Usage: client.py BASE_URL TOKEN COMMAND ARGS...
  send TENANT AGENT TEXT         SendMessage (blocking), prints the task
  stream TENANT AGENT TEXT       SendStreamingMessage, prints every item
  reply TASK_ID TEXT             streams a reply to an input-required task
  reply-data TASK_ID JSON        the same with a data part
  get TASK_ID                    GetTask
  cancel TASK_ID                 CancelTask
  stream-cancel TENANT AGENT TEXT
                                 streams, cancels the task from a second
                                 client at its first item, reads the rest

Prints one JSON object on its last line: {"items": [...]} or
{"task": ...}, or {"error": "<class>: <message>"} when the SDK raised.
"""

import asyncio
import json
import sys
import uuid

import httpx
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct, Value

from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
)


def as_dict(message):
    return MessageToDict(message)


async def make_client(base, token, streaming=True):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx.AsyncClient(headers=headers, timeout=60)
    config = ClientConfig(httpx_client=http, streaming=streaming)
    return await ClientFactory(config).create_from_url(base), http


def request(tenant, agent, text, task_id=None, data=None):
    parts = [Part(text=text)] if text is not None else []
    if data is not None:
        value = Value()
        value.struct_value.update(data)
        parts.append(Part(data=value))
    message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts)
    if task_id:
        message.task_id = task_id
    if agent:
        meta = Struct()
        meta.update({"agentType": agent})
        message.metadata.CopyFrom(meta)
    return SendMessageRequest(tenant=tenant or "", message=message)


async def collect(client, req):
    return [as_dict(item) for item in [i async for i in client.send_message(req)]]


async def main():
    base, token, command, *args = sys.argv[1:]
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
        else:
            raise SystemExit(f"unknown command {command}")
    except Exception as e:  # the test reads what the SDK raised
        out = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out))


asyncio.run(main())
