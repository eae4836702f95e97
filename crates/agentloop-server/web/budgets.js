// Spend against budgets: the signed-in user's own (over every project
// they own), a project's, each of its tasks' and each of its schedules'.
// Each budget shows what was spent in its current period and what model
// calls in flight hold, against its limit; each scope's budgets can be
// edited (metric, period, limit) and saved whole. What the server says is
// shown as text.

import { h, api, show, here, toast, errorLine, remember } from "./app.js";

const METRICS = { cost: "Cost (USD)", tokens: "Tokens" };
const PERIODS = { day: "per day", month: "per month", total: "in total" };

// An amount as a person reads it: dollars to the cent (finer when small),
// tokens whole.
function amount(metric, value) {
  if (metric === "tokens") return `${Math.round(value).toLocaleString()} tokens`;
  const digits = value !== 0 && Math.abs(value) < 0.1 ? 4 : 2;
  return `${value.toFixed(digits)} USD`;
}

// One budget's spend against its limit.
function usageItem(budget) {
  const used = budget.spent + budget.reserved;
  const over = used >= budget.limit;
  return h("li", { class: "budget", "data-budget": `${budget.metric}-${budget.period}` },
    h("div", { class: "budget-head" },
      h("strong", {}, `${METRICS[budget.metric] || budget.metric} ${PERIODS[budget.period] || budget.period}`),
      h("span", { class: "muted" }, budget.period === "total" ? "" : ` (${budget.period_key})`)),
    h("meter", {
      min: "0", max: String(budget.limit || 1), value: String(Math.min(used, budget.limit || 1)),
      "aria-label": "Spent of the limit", class: over ? "budget-meter over" : "budget-meter",
    }),
    h("p", { class: "budget-spent" },
      `${amount(budget.metric, budget.spent)} spent of ${amount(budget.metric, budget.limit)}`,
      budget.reserved > 0 ? ` · ${amount(budget.metric, budget.reserved)} held by calls in flight` : "",
      over ? " · spent: its runs' next model calls are refused" : ""));
}

// One row of the editor: what it counts, when it starts again, its limit.
function editorRow(budget, onRemove) {
  const metric = h("select", { class: "budget-metric", "aria-label": "What it counts" },
    Object.entries(METRICS).map(([value, label]) => h("option", { value, selected: budget.metric === value }, label)));
  const period = h("select", { class: "budget-period", "aria-label": "When it starts again" },
    Object.entries(PERIODS).map(([value, label]) => h("option", { value, selected: budget.period === value }, label)));
  const limit = h("input", {
    class: "budget-limit", type: "number", min: "0", step: "any", required: true,
    "aria-label": "Limit", value: budget.limit === undefined ? "" : String(budget.limit),
  });
  const row = h("div", { class: "budget-row" }, metric, period, limit,
    h("button", { type: "button", class: "secondary danger budget-remove", onclick: () => onRemove(row) }, "Remove"));
  row.read = () => ({ metric: metric.value, period: period.value, limit: Number(limit.value) });
  return row;
}

// A scope's budgets: what they are, and their editor. `path` is the
// scope's `…/budgets` route.
function scopeSection(scope, title, path, shown, note) {
  const section = h("section", { class: "panel budgets", "data-scope": scope, "data-scope-id": shown.scope_id });
  const usage = h("ul", { class: "list budget-usage" });
  const rows = h("div", { class: "budget-rows" });
  const status = h("div", {});
  function render(budgets) {
    usage.replaceChildren(...(budgets.length
      ? budgets.map(usageItem)
      : [h("li", { class: "muted no-budgets" }, "No budget: its runs spend without a limit here.")]));
    rows.replaceChildren(...budgets.map((b) => editorRow(b, (row) => row.remove())));
  }
  const add = h("button", {
    type: "button", class: "secondary budget-add",
    onclick: () => rows.append(editorRow({ metric: "cost", period: "month" }, (row) => row.remove())),
  }, "Add a budget");
  const save = h("button", {
    type: "submit", class: "budget-save",
  }, "Save budgets");
  const editor = h("form", {
    class: "budget-editor",
    onsubmit: async (event) => {
      event.preventDefault();
      status.replaceChildren();
      const budgets = [...rows.children].map((row) => row.read());
      try {
        const saved = await api("PUT", path, { budgets });
        render(saved.budgets);
        toast("Budgets saved");
      } catch (error) {
        status.replaceChildren(errorLine(error));
      }
    },
  }, rows, h("div", { class: "actions" }, add, save), status);
  render(shown.budgets);
  section.append(...[h("h2", {}, title), note ? h("p", { class: "muted" }, note) : null, usage,
    h("details", { class: "budget-edit" }, h("summary", {}, "Edit budgets"), editor)].filter(Boolean));
  return section;
}

export async function budgetsView(projectId) {
  const stillHere = here();
  const [project, tasks, mine, own, listed] = await Promise.all([
    api("GET", `/api/projects/${projectId}`),
    api("GET", `/api/projects/${projectId}/tasks`),
    api("GET", "/api/me/budgets"),
    api("GET", `/api/projects/${projectId}/budgets`),
    api("GET", `/api/projects/${projectId}/schedules`),
  ]);
  const taskBudgets = await Promise.all(tasks.map((t) => api("GET", `/api/tasks/${t.id}/budgets`)));
  remember("projects", projectId, "#/");
  const titles = new Map(tasks.map((t) => [t.id, t.title]));
  const sections = [
    scopeSection("project", `This project: ${project.name}`, `/api/projects/${projectId}/budgets`, own,
      "Every agent run on the project's tasks."),
    scopeSection("user", "Your own budgets", "/api/me/budgets", mine,
      "Every agent run on every project you own."),
    ...tasks.map((task, i) => scopeSection("task", `Task: ${task.title}`, `/api/tasks/${task.id}/budgets`, taskBudgets[i])),
    ...listed.schedules.map((schedule) => scopeSection("schedule",
      `Schedule: ${schedule.cron} (${schedule.time_zone}) on ${titles.get(schedule.task_id) || schedule.task_id}`,
      `/api/schedules/${schedule.id}/budgets`,
      { scope_id: schedule.id, budgets: schedule.budgets },
      "The runs its ticks start, and the runs chained after them.")),
  ];
  if (!stillHere()) return;
  show(
    h("p", {}, h("a", { href: `#/projects/${projectId}` }, "← Project")),
    h("h1", {}, `Budgets of ${project.name}`),
    h("p", { class: "muted" },
      "Spend in the current period (UTC) against each budget. Before each model call its estimate is held against every budget of the run; a call that would take one past its limit is not made, and its run ends naming the budget."),
    sections,
  );
}
