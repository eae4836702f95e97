// The run inspector (`#/runs/ID/inspect`): an agent run step by step,
// read from what the server stores of it. A step shows the request the
// model was given (its messages, tools and options, as the run's log
// recorded them; rebuilt by the server for a log that recorded none,
// which it says), what the step added (the response, or the tools'
// results), what it spent and took, its tool calls with their durations
// and the files they changed. From a step a person can fork the run, or save the step
// as an `agentloop eval` case.
//
// Everything the model or a tool wrote is put into the page as text
// (text nodes), never parsed as HTML.

import { h, api, show, here, toast, errorLine, remember } from "./app.js";

const NEXT = { model: "Model call", tools: "Tool calls", end: "End" };

function seconds(ms) {
  return ms === null || ms === undefined ? "…" : `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

function tokenLine(tokens) {
  const cost = tokens.cost ? ` · $${tokens.cost.toFixed(4)}` : "";
  return `${tokens.input_tokens} in · ${tokens.output_tokens} out${cost}`;
}

function json(value) {
  return h("pre", { class: "args" }, JSON.stringify(value, null, 2));
}

// One block of a message, as text.
function block(b) {
  switch (b.type) {
    case "text": return h("pre", { class: "said" }, b.text);
    case "thinking": return h("pre", { class: "said muted" }, `(thinking) ${b.thinking}`);
    case "tool_use": return h("div", {}, h("div", { class: "muted" }, `calls ${b.name}`), json(b.input));
    case "tool_result": return h("div", {}, h("div", { class: "muted" }, b.is_error ? "tool failed:" : "tool answered:"),
      h("pre", { class: "said" }, b.content));
    default: return h("div", { class: "muted" }, `(${b.type})`);
  }
}

function message(m) {
  return h("div", { class: `msg ${m.role}`, "data-message": m.id },
    h("div", { class: "role" }, m.role), h("div", { class: "body" }, m.content.map(block)));
}

function section(id, title, open, ...children) {
  return h("details", { id, class: "inspect-part", open },
    h("summary", {}, title), ...children);
}

// A file a step changed: a diff where the log carries both sides, else
// what it carries.
function fileChange(change) {
  const lines = [];
  if (change.before !== undefined) {
    for (const line of change.before.split("\n")) lines.push(h("div", { class: "del" }, `- ${line}`));
  }
  if (change.after !== undefined) {
    for (const line of change.after.split("\n")) lines.push(h("div", { class: "add" }, `+ ${line}`));
  }
  const how = change.diff ? "diff (the call carries the text before and after)"
    : change.after !== undefined ? "new text only (the log does not hold what was there before)"
      : "listed only (the log carries no text of it)";
  return h("li", { class: "file", "data-path": change.path },
    h("div", {}, h("code", {}, change.path), ` · ${change.action}`,
      change.new_path ? [" → ", h("code", {}, change.new_path)] : null),
    h("div", { class: "muted" }, how),
    lines.length ? h("pre", { class: "diff" }, lines) : null);
}

// What a step changed in the project's folder, read from the file
// checkpoints the run took (shell and JavaScript changes too): a unified
// diff for text, else what changed.
function folderChange(change) {
  const kind = (line) => line.startsWith("+") && !line.startsWith("+++") ? "add"
    : line.startsWith("-") && !line.startsWith("---") ? "del" : null;
  const lines = (change.diff || "").split("\n").filter((line) => line.length)
    .map((line) => h("div", { class: kind(line) }, line));
  return h("li", { class: "file", "data-path": change.path },
    h("div", {}, h("code", {}, change.path), ` · ${change.change}`),
    change.summary ? h("div", { class: "muted" }, change.summary) : null,
    lines.length ? h("pre", { class: "diff" }, lines) : null);
}

function toolCall(call) {
  const took = call.duration_ms === null || call.duration_ms === undefined ? "" : ` · took ${seconds(call.duration_ms)}`;
  return h("div", { class: "panel tool-call", "data-call": call.id },
    h("div", {}, h("strong", {}, call.name), call.is_error ? " · failed" : "", h("span", { class: "muted call-took" }, took)),
    json(call.input),
    h("pre", { class: "said" }, call.result === null ? "(no result)" : call.result));
}

// What a person can do from a step: fork the run there, save it as an
// eval case.
function stepActions(runId, step) {
  const status = h("div", { id: "step-status" });
  const prompt = step.next === "model"
    ? h("input", { id: "fork-prompt", type: "text", "aria-label": "A message the fork takes first (optional)",
      placeholder: "Message for the fork (optional)" })
    : null;
  const caseText = h("pre", { id: "eval-case", class: "args", hidden: true });
  const download = h("a", { id: "eval-download", hidden: true }, "Download the case again");
  const fork = h("button", { type: "button", id: "fork-here", "data-needs": "editor", onclick: async () => {
    status.replaceChildren();
    const body = { at: step.seq };
    if (prompt && prompt.value.trim()) body.prompt = prompt.value;
    try {
      const forked = await api("POST", `/api/agent-runs/${runId}/fork`, body);
      toast("Forked: the new run starts from this step");
      location.hash = `#/runs/${forked.id}`;
    } catch (error) {
      status.replaceChildren(errorLine(error));
    }
  } }, "Fork from here");
  const save = h("button", { type: "button", id: "save-eval", onclick: async () => {
    status.replaceChildren();
    try {
      const dataset = await api("GET", `/api/agent-runs/${runId}/steps/${step.seq}/eval-case`);
      const text = `${JSON.stringify(dataset, null, 2)}\n`;
      caseText.textContent = text;
      caseText.hidden = false;
      if (download.href) URL.revokeObjectURL(download.href);
      download.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
      download.download = `${dataset.cases[0].name}.json`;
      download.hidden = false;
      download.click();
      toast("Saved as an eval case: run it with `agentloop eval FILE.json`");
    } catch (error) {
      status.replaceChildren(errorLine(error));
    }
  } }, "Save as eval case");
  return h("div", {}, h("div", { class: "actions" }, prompt, fork, save), status, download, caseText);
}

