// The agentloop page: projects, tasks, agent runs and their conversations.
//
// Everything the model or a user wrote is put into the page as text
// (`textContent`, text nodes); nothing is ever parsed as HTML, so model
// output cannot inject markup or script. Links from markdown keep only
// http(s) targets.

import { messageBox } from "./steer.js";
import { memoriesView } from "./memories.js";
import { auditView } from "./audit.js";
import { inspectorView } from "./inspector.js";
import { budgetsView } from "./budgets.js";
import { schedulesView } from "./schedules.js";
import { actAs, allows, membersPanel } from "./roles.js";

const main = document.getElementById("main");
const toastBox = document.getElementById("toast");
const offlineNotice = document.getElementById("offline");
const who = document.getElementById("who");
const signOutButton = document.getElementById("sign-out");
const auditLink = document.getElementById("audit-link");

let session = null; // {user, csrf}
let socket = null;
const socketListeners = new Set();
let leaveView = () => {};
// What the current view does once the server answers again after it could
// not be reached: catch up with what happened meanwhile.
let reconnectView = () => {};

// ---------- DOM ----------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Each route() is a new view; a view whose requests answer after the
// person went elsewhere must not show (nor start listening): `here()`,
// taken when the view starts, says whether it is still the current one.
let routeGeneration = 0;

function here() {
  const mine = routeGeneration;
  return () => mine === routeGeneration;
}

function show(...children) {
  main.replaceChildren(...children.flat().filter(Boolean));
}

function toast(text) {
  toastBox.textContent = text;
  toastBox.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { toastBox.hidden = true; }, 4000);
}

function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

function statusBadge(status) {
  const marks = { running: "● ", waiting: "… ", completed: "✓ ", failed: "✗ ", cancelled: "■ ", stopped: "■ " };
  return h("span", { class: `badge ${status}` }, (marks[status] || "") + status);
}

// Why a person's action ended a run, by the API's `stopped_by`.
const STOPPED_BY = {
  workflow_complete: "stopped: the task was marked done",
  cancel: "cancelled by a person",
};

// A run's status as a person reads it: a run that Mark Done ended is
// recorded `completed`, yet it did not finish its work: it shows stopped.
function shownStatus(run) {
  return run.stopped_by === "workflow_complete" ? "stopped" : run.status;
}

function runBadge(run) {
  return statusBadge(shownStatus(run));
}

// One line on why a run ended, when its loop did not end it by itself.
function runNote(run) {
  if (run.status === "failed") return run.error ? run.error.message : "the server recorded no reason";
  if (run.stopped_by) return STOPPED_BY[run.stopped_by] || run.stop_message || `stopped by ${run.stopped_by}`;
  return null;
}

// `text` after `label`, unless the text already starts with it (an error
// message that says "Error: …" itself).
function labelled(label, text) {
  const value = String(text);
  return value.toLowerCase().startsWith(label.trim().toLowerCase()) ? value : `${label}${value}`;
}

// ---------- API ----------

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || `request failed (${status})`);
    this.status = status;
    this.body = body;
  }
}

// A request that never reached the server (it is down, or the network is).
class UnreachableError extends Error {
  constructor() {
    super("The server cannot be reached. The page reconnects by itself when it is back.");
    this.unreachable = true;
  }
}

