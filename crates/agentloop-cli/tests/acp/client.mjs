// Drives `agentloop acp` with the reference ACP client
// (@agentclientprotocol/sdk's client side) through one scenario and
// prints what it received as one JSON line.
// Usage: node client.mjs MODULES_DIR AGENT_COMMAND_JSON CWD SCENARIO, where
// AGENT_COMMAND_JSON is one command line, or one per agent started.
//   turns   a text prompt, a call allowed, a call refused, a turn cancelled
//           while asked, the session list
//   cancel  a prompt cancelled while its tool call runs
//   reload  a prompt, the agent killed (SIGKILL) and started again, the
//           session listed, loaded (its history replayed) and prompted
//   crash   as reload, the agent killed while it answers
//   editor    the fs tool reading and writing through the client's buffers
//   terminal  the shell tool running in the client's terminal
import { spawn } from "node:child_process";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [modules, commandJson, cwd, scenario] = process.argv.slice(2);
const acp = await import(
  pathToFileURL(join(modules, "@agentclientprotocol/sdk/dist/v1/stable/acp.js")).href
);
// One command, or one per start (the `reload` scenario starts two).
const commands = JSON.parse(commandJson);
let starts = 0;

// Every update per session, every permission request and how it was
// answered, every fs request: what the editor received.
const seen = { updates: {}, permissions: [], reads: [], writes: [] };
// Answers to permission requests, in order ("allow", "reject", ...).
const answers = [];
// Called with each update, so a scenario can act mid-turn.
let onUpdate = () => {};
// The editor's open buffers, for the `editor` scenario.
const buffers = new Map();

// The editor's terminals, for the `terminal` scenario: each runs its
// command as a process of the client.
const terminals = new Map();

function terminal(id) {
  const found = terminals.get(id);
  if (!found) throw new Error(`no terminal ${id}`);
  return found;
}

function start(fsOffered, terminalOffered = false) {
  const command = Array.isArray(commands[0]) ? commands[starts] : commands;
  starts += 1;
  const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp
    .client({ name: "agentloop-acp-test" })
    .onNotification("session/update", ({ params }) => {
      (seen.updates[params.sessionId] ??= []).push(params.update);
      onUpdate(params);
    })
    .onRequest("session/request_permission", async ({ params, agent }) => {
      const answer = answers.shift() ?? "cancelled";
      seen.permissions.push({ toolCall: params.toolCall, options: params.options, answer });
      // The person cancels the turn while asked: the request is answered
      // `cancelled`, as the protocol asks of a client that cancels.
      if (answer === "cancel") await agent.notify("session/cancel", { sessionId: params.sessionId });
      if (answer === "cancelled" || answer === "cancel") return { outcome: { outcome: "cancelled" } };
      return { outcome: { outcome: "selected", optionId: answer } };
    })
    .onRequest("fs/read_text_file", ({ params }) => {
      seen.reads.push(params.path);
      if (!buffers.has(params.path)) throw new Error(`no buffer ${params.path}`);
      return { content: buffers.get(params.path) };
    })
    .onRequest("terminal/create", ({ params }) => {
      const id = `term-${terminals.size + 1}`;
      seen.terminals = [...(seen.terminals ?? []), { id, command: params.command, args: params.args, cwd: params.cwd }];
      const process = spawn(params.command, params.args ?? [], { cwd: params.cwd });
      const entry = { process, output: "", exit: null };
      process.stdout.on("data", (data) => (entry.output += data));
      process.stderr.on("data", (data) => (entry.output += data));
      entry.exited = new Promise((resolve) =>
        process.once("exit", (exitCode, signal) => resolve((entry.exit = { exitCode, signal })))
      );
      terminals.set(id, entry);
      return { terminalId: id };
    })
    .onRequest("terminal/output", ({ params }) => {
      const entry = terminal(params.terminalId);
      return { output: entry.output, truncated: false, exitStatus: entry.exit ?? undefined };
    })
    .onRequest("terminal/wait_for_exit", async ({ params }) => terminal(params.terminalId).exited)
    .onRequest("terminal/kill", ({ params }) => {
      terminal(params.terminalId).process.kill();
      return {};
    })
    .onRequest("terminal/release", ({ params }) => {
      terminal(params.terminalId).process.kill();
      terminals.delete(params.terminalId);
      (seen.released ??= []).push(params.terminalId);
      return {};
    })
    .onRequest("fs/write_text_file", ({ params }) => {
      seen.writes.push({ path: params.path, content: params.content });
      buffers.set(params.path, params.content);
      return {};
    });
  const initialize = (ctx) =>
    ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {
        fs: { readTextFile: fsOffered, writeTextFile: fsOffered },
        terminal: terminalOffered,
      },
    });
  return { child, app, stream, initialize };
}

function text(prompt) {
  return [{ type: "text", text: prompt }];
}