// The messages of a recorded request: ranges of the run's history sent as
// stored, and messages only this request carried (marked as such).
function sentMessages(inspection, request) {
  return request.messages.flatMap((part) => {
    if (part.history) return inspection.messages.slice(part.history.from, part.history.to).map(message);
    const shown = message(part.message);
    shown.classList.add("sent-only");
    shown.querySelector(".role").append(" · sent in this request only");
    return [shown];
  });
}

// The request a model step sent: as recorded, or rebuilt from the step's
// messages and the agent as configured now.
function requestSection(inspection, step, given) {
  const request = step.request;
  const messages = request ? sentMessages(inspection, request) : given.map(message);
  const tools = request
    ? request.tools.map((name) => inspection.tools.find((t) => t.name === name) || { name, description: "", input_schema: null })
    : inspection.tools;
  return section("step-request", `Request (${request ? "recorded" : "reconstructed"})`, true,
    section("request-messages", `Messages (${messages.length})`, false, messages),
    section("request-tools", `Tools (${tools.length})`, false,
      tools.map((t) => h("div", { class: "tool-def" }, h("strong", {}, t.name),
        h("div", { class: "muted" }, t.description), json(t.input_schema)))),
    section("request-options", "Options", false, json(request ? request.options : inspection.options)),
    request && request.response_format ? section("request-format", "Answer schema", false, json(request.response_format)) : null);
}

function stepDetail(runId, inspection, step, index) {
  const messages = inspection.messages;
  const given = messages.slice(0, step.messages_before);
  const added = messages.slice(step.messages_before, step.messages_after);
  const parts = [
    h("h2", {}, `Step ${index + 1}: ${NEXT[step.next] || step.next}`),
    h("p", { class: "muted", id: "step-facts" },
      `seq ${step.seq} · ${new Date(step.at).toLocaleString()} · took ${seconds(step.duration_ms)}`,
      step.next === "model" ? " (the model call's latency)" : step.next === "tools" ? " (its calls together)" : ""),
    h("p", { id: "step-tokens" }, `Tokens: ${tokenLine(step.tokens)}`),
    stepActions(runId, step),
  ];
  if (step.next === "model") {
    parts.push(requestSection(inspection, step, given));
    parts.push(section("step-response", "Response", true,
      added.length ? added.map(message) : h("p", { class: "muted" }, "No response is stored yet.")));
  }
  if (step.tool_calls.length) {
    parts.push(section("step-tools", `Tool calls (${step.tool_calls.length})`, true, step.tool_calls.map(toolCall)));
  }
  if (step.next === "tools") {
    parts.push(section("step-files", `Files changed (${step.files.length})`, true,
      step.files.length ? h("ul", { class: "files" }, step.files.map(fileChange))
        : h("p", { class: "muted" }, "No fs call of this step changed a file.")));
  }
  const folder = step.folder_changes;
  if (folder) {
    parts.push(section("step-folder", `Folder changes (${folder.changes.length})`, true,
      h("p", { class: "muted" }, folder.until === null
        ? "From the checkpoint before this step to the folder as it is now."
        : `From the checkpoint before this step to the one before step seq ${folder.until}.`),
      folder.changes.length ? h("ul", { class: "files" }, folder.changes.map(folderChange))
        : h("p", { class: "muted" }, "The step changed no file of the folder.")));
  }
  return parts;
}

export async function inspectorView(runId) {
  const stillHere = here();
  const [run, inspection] = await Promise.all([
    api("GET", `/api/agent-runs/${runId}`),
    api("GET", `/api/agent-runs/${runId}/inspection`),
  ]);
  if (!stillHere()) return;
  remember("runs", runId, `#/tasks/${run.task_id}`);
  const detail = h("section", { id: "step-detail", class: "panel", "aria-live": "polite" });
  const items = inspection.steps.map((step, index) => h("li", {},
    h("button", { type: "button", class: "step", "data-seq": step.seq, onclick: () => choose(index) },
      h("span", { class: "step-kind" }, `${index + 1}. ${NEXT[step.next] || step.next}`),
      h("span", { class: "muted" }, `${seconds(step.duration_ms)} · ${tokenLine(step.tokens)}`))));
  function choose(index) {
    items.forEach((item, i) => item.firstChild.setAttribute("aria-current", i === index ? "step" : "false"));
    detail.replaceChildren(...stepDetail(runId, inspection, inspection.steps[index], index));
  }
  show(h("p", {}, h("a", { href: `#/runs/${runId}` }, "← Run")),
    h("h1", {}, `Inspect ${run.agent_type} run`),
    h("p", { class: "muted", id: "inspect-note" }, inspection.note),
    inspection.steps.length
      ? h("div", { class: "inspector" }, h("ol", { id: "timeline", class: "timeline" }, items), detail)
      : h("p", { id: "no-steps" }, "This run keeps no steps."));
  if (inspection.steps.length) choose(0);
}