async function api(method, path, body) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET" && session) headers["x-csrf-token"] = session.csrf;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    serverUnreachable();
    throw new UnreachableError();
  }
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { error: text }; }
  if (response.status === 401 && path !== "/api/session") {
    session = null;
    signIn();
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// A form whose submit runs `submit`; a failure shows under it as an alert.
function form(cls, submit, ...children) {
  const status = h("div", {});
  return h("form", {
    class: cls,
    onsubmit: async (event) => {
      event.preventDefault();
      status.replaceChildren();
      try {
        await submit();
      } catch (error) {
        status.replaceChildren(errorLine(error));
      }
    },
  }, ...children, status);
}

function errorLine(error) {
  return h("p", { class: "error", role: "alert" }, error.message || String(error));
}

// ---------- Reaching the server ----------

let reconnecting = null; // the health poll, while the server is unreachable

async function serverAnswers() {
  try {
    return (await fetch("/api/health", { cache: "no-store" })).ok;
  } catch {
    return false;
  }
}

// The server could not be reached: say so, ask its health until it
// answers (a little less often each time), then let the view catch up.
function serverUnreachable() {
  if (reconnecting) return;
  offlineNotice.hidden = false;
  reconnecting = (async () => {
    let pause = 500;
    while (!await serverAnswers()) {
      await new Promise((resolve) => { setTimeout(resolve, pause); });
      pause = Math.min(pause * 2, 4000);
    }
    offlineNotice.hidden = true;
    reconnecting = null;
    if (session) connectSocket();
    reconnectView();
  })();
}

// ---------- Live notices ----------

function connectSocket() {
  if (socket) return;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/api/ws`);
  socket.addEventListener("message", (event) => {
    let notice;
    try { notice = JSON.parse(event.data); } catch { return; }
    for (const listener of socketListeners) listener(notice);
  });
  socket.addEventListener("close", async () => {
    socket = null;
    if (!session) return;
    // A closed socket is often the first sign that the server went away.
    if (await serverAnswers()) setTimeout(connectSocket, 2000);
    else serverUnreachable();
  });
}

// ---------- Markdown (to DOM, never to HTML) ----------

function markdown(text) {
  const root = h("div", { class: "body" });
  const lines = String(text).replace(/\r\n/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^```(.*)$/);
    if (fence) {
      const code = [];
      i += 1;
      while (i < lines.length && !lines[i].startsWith("```")) code.push(lines[i++]);
      i += 1;
      root.append(h("pre", {}, h("code", {}, code.join("\n"))));
      continue;
    }
    const heading = line.match(/^(#{1,4})\s+(.*)$/);
    if (heading) {
      root.append(h(`h${Math.min(heading[1].length + 2, 6)}`, {}, inline(heading[2])));
      i += 1;
      continue;
    }
    if (/^\s*([-*]|\d+\.)\s+/.test(line)) {
      const ordered = /^\s*\d+\./.test(line);
      const list = h(ordered ? "ol" : "ul", {});
      while (i < lines.length && /^\s*([-*]|\d+\.)\s+/.test(lines[i])) {
        list.append(h("li", {}, inline(lines[i].replace(/^\s*([-*]|\d+\.)\s+/, ""))));
        i += 1;
      }
      root.append(list);
      continue;
    }
    if (line.trim() === "") { i += 1; continue; }
    const para = [];
    while (i < lines.length && lines[i].trim() !== "" && !/^(```|#{1,4}\s|\s*([-*]|\d+\.)\s)/.test(lines[i])) {
      para.push(lines[i++]);
    }
    root.append(h("p", {}, inline(para.join("\n"))));
  }
  return root;
}

// Inline code, bold, italic and links; everything else is text.
function inline(text) {
  const out = [];
  const pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*]+\*)|(\[[^\]]+\]\([^)\s]+\))/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) out.push(text.slice(last, match.index));
    const token = match[0];
    if (token.startsWith("`")) out.push(h("code", {}, token.slice(1, -1)));
    else if (token.startsWith("**")) out.push(h("strong", {}, token.slice(2, -2)));
    else if (token.startsWith("*")) out.push(h("em", {}, token.slice(1, -1)));
    else {
      const [, label, href] = token.match(/^\[([^\]]+)\]\(([^)\s]+)\)$/);
      out.push(safeUrl(href)
        ? h("a", { href, rel: "noopener noreferrer nofollow", target: "_blank" }, label)
        : `${label} (${href})`);
    }
    last = match.index + token.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

function safeUrl(href) {
  try {
    const url = new URL(href, location.href);
    return url.protocol === "https:" || url.protocol === "http:";
  } catch {
    return false;
  }
}

// ---------- Sign-in ----------

async function loadSession() {
  try {
    session = await api("GET", "/api/session");
  } catch {
    session = null;
  }
  who.textContent = session ? session.user.name : "";
  signOutButton.hidden = !session;
  auditLink.hidden = !session;
  if (session) connectSocket();
}

function signIn(message) {
  leaveView();
  who.textContent = "";
  signOutButton.hidden = true;
  auditLink.hidden = true;
  const input = h("input", { type: "password", name: "token", id: "token", autocomplete: "current-password", required: true });
  const signInForm = form("panel", async () => {
    try {
      session = await api("POST", "/api/session", { token: input.value.trim() });
    } catch (error) {
      throw error.status === 401 ? new Error("That token is not valid.") : error;
    }
    input.value = "";
    await loadSession();
    route();
  },
  h("label", { for: "token" }, "Access token (from `agentloop users create`)", input),
  h("div", { class: "actions" }, h("button", { type: "submit" }, "Sign in")));
  show(h("h1", {}, "Sign in"), message ? h("p", {}, message) : null, signInForm);
  input.focus();
}

signOutButton.addEventListener("click", async () => {
  try { await api("DELETE", "/api/session"); } catch { /* signed out either way */ }
  session = null;
  if (socket) socket.close();
  signIn("You are signed out.");
});

// ---------- Views ----------

async function projectsView() {
  const stillHere = here();
  const projects = await api("GET", "/api/projects");
  const name = h("input", { id: "project-name", name: "name", required: true });
  const folder = h("input", { id: "project-folder", name: "repoFolder", required: true, placeholder: "my-project" });
  const create = form("panel inline", async () => {
    const project = await api("POST", "/api/projects", { name: name.value, repoFolder: folder.value });
    location.hash = `#/projects/${project.id}`;
  },
  h("label", { for: "project-name" }, "Name", name),
  h("label", { for: "project-folder" }, "Folder", folder),
  h("button", { type: "submit" }, "Create project"));
  if (!stillHere()) return;
  show(
    h("h1", {}, "Projects"),
    projects.length
      ? h("ul", { class: "list" }, projects.map((p) =>
        h("li", {}, h("a", { href: `#/projects/${p.id}` }, p.name), " ", h("span", { class: "muted" }, p.repo_folder || ""))))
      : h("p", { class: "muted" }, "No projects yet."),
    h("h2", {}, "New project"),
    create,
  );
}

async function projectView(id) {
  const stillHere = here();
  const [project, tasks] = await Promise.all([
    api("GET", `/api/projects/${id}`),
    api("GET", `/api/projects/${id}/tasks`),
  ]);
  const title = h("input", { id: "task-title", name: "title", required: true });
  const create = form("panel inline", async () => {
    const task = await api("POST", `/api/projects/${id}/tasks`, { title: title.value });
    location.hash = `#/tasks/${task.id}`;
  }, h("label", { for: "task-title" }, "Title", title), h("button", { type: "submit" }, "Create task"));
  create.dataset.needs = "editor";
  const removal = deleteControl("project", "Delete project",
    "Delete this project and all its tasks, runs and conversations? Its folder stays on disk.",
    async () => {
      await api("DELETE", `/api/projects/${id}`);
      toast("Project deleted");
      location.hash = "#/";
    });
  removal.dataset.needs = "owner";
  if (!stillHere()) return;
  actAs(project.role);
  show(
    h("p", {}, h("a", { href: "#/" }, "← Projects")),
    h("h1", {}, project.name),
    h("p", { class: "muted" }, `Folder: ${project.repo_folder || "—"}`),
    h("p", { class: "actions" },
      h("a", { href: `#/projects/${id}/memories`, id: "project-memories" }, "Memories"),
      h("a", { href: `#/projects/${id}/budgets`, id: "project-budgets" }, "Budgets"),
      h("a", { href: `#/projects/${id}/schedules`, id: "project-schedules" }, "Schedules"),
      h("a", { href: `#/projects/${id}/audit`, id: "project-audit", "data-needs": "owner" }, "Audit log")),
    approvalsPanel(project),
    h("h2", {}, "Tasks"),
    tasks.length
      ? h("ul", { class: "list" }, tasks.map((t) => {
        remember("tasks", t.id, `#/projects/${id}`);
        return h("li", {}, h("a", { href: `#/tasks/${t.id}` }, t.title), t.workflow_complete ? h("span", { class: "muted" }, " (done)") : null);
      }))
      : h("p", { class: "muted" }, "No tasks yet."),
    h("h2", { "data-needs": "editor" }, "New task"),
    create,
    membersPanel(project),
    removal,
  );
}

// The policy covers the fs tool's changes (every command but view, glob
// and grep), JavaScript and the shell: the server's `policy::COVERED_TOOLS`.
const APPROVALS = {
  unattended: "Unattended: file changes, JavaScript and shell commands of this project's agents run without asking, jailed to its folder",
  ask: "Ask: file changes (create, edit, insert, delete, rename), JavaScript and shell commands wait for your approval on the run's page; reading files does not",
};

// The project's approval policy, with a control to change it: its own, or
// the server's default.
function approvalsPanel(project) {
  const policy = h("p", { id: "approvals-policy" });
  const perTool = h("p", { class: "muted" });
  const choice = h("select", { id: "project-approvals", name: "approvals" },
    h("option", { value: "" }, "Follow the server's default"),
    h("option", { value: "unattended" }, "Unattended"),
    h("option", { value: "ask" }, "Ask before file changes, JavaScript and shell commands"));
  const status = h("div", {});
  function render(current) {
    policy.replaceChildren(h("strong", {}, "Approvals: "), APPROVALS[current.approvals] || String(current.approvals),
      h("span", { class: "muted" }, current.approvals_source === "server" ? " (the server's default)" : " (set for this project)"));
    choice.value = current.approvals_source === "project" ? current.approvals : "";
    // A project's per-tool rules win over the policy, tool by tool.
    const tools = Object.keys(current.tool_approvals || {});
    perTool.hidden = tools.length === 0;
    perTool.textContent = `Per-tool rules win over it for: ${tools.join(", ")}`;
  }
  render(project);
  choice.addEventListener("change", async () => {
    status.replaceChildren();
    try {
      const changed = await api("PATCH", `/api/projects/${project.id}`, { approvals: choice.value || null });
      render(changed);
      toast("Approval policy saved");
    } catch (error) {
      render(project);
      status.replaceChildren(errorLine(error));
    }
  });
  const shell = h("p", { id: "project-shell" }, h("strong", {}, "Shell: "),
    project.shell ? "on: its agents run commands in a sandbox inside the project folder" : "off");
  return h("div", { class: "panel" }, policy, perTool, shell,
    h("label", { for: "project-approvals", "data-needs": "owner" }, "Change the approval policy", choice), status);
}

// A delete button that asks first, in the page, and says plainly why a
// delete was refused (409: a run of it is still active).
function deleteControl(what, label, question, remove) {
  const box = h("div", { class: "actions" });
  const status = h("div", {});
  const ask = h("button", { type: "button", class: "secondary danger", id: `delete-${what}`, onclick: showQuestion }, `${label}…`);
  function reset() {
    box.replaceChildren(ask);
  }
  function showQuestion() {
    status.replaceChildren();
    const keep = h("button", { type: "button", class: "secondary", onclick: reset }, "Keep it");
    box.replaceChildren(h("div", { class: "panel confirm", role: "group", "aria-label": label },
      h("p", {}, question),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "danger", id: `confirm-delete-${what}`, onclick: act }, label), keep)));
    keep.focus();
  }
  async function act() {
    status.replaceChildren();
    try {
      await remove();
    } catch (error) {
      reset();
      status.replaceChildren(error.status === 409 ? refusal(error) : errorLine(error));
    }
  }
  reset();
  return h("div", {}, h("h2", {}, label), box, status);
}