// A second agent on the same database: the sessions listed, the first
// session loaded (its replayed updates kept apart), prompted again, and a
// session that does not exist asked for.
async function loadAgain() {
  const second = start(false);
  await second.app.connectWith(second.stream, async (ctx) => {
    seen.initialize = await second.initialize(ctx);
    seen.list = await ctx.request("session/list", {});
    const before = (seen.updates[seen.sessionId] ?? []).length;
    await ctx.request("session/load", { sessionId: seen.sessionId, cwd, mcpServers: [] });
    seen.replayed = (seen.updates[seen.sessionId] ?? []).slice(before);
    const { stopReason } = await ctx.request("session/prompt", {
      sessionId: seen.sessionId,
      prompt: text("what colour?"),
    });
    seen.secondStop = stopReason;
    seen.afterLoad = (seen.updates[seen.sessionId] ?? []).slice(before + seen.replayed.length);
    try {
      await ctx.request("session/load", { sessionId: "chat-missing", cwd, mcpServers: [] });
    } catch (e) {
      seen.missing = { code: e.code, message: e.message };
    }
  });
  second.child.kill();
}

async function run() {
  if (scenario === "turns") {
    const agent = start(false);
    await agent.app.connectWith(agent.stream, async (ctx) => {
      seen.initialize = await agent.initialize(ctx);
      const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
      seen.sessionId = sessionId;
      seen.stops = [];
      for (const [prompt, answer] of [
        ["hello", null],
        ["write notes", "allow"],
        ["write secrets", "reject"],
        ["write later", "cancel"],
      ]) {
        if (answer) answers.push(answer);
        const { stopReason } = await ctx.request("session/prompt", {
          sessionId,
          prompt: text(prompt),
        });
        seen.stops.push(stopReason);
      }
      seen.list = await ctx.request("session/list", {});
    });
    agent.child.kill();
  } else if (scenario === "cancel") {
    const agent = start(false);
    await agent.app.connectWith(agent.stream, async (ctx) => {
      await agent.initialize(ctx);
      const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
      seen.sessionId = sessionId;
      // Cancel as soon as the tool call is reported running.
      onUpdate = (params) => {
        const update = params.update;
        if (update.sessionUpdate.startsWith("tool_call") && update.status === "in_progress") {
          onUpdate = () => {};
          seen.cancelledWhile = update.toolCallId;
          ctx.notify("session/cancel", { sessionId });
        }
      };
      const { stopReason } = await ctx.request("session/prompt", {
        sessionId,
        prompt: text("run the slow thing"),
      });
      seen.stop = stopReason;
      // The session takes the next prompt.
      onUpdate = () => {};
      const after = await ctx.request("session/prompt", { sessionId, prompt: text("again") });
      seen.after = after.stopReason;
    });
    agent.child.kill();
  } else if (scenario === "reload") {
    const first = start(false);
    await first.app.connectWith(first.stream, async (ctx) => {
      await first.initialize(ctx);
      const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
      seen.sessionId = sessionId;
      seen.firstStop = (
        await ctx.request("session/prompt", { sessionId, prompt: text("remember blue") })
      ).stopReason;
      // Killed with no chance to tidy up, as a crash would.
      first.child.kill("SIGKILL");
      await new Promise((resolve) => first.child.once("exit", resolve));
      seen.killedBy = first.child.signalCode;
    }).catch((e) => {
      seen.firstConnectionError = String(e && e.message ? e.message : e);
    });
    await loadAgain();
  } else if (scenario === "crash") {
    const first = start(false);
    await first.app.connectWith(first.stream, async (ctx) => {
      await first.initialize(ctx);
      const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
      seen.sessionId = sessionId;
      // Killed mid-turn, as soon as the answer starts to stream.
      const killed = new Promise((resolve) => {
        onUpdate = (params) => {
          if (params.update.sessionUpdate === "agent_message_chunk") {
            onUpdate = () => {};
            first.child.kill("SIGKILL");
            first.child.once("exit", resolve);
          }
        };
      });
      ctx
        .request("session/prompt", { sessionId, prompt: text("remember blue") })
        .then((r) => (seen.firstStop = r.stopReason), (e) => (seen.firstError = String(e.message ?? e)));
      await killed;
      seen.killedBy = first.child.signalCode;
    }).catch((e) => {
      seen.firstConnectionError = String(e && e.message ? e.message : e);
    });
    await loadAgain();
  } else if (scenario === "terminal") {
    const agent = start(false, true);
    await agent.app.connectWith(agent.stream, async (ctx) => {
      await agent.initialize(ctx);
      const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
      seen.sessionId = sessionId;
      seen.stop = (
        await ctx.request("session/prompt", { sessionId, prompt: text("run it here") })
      ).stopReason;
    });
    agent.child.kill();
  } else if (scenario === "editor") {
    buffers.set(join(cwd, "draft.txt"), "unsaved words");
    const agent = start(true);
    await agent.app.connectWith(agent.stream, async (ctx) => {
      await agent.initialize(ctx);
      const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
      seen.stop = (
        await ctx.request("session/prompt", { sessionId, prompt: text("edit the draft") })
      ).stopReason;
    });
    agent.child.kill();
  } else {
    throw new Error(`unknown scenario ${scenario}`);
  }
}

try {
  await run();
} catch (e) {
  seen.error = String(e && e.stack ? e.stack : e);
}
console.log(JSON.stringify(seen));
process.exit(0);
