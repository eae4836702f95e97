// The audit log: who did what, when, from which address. Without a
// project, the signed-in user's own entries; with one (its owner's view),
// every user's entries on it. Filters: user, time range, how many.

import { h, api, show, here, when, form, session } from "./app.js";

// Where an entry's target is shown, by the action's kind.
const TARGET_VIEWS = { run: "runs", task: "tasks", project: "projects" };

function targetCell(entry) {
  if (!entry.target) return "—";
  const kind = entry.action.split(".")[0];
  const view = Object.hasOwn(TARGET_VIEWS, kind) ? TARGET_VIEWS[kind] : null;
  // A deleted record has no page any more.
  const deleted = entry.action.endsWith(".delete");
  return view && !deleted ? h("a", { href: `#/${view}/${entry.target}` }, entry.target) : entry.target;
}

// How the action came in: a REST route, or a protocol (A2A, MCP).
function how(entry) {
  const detail = entry.detail || {};
  if (typeof detail.via === "string") return detail.method ? `${detail.via} ${detail.method}` : detail.via;
  if (typeof detail.method === "string" && typeof detail.route === "string") return `${detail.method} ${detail.route}`;
  return "";
}

// `value` of a `datetime-local` field as Unix milliseconds, or undefined.
function millis(value) {
  if (!value) return undefined;
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? undefined : ms;
}

export async function auditView(projectId) {
  const stillHere = here();
  const project = projectId ? await api("GET", `/api/projects/${projectId}`) : null;
  const user = h("input", { id: "audit-user", name: "user_id", placeholder: "a user id" });
  const since = h("input", { id: "audit-since", name: "since", type: "datetime-local" });
  const until = h("input", { id: "audit-until", name: "until", type: "datetime-local" });
  const limit = h("select", { id: "audit-limit", name: "limit" },
    ["100", "500", "1000"].map((n) => h("option", { value: n }, `the newest ${n}`)));
  const entriesBox = h("div", { id: "audit-entries" });

  async function load() {
    const query = new URLSearchParams();
    if (projectId) query.set("project_id", projectId);
    if (user.value.trim()) query.set("user_id", user.value.trim());
    const from = millis(since.value);
    const to = millis(until.value);
    if (from !== undefined) query.set("since", String(from));
    if (to !== undefined) query.set("until", String(to));
    query.set("limit", limit.value);
    const { entries } = await api("GET", `/api/audit?${query}`);
    const me = session && session.user;
    const who = (id) => {
      if (!id) return "the operator";
      return me && me.id === id ? `${me.name} (you)` : id;
    };
    // Newest first, as a log is read.
    const rows = [...entries].reverse().map((entry) => h("tr", { "data-audit": entry.id, "data-action": entry.action },
      h("td", { "data-label": "When" }, when(entry.at)),
      h("td", { "data-label": "Who" }, who(entry.user_id)),
      h("td", { "data-label": "What" }, h("code", {}, entry.action)),
      h("td", { "data-label": "On" }, targetCell(entry)),
      h("td", { "data-label": "How" }, how(entry)),
      h("td", { "data-label": "From" }, entry.address || "—")));
    entriesBox.replaceChildren(rows.length
      ? h("table", { class: "audit" },
        h("thead", {}, h("tr", {}, ["When", "Who", "What", "On", "How", "From"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows))
      : h("p", { class: "muted", id: "audit-empty" }, "No entries."));
  }

  const filters = form("panel inline", load,
    h("label", { for: "audit-user" }, "User", user),
    h("label", { for: "audit-since" }, "From", since),
    h("label", { for: "audit-until" }, "Before", until),
    h("label", { for: "audit-limit" }, "How many", limit),
    h("button", { type: "submit", id: "audit-filter" }, "Show"));

  await load();
  if (!stillHere()) return;
  show(
    project
      ? h("p", {}, h("a", { href: `#/projects/${projectId}` }, "← Project"))
      : h("p", {}, h("a", { href: "#/" }, "← Projects")),
    h("h1", {}, project ? `Audit log of ${project.name}` : "Your audit log"),
    h("p", { class: "muted" }, project
      ? "Every user's changes to this project: who, when, what, from which address."
      : "Your own changes, on every project: who, when, what, from which address."),
    filters,
    entriesBox,
  );
}