// A 409 for a delete: the server names the active run; the way out is to
// cancel it, which its message may already say.
function refusal(error) {
  const message = /[.!]$/.test(error.message) ? error.message : `${error.message}.`;
  const run = error.body && (error.body.runningAgent || error.body.agentRun);
  return h("p", { class: "error", role: "alert" }, `Not deleted: ${message}`,
    /cancel/i.test(message) ? null : " Cancel that run or let it end, then delete.",
    run ? [" ", h("a", { href: `#/runs/${run.id}` }, "Open the run")] : null);
}

const AGENTS = [
  ["planification", "Run Planification", "Planification agent started"],
  ["implementation", "Run Implementation", "Implementation agent started"],
  ["review", "Run Review", "Review agent started"],
];

async function taskView(id) {
  const stillHere = here();
  let task = await api("GET", `/api/tasks/${id}`);
  remember("tasks", id, `#/projects/${task.project_id}`);
  const { role } = await api("GET", `/api/projects/${task.project_id}`);
  const doc = await api("GET", `/api/tasks/${id}/document`);
  const runsBox = h("div", {});
  const conflict = h("div", {});
  const editor = h("textarea", { id: "task-doc", name: "content", "aria-label": "Task document" });
  editor.value = doc.content || "";
  editor.readOnly = !allows(role, "editor");
  const docStatus = h("span", { class: "muted", role: "status" });
  const done = h("input", { type: "checkbox", id: "mark-done", checked: task.workflow_complete });

  const chainBox = h("div", { id: "chain-end" });
  function showChain() {
    const end = task.chain_status === "stopped" ? task.chain_end : null;
    chainBox.replaceChildren(end ? h("p", { class: "error", role: "status" },
      `Chain stopped (${end.reason}) after ${end.runs} agent runs, ${end.tokens} tokens: ${end.message}`) : "");
  }

  async function refreshRuns() {
    task = await api("GET", `/api/tasks/${id}`);
    showChain();
    const runs = await api("GET", `/api/tasks/${id}/agent-runs`);
    for (const run of runs) remember("runs", run.id, `#/tasks/${id}`);
    runsBox.replaceChildren(runs.length ? runsTable(runs, refreshRuns) : h("p", { class: "muted" }, "No agent runs yet."));
  }

  const buttons = AGENTS.map(([agentType, label, started]) => h("button", {
    type: "button",
    "data-agent": agentType,
    onclick: async () => {
      conflict.replaceChildren();
      try {
        await api("POST", `/api/tasks/${id}/agent-runs`, { agentType });
        toast(started);
        await refreshRuns();
      } catch (error) {
        if (error.status === 409 && error.body && error.body.runningAgent) {
          const active = error.body.runningAgent;
          conflict.replaceChildren(h("p", { class: "error", role: "alert" },
            active.status === "waiting"
              ? `A run is waiting for your decision: ${active.agent_type} (`
              : `An agent is already running: ${active.agent_type} (`,
            h("a", { href: `#/runs/${active.id}` }, "open it"),
            active.status === "waiting" ? "). Decide its pending calls or cancel it first." : ")."));
        } else {
          conflict.replaceChildren(errorLine(error));
        }
      }
    },
  }, label));

  done.addEventListener("change", async () => {
    try {
      task = await api("PUT", `/api/tasks/${id}/workflow-complete`, { complete: done.checked });
      toast(done.checked ? "Marked done: running agents were stopped" : "Marked not done");
      await refreshRuns();
    } catch (error) {
      done.checked = !done.checked;
      conflict.replaceChildren(errorLine(error));
    }
  });

  if (!stillHere()) return;
  const listener = (notice) => {
    if (notice.taskId === id) refreshRuns().catch(() => {});
  };
  socketListeners.add(listener);
  leaveView = () => socketListeners.delete(listener);
  reconnectView = () => refreshRuns().catch(() => {});
  const removal = deleteControl("task", "Delete task", "Delete this task, its agent runs and their conversations?", async () => {
    await api("DELETE", `/api/tasks/${id}`);
    toast("Task deleted");
    location.hash = `#/projects/${task.project_id}`;
  });
  removal.dataset.needs = "editor";
  actAs(role);

  show(
    h("p", {}, h("a", { href: `#/projects/${task.project_id}` }, "← Project")),
    h("h1", {}, task.title),
    h("div", { class: "actions", id: "start-agents", "data-needs": "editor" }, buttons),
    h("div", { class: "panel", "data-needs": "editor" }, h("label", { class: "check", for: "mark-done" }, done,
      h("span", {}, "Mark Done (stops the chain and any running agent)"))),
    conflict,
    chainBox,
    h("h2", {}, "Agent runs"),
    runsBox,
    h("h2", {}, "Task document"),
    editor,
    h("div", { class: "actions", "data-needs": "editor" }, h("button", {
      type: "button",
      id: "save-doc",
      onclick: async () => {
        try {
          await api("PUT", `/api/tasks/${id}/document`, { content: editor.value });
          docStatus.textContent = "Saved.";
        } catch (error) {
          docStatus.textContent = error.message;
        }
      },
    }, "Save document"), docStatus),
    removal,
  );
  await refreshRuns();
}

