"""A small A2A agent built with the reference Python SDK's server classes
(`a2a-sdk`: AgentExecutor, TaskUpdater, DefaultRequestHandler, the
JSON-RPC and agent-card routes), served by uvicorn on a loopback port.

Usage: sample_server.py MARKER_DIR
Prints `listening <port>` once it accepts connections.

- A message starting with "slow" works in steps of 0.2 s (a status update
  each, up to 150) before it completes; when it is cancelled, the executor's
  `cancel` writes MARKER_DIR/cancelled-<task id>.
- "ask" asks for input; the reply completes the task with "you said <reply>".
- Anything else: one working update, then an artifact "echo: <text>".
"""

import asyncio
import socket
import sys
from pathlib import Path

import uvicorn
from starlette.applications import Starlette

from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    TaskState,
)

MARKERS = Path(sys.argv[1])


class SampleExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        say = lambda words: new_text_message(words, task_id=task.id, context_id=task.context_id)
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([new_text_part(f"you said {text}")], name="answer")
            await updater.complete()
            return
        await updater.start_work(say(f"thinking about {text}"))
        if text.startswith("ask"):
            await updater.requires_input(say("what colour?"))
            return
        if text.startswith("slow"):
            for step in range(150):
                await asyncio.sleep(0.2)
                await updater.update_status(TaskState.TASK_STATE_WORKING, say(f"step {step}"))
        await updater.add_artifact([new_text_part(f"echo: {text}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        (MARKERS / f"cancelled-{context.task_id}").write_text("cancelled")
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


async def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    card = AgentCard(
        name="sample",
        description="Echoes, works slowly, or asks a question.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/rpc",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echoes", tags=["test"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=SampleExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/rpc")
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.05)
    print(f"listening {port}", flush=True)
    await serving


asyncio.run(main())