// How much of a run's note the runs table shows; its page shows it all.
const NOTE_SHOWN = 400;

// The task's runs, one row each; why a run ended (a failure's reason can
// be long) goes in a row of its own under it, so it never squeezes the
// other columns. On a phone each run is a card (see app.css).
function runsTable(runs, refresh) {
  const columns = ["Agent", "Status", "Started", "Ended", "Tokens / cost", ""];
  const cell = (column, ...content) => h("td", { "data-label": columns[column] || null }, ...content);
  const rows = runs.flatMap((run) => {
    const row = h("tr", { "data-run": run.id },
      cell(0, h("a", { href: `#/runs/${run.id}` }, run.agent_type)),
      cell(1, runBadge(run)),
      cell(2, when(run.created_at)),
      cell(3, when(run.completed_at)),
      cell(4, run.tokens ? `${run.tokens.input_tokens + run.tokens.output_tokens} tokens · $${Number(run.tokens.cost || 0).toFixed(4)}` : "—"),
      cell(5, run.status === "running" || run.status === "waiting"
        ? h("button", {
          type: "button",
          class: "danger",
          "data-needs": "editor",
          onclick: async () => {
            try { await api("POST", `/api/agent-runs/${run.id}/cancel`); toast("Run cancelled"); } catch (error) { toast(error.message); }
            await refresh();
          },
        }, "Cancel")
        : null));
    const note = runNote(run);
    if (!note) return [row];
    const shown = note.length > NOTE_SHOWN
      ? [note.slice(0, NOTE_SHOWN), "… ", h("a", { href: `#/runs/${run.id}` }, "the whole reason")]
      : [note];
    return [row, h("tr", { class: "run-note", "data-note-of": run.id },
      h("td", { colspan: columns.length, class: run.status === "failed" ? "reason" : "muted" }, ...shown))];
  });
  return h("table", { class: "runs" },
    h("thead", {}, h("tr", {}, columns.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows));
}

// ---------- Run view ----------

async function runView(id) {
  const stillHere = here();
  let run = await api("GET", `/api/agent-runs/${id}`);
  remember("runs", id, `#/tasks/${run.task_id}`);
  const project = await api("GET", `/api/tasks/${run.task_id}`)
    .then((task) => api("GET", `/api/projects/${task.project_id}`))
    .catch(() => null);
  const active = () => run.status === "running" || run.status === "waiting";
  const steering = messageBox(id, project && project.steer_strategy, active,
    (other) => { location.hash = `#/runs/${other}`; });
  const header = h("div", {});
  const conversation = h("div", { id: "conversation", "aria-live": "polite" });
  const totals = h("p", { class: "totals" });
  let ending = null; // the "Run ended" panel, once the run has ended
  const showEnding = () => {
    if (ending) return;
    ending = h("div", { class: "panel", id: "run-ended", role: "status" });
    conversation.append(ending);
    refresh();
  };
  const view = new Conversation(conversation, totals, id, showEnding);
  view.onUserMessage = (messageId) => steering.delivered(messageId);
  function renderHeader() {
    const active = run.status === "running" || run.status === "waiting";
    header.replaceChildren();
    append(header, [
      h("p", {}, h("a", { href: `#/tasks/${run.task_id}` }, "← Task")),
      h("h1", {}, `${run.agent_type} run `, runBadge(run)),
      h("p", {}, h("a", { href: `#/runs/${id}/inspect`, id: "inspect-link" }, "Inspect its steps")),
      active ? h("div", { class: "actions", "data-needs": "editor" }, h("button", {
        type: "button",
        class: "danger",
        id: "cancel-run",
        onclick: async () => {
          try { await api("POST", `/api/agent-runs/${id}/cancel`); toast("Run cancelled"); } catch (error) { toast(error.message); }
          refresh();
        },
      }, "Cancel run")) : null,
    ]);
    if (run.status !== "waiting") view.resumed();
    steering.refresh();
  }
  async function refresh() {
    try {
      run = await api("GET", `/api/agent-runs/${id}`);
      renderHeader();
      if (ending) ending.replaceChildren(...await endedLines(run));
    } catch { /* the next notice tries again */ }
  }
  renderHeader();
  if (!stillHere()) return;
  steering.el.dataset.needs = "editor";
  actAs(project && project.role);
  show(header, conversation, totals, steering.el);
  // The run's log, streamed; events seen already are skipped, so a stream
  // opened again replays nothing twice.
  let events = null;
  function follow() {
    events = new EventSource(`/api/agent-runs/${id}/events`);
    for (const name of EVENT_NAMES) {
      events.addEventListener(name, (event) => {
        try { view.apply(JSON.parse(event.data)); } catch (error) { console.error(error); }
      });
    }
    // The stream closes after the terminal event, or while the run waits,
    // or when the server goes away (then the browser opens it again). A
    // run that ended before its loop began has no terminal event: its
    // record says how it ended.
    events.addEventListener("error", async () => {
      if (ending) return;
      await refresh();
      if (run.status !== "running" && run.status !== "waiting") {
        events.close();
        showEnding();
      }
    });
  }
  follow();
  // This run's status changes, and the next run of the chain starting.
  const listener = (notice) => {
    if (notice.agentRunId === id || notice.taskId === run.task_id) refresh();
  };
  socketListeners.add(listener);
  leaveView = () => { events.close(); socketListeners.delete(listener); };
  // Back after the server was unreachable: the run's record again, and its
  // stream if the browser gave up on it.
  reconnectView = async () => {
    await refresh();
    if (!ending && events.readyState === EventSource.CLOSED) follow();
  };
}

// How a run ended, from its record: its status, why it failed or who
// stopped it, and the run the chain started after it.
async function endedLines(run) {
  const lines = [h("p", {}, "Run ended: ", runBadge(run))];
  if (run.status === "failed") {
    lines.push(h("p", { class: "reason", id: "run-error" }, h("strong", {}, "Why it failed: "), runNote(run)));
  } else if (run.stopped_by) {
    const note = runNote(run);
    lines.push(h("p", { class: "muted", id: "run-stopped" }, `${note[0].toUpperCase()}${note.slice(1)}.`));
  }
  if (run.status === "completed" && !run.stopped_by) {
    const runs = await api("GET", `/api/tasks/${run.task_id}/agent-runs`);
    const started = (r) => Date.parse(r.created_at);
    const next = runs.filter((r) => r.id !== run.id && started(r) >= started(run))
      .sort((x, y) => started(x) - started(y))[0];
    if (next) {
      const name = next.agent_type;
      lines.push(h("p", { id: "chain-next" }, `${name[0].toUpperCase()}${name.slice(1)} has started: `,
        h("a", { href: `#/runs/${next.id}` }, `open the ${name} run`), " ", runBadge(next)));
    }
  }
  return lines;
}

const EVENT_NAMES = ["streaming_start", "first_chunk", "streaming_chunk", "streaming_end", "message_created",
  "tokens_consumed", "pending_tool_result", "tool_start", "tool_block_update", "tool_end", "agent_start",
  "agent_turn_start", "agent_reason", "agent_request_input", "agent_tool_start", "agent_tool_complete",
  "agent_observe", "agent_completion", "agent_error", "context_compacted", "approval_requested", "finished"];

class Conversation {
  constructor(root, totals, runId, onEnd) {
    this.root = root;
    this.totalsLine = totals;
    this.runId = runId;
    this.onEnd = onEnd;
    this.waitingNotice = null;
    this.seen = new Set();
    this.tokens = { input: 0, output: 0, cost: 0 };
    this.streams = new Map(); // path key -> {el, blocks}
    this.tools = new Map(); // tool_use_id -> card
    this.onUserMessage = () => {}; // a person's message joined the transcript
  }

  container(path) {
    if (!path || path.length === 0) return this.root;
    const card = this.tools.get(path[path.length - 1]);
    return card ? card.nested : this.root;
  }

  apply(event) {
    if (this.seen.has(`${(event.path || []).join("/")}#${event.seq}#${event.type}`)) return;
    this.seen.add(`${(event.path || []).join("/")}#${event.seq}#${event.type}`);
    const path = event.path || [];
    const key = path.join("/");
    const into = this.container(path);
    // Anything after the run's suspension means it went on.
    if (!(event.type === "finished" && path.length === 0)) this.resumed();
    switch (event.type) {
      case "streaming_start": {
        // A turn streamed again from its start (its server stopped midway
        // and the run was taken over, or its request was retried): the
        // cut-off part goes.
        const cut = this.streams.get(key);
        if (cut) cut.el.remove();
        // Shown once its first block starts: a turn that fails before
        // any content leaves no empty heading behind.
        const el = h("div", { class: "msg assistant" }, h("div", { class: "role" }, "assistant"));
        this.streams.set(key, { el, into, blocks: new Map() });
        break;
      }
      case "streaming_chunk": this.chunk(key, event.delta); break;
      case "message_created": this.message(key, into, event.message); break;
      case "tokens_consumed":
        if (path.length === 0) {
          this.tokens.input += event.tokens.input_tokens || 0;
          this.tokens.output += event.tokens.output_tokens || 0;
          this.tokens.cost += event.tokens.cost || 0;
          this.showTotals();
        }
        break;
      case "tool_start": this.card(into, event.tool_use_id, event.name, event.input).running(); break;
      case "tool_block_update": {
        const card = this.tools.get(event.tool_use_id);
        if (card) card.update(event.block);
        break;
      }
      case "tool_end": {
        const card = this.tools.get(event.tool_use_id);
        if (card) card.ended(event.is_error);
        break;
      }
      case "approval_requested": {
        const card = this.card(into, event.tool_use_id, event.tool, event.arguments);
        card.waiting("waits for approval");
        break;
      }
      case "agent_reason": case "agent_observe": case "agent_error":
        into.append(h("p", { class: "muted note" }, labelled(`${event.type.replace("agent_", "")}: `, event.message)));
        break;
      case "agent_request_input":
        into.append(h("p", { class: "muted note" }, labelled("question: ", event.question)));
        break;
      case "finished": if (path.length === 0) this.finished(event.result); break;
      default: break;
    }
  }

  chunk(key, delta) {
    const stream = this.streams.get(key);
    if (!stream) return;
    if (delta.kind === "block_start") {
      const block = delta.block || {};
      let el;
      if (block.type === "thinking") {
        el = h("details", { class: "thinking" }, h("summary", {}, "Thinking"), h("div", { class: "streaming" }));
      } else if (block.type === "tool_use") {
        el = h("pre", { class: "args" }, `${block.name || "tool"} `);
      } else {
        el = h("div", { class: "streaming body" });
      }
      if (!stream.el.isConnected) stream.into.append(stream.el);
      stream.el.append(el);
      stream.blocks.set(delta.index, el.querySelector(".streaming") || el);
      return;
    }
    const target = stream.blocks.get(delta.index);
    if (!target) return;
    if (delta.kind === "text") target.append(delta.text);
    else if (delta.kind === "thinking") target.append(delta.thinking);
    else if (delta.kind === "tool_input") target.append(delta.partial_json);
  }

  message(key, into, message) {
    if (message.role === "assistant") {
      const stream = this.streams.get(key);
      this.streams.delete(key);
      const el = h("div", { class: "msg assistant", "data-message": message.id }, h("div", { class: "role" }, "assistant"));
      for (const block of message.content) {
        if (block.type === "text" && block.text.trim()) el.append(markdown(block.text));
        else if (block.type === "thinking") el.append(h("details", { class: "thinking" }, h("summary", {}, "Thinking"), h("div", { class: "streaming" }, block.thinking)));
        else if (block.type === "redacted_thinking") el.append(h("p", { class: "muted" }, "(thinking redacted by the provider)"));
      }
      // A turn of tool calls only has no text of its own: its cards follow.
      const visible = el.childElementCount > 1;
      if (stream && stream.el.isConnected) {
        if (visible) stream.el.replaceWith(el); else stream.el.remove();
      } else if (visible) {
        into.append(el);
      }
      for (const block of message.content) {
        if (block.type === "tool_use") this.card(into, block.id, block.name, block.input);
      }
      return;
    }
    const results = message.content.filter((b) => b.type === "tool_result");
    for (const result of results) {
      const card = this.tools.get(result.tool_use_id);
      if (card) card.result(result.content, result.is_error);
    }
    const texts = message.content.filter((b) => b.type === "text");
    if (message.role === "user" && key === "") this.onUserMessage(message.id);
    if (texts.length && message.role === "user") {
      into.append(h("div", { class: "msg user", "data-message": message.id }, h("div", { class: "role" }, "user"),
        markdown(texts.map((t) => t.text).join("\n\n"))));
    }
  }

  card(into, id, name, input) {
    let card = this.tools.get(id);
    if (!card) {
      card = new ToolCard(id, name, input);
      this.tools.set(id, card);
      into.append(card.el);
    }
    return card;
  }

  finished(result) {
    this.streams.clear();
    if (result.status !== "suspended") {
      this.onEnd(result);
      return;
    }
    this.waitingNotice = h("p", { class: "panel", id: "waiting-notice", role: "status" },
      statusBadge("waiting"), " The run waits for your decision on the calls above.");
    this.root.append(this.waitingNotice);
    for (const item of result.pending || []) {
      const card = this.tools.get(item.call.id) || this.card(this.container(item.path), item.call.id, item.call.name, item.call.input);
      card.decide(item, this.runId, () => this.resumed());
    }
  }

  // The run no longer waits: its decisions were sent and it goes on.
  resumed() {
    if (this.waitingNotice) this.waitingNotice.remove();
    this.waitingNotice = null;
  }

  showTotals() {
    this.totalsLine.textContent = `Tokens: ${this.tokens.input} in, ${this.tokens.output} out · cost $${this.tokens.cost.toFixed(4)}`;
  }
}

// Seed 003's ToolResultView: the call, its arguments, a running spinner,
// a minion's task in a blue box, its nested work in pink, the result in
// green or red.
class ToolCard {
  constructor(id, name, input) {
    this.id = id;
    this.name = name;
    this.state = h("span", { class: "muted" }, "pending");
    this.info = h("div", {});
    // A tool's live output (the shell's last lines), as text.
    this.live = h("pre", { class: "live", hidden: true });
    this.nested = h("div", { class: "nested", hidden: true });
    this.outcome = h("div", {});
    this.controls = h("div", {});
    this.el = h("div", { class: "tool", "data-tool": id },
      h("div", { class: "head" }, h("span", { class: "name" }, name), this.state),
      h("details", {}, h("summary", {}, "Arguments"), h("pre", { class: "args" }, JSON.stringify(input, null, 2))),
      this.info, this.live, this.nested, this.outcome, this.controls);
    this.nestedObserver = new MutationObserver(() => { this.nested.hidden = this.nested.childElementCount === 0; });
    this.nestedObserver.observe(this.nested, { childList: true });
  }

  running() {
    this.state.replaceChildren(h("span", { class: "spinner", "aria-hidden": "true" }), " running");
  }

  waiting(text) {
    this.state.replaceChildren("… ", text);
  }

  ended(isError) {
    this.state.replaceChildren(isError ? "✗ failed" : "✓ done");
  }

  update(block) {
    const blocks = (block.rendering_groups || []).flatMap((g) => g.blocks || []);
    const output = blocks.filter((b) => b.type === "text").map((b) => b.text).join("\n");
    if (output) {
      this.live.hidden = false;
      this.live.textContent = output;
    }
    const info = blocks.find((b) => b.type === "tool_info");
    if (info && info.input) {
      this.info.replaceChildren(h("div", { class: "info" },
        h("strong", {}, "Task: "), info.input,
        info.chat_id ? h("div", { class: "muted" }, `chat ${info.chat_id}`) : null,
        h("div", { class: "actions" }, h("button", {
          type: "button",
          class: "secondary",
          onclick: () => navigator.clipboard && navigator.clipboard.writeText(this.nested.innerText || ""),
        }, "Copy All"))));
    }
  }

  result(content, isError) {
    this.controls.replaceChildren();
    this.live.hidden = true;
    // The shell's result says how its command ended; the card shows it.
    const exit = this.name === "shell" && typeof content === "string" ? /^exit code: (-?\d+)$/m.exec(content) : null;
    const ended = exit ? ` (exit ${exit[1]})` : "";
    this.state.replaceChildren((isError ? "✗ error" : "✓ done") + ended);
    // An error's text often says "Error: …" itself: not twice.
    const label = isError ? "Error: " : "Result: ";
    const said = isError && labelled(label, content) === String(content);
    this.outcome.replaceChildren(h("div", { class: `result ${isError ? "bad" : "ok"}` },
      said ? null : h("span", { class: "muted" }, label), content));
  }

  decide(item, runId, onResumed) {
    this.waiting(item.kind === "question" ? "waits for your answer" : "waits for approval");
    // A person sees exactly what they approve; a question shows as a
    // question, its arguments stay folded.
    const args = this.el.querySelector("details");
    if (args && item.kind !== "question") args.open = true;
    const status = h("div", {});
    const reason = h("textarea", { "aria-label": item.kind === "question" ? "Your answer" : "Reason for rejecting" });
    const send = async (decision) => {
      status.replaceChildren();
      try {
        const answer = await api("POST", `/api/agent-runs/${runId}/decisions`, { decisions: [{ call_id: item.call.id, ...decision }] });
        this.controls.replaceChildren(h("p", { class: "muted" }, "Decision sent."));
        if (answer && answer.resumed) onResumed();
      } catch (error) {
        status.replaceChildren(errorLine(error));
      }
    };
    const button = (decision, cls, label, onclick) =>
      h("button", { type: "button", class: cls, "data-decision": decision, onclick }, label);
    if (item.kind === "question") {
      const { question, choices } = asked(item);
      const picks = choices.length
        ? h("div", { class: "actions choices", role: "group", "aria-label": "Choices", "data-needs": "editor" }, choices.map((choice) =>
          h("button", { type: "button", class: "secondary choice", "data-choice": choice,
            onclick: () => send({ decision: "answer", text: choice }) }, choice)))
        : null;
      const answer = () => {
        if (!reason.value.trim()) {
          status.replaceChildren(errorLine(new Error(choices.length
            ? "Write an answer, or choose one of the choices above."
            : "Write an answer first.")));
          reason.focus();
          return;
        }
        send({ decision: "answer", text: reason.value });
      };
      this.controls.replaceChildren(h("div", { class: "pending" },
        h("p", { class: "question" }, h("strong", {}, "Question: "), question),
        picks,
        h("label", { "data-needs": "editor" }, choices.length ? "Or write your own answer" : "Answer", reason),
        h("div", { class: "actions", "data-needs": "editor" },
          button("answer", "", "Answer", answer),
          button("decline", "secondary", "Decline", () => send({ decision: "reject", reason: reason.value }))),
        status));
      return;
    }
    // Approving with edited arguments: the text must be a JSON object.
    const edited = h("textarea", { class: "edit-args", "aria-label": "Arguments to run the call with (a JSON object)" });
    edited.value = JSON.stringify(item.call.input ?? {}, null, 2);
    const editor = h("div", { hidden: true, "data-needs": "editor" },
      h("label", {}, "Arguments to run the call with (a JSON object)", edited),
      h("div", { class: "actions" }, button("approve_edited", "", "Approve with these arguments", () => {
        const parsed = jsonObject(edited.value);
        if (parsed.error) status.replaceChildren(errorLine(new Error(parsed.error)));
        else send({ decision: "approve", arguments: parsed.value });
      })));
    this.showDecisions(item, reason, status, editor, [
      button("approve", "", "Approve", () => send({ decision: "approve" })),
      button("approve_always", "secondary", `Always approve ${item.call.name} in this run`, () => send({ decision: "approve_always" })),
      button("edit", "secondary", "Edit arguments…", () => { editor.hidden = !editor.hidden; if (!editor.hidden) edited.focus(); }),
      button("reject", "danger", "Reject", () => send({ decision: "reject", reason: reason.value }))]);
  }

  showDecisions(item, reason, status, editor, buttons) {
    this.controls.replaceChildren(h("div", { class: "pending" },
      h("p", {}, labelled("Waits for your approval, because: ", item.reason)),
      h("label", { "data-needs": "editor" }, "Reason (sent to the model if you reject)", reason),
      h("div", { class: "actions", "data-needs": "editor" }, buttons), editor, status));
  }
}

// What a waiting question asks, and the answers it suggests: from the
// `ask_user` call's own arguments (its pending text lists the choices as
// lines), else the question the run recorded.
function asked(item) {
  const input = item.call && item.call.input;
  if (item.call && item.call.name === "ask_user" && input && typeof input.question === "string") {
    const choices = Array.isArray(input.choices)
      ? input.choices.filter((c) => typeof c === "string" && c.trim() !== "")
      : [];
    return { question: input.question, choices: [...new Set(choices)] };
  }
  return { question: item.question || "", choices: [] };
}

// `{value}` when `text` is a JSON object, else `{error}` saying what is wrong.
function jsonObject(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `The arguments are not valid JSON (${error.message}). Write a JSON object, like {"path": "notes.md"}.` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    const found = value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
    return { error: `The arguments must be a JSON object ({...}), not ${found}.` };
  }
  return { value };
}

// ---------- Routing ----------

// Where the page was last seen to hold a task or a run, so a record
// deleted meanwhile still leads back to its parent.
const parents = new Map(); // "tasks/ID" or "runs/ID" -> "#/projects/ID" or "#/tasks/ID"

function remember(kind, id, parentHash) {
  parents.set(`${kind}/${id}`, parentHash);
}

// What is gone, and what its parent is called.
const GONE = {
  projects: ["This project was deleted or does not exist."],
  tasks: ["This task was deleted or does not exist.", "its project"],
  runs: ["This agent run was deleted (with its task) or does not exist.", "its task"],
};

// A record the address names is not there (404): say so, and link back to
// its parent when the page saw it under one, and to the projects list.
function gone(kind, id) {
  const [text, parentName] = Object.hasOwn(GONE, kind) ? GONE[kind] : ["There is nothing at this address."];
  const parent = parents.get(`${kind}/${id}`);
  show(h("h1", { id: "not-found" }, "Not found"), h("p", {}, text),
    h("p", {}, parent ? h("a", { href: parent }, `Back to ${parentName}`) : null,
      parent ? " · " : null, h("a", { href: "#/" }, "All projects")));
}

async function route() {
  routeGeneration += 1;
  const current = here();
  leaveView();
  leaveView = () => {};
  reconnectView = () => {};
  actAs(null);
  if (!session) { signIn(); return; }
  const hash = location.hash.replace(/^#/, "") || "/";
  const parts = hash.split("/").filter(Boolean);
  const views = { projects: projectView, tasks: taskView, runs: runView };
  try {
    if (parts.length === 0) await projectsView();
    else if (parts[0] === "audit" && parts.length === 1) await auditView(null);
    else if (parts[0] === "projects" && parts[2] === "audit" && parts.length === 3) await auditView(parts[1]);
    else if (parts[0] === "projects" && parts[2] === "memories" && parts.length === 3) await memoriesView(parts[1]);
    else if (parts[0] === "runs" && parts[2] === "inspect" && parts.length === 3) await inspectorView(parts[1]);
    else if (parts[0] === "projects" && parts[2] === "budgets" && parts.length === 3) await budgetsView(parts[1]);
    else if (parts[0] === "projects" && parts[2] === "schedules" && parts.length === 3) await schedulesView(parts[1]);
    else if (Object.hasOwn(views, parts[0]) && parts[1]) await views[parts[0]](parts[1]);
    else gone(parts[0], parts[1]);
  } catch (error) {
    if (!current()) return;
    if (error.unreachable) {
      show(h("h1", {}, "The server cannot be reached"),
        h("p", { class: "muted" }, "This page shows once the server answers again, by itself."));
      reconnectView = route;
    } else if (error.status === 404) {
      gone(parts[0], parts[1]);
    } else if (error.status !== 401) {
      show(h("h1", {}, "Something went wrong"), errorLine(error));
    }
  }
  focusView();
}

// After a view changes, focus goes to its heading (or the content), so a
// screen reader reads where the person is; neither draws a focus frame, as
// neither is a control (app.css).
function focusView() {
  const heading = main.querySelector("h1");
  const target = heading || main;
  if (heading) heading.setAttribute("tabindex", "-1");
  target.focus({ preventScroll: true });
}

// What the views in their own files (steer.js, memories.js, audit.js,
// budgets.js, schedules.js) share with this one.
export { h, api, show, here, toast, when, form, errorLine, deleteControl, remember, session };

window.addEventListener("hashchange", route);
loadSession().then(route);
