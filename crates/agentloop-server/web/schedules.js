// A project's schedules: a cron expression in a time zone that starts an
// agent run on one of its tasks. Listed with the next tick and what the
// last tick did; created, paused, resumed and deleted here. A refused
// expression or zone is shown as the server words it, as text.

import { h, api, show, here, toast, when, form, errorLine, remember } from "./app.js";

const AGENTS = ["implementation", "review", "planification"];

// What the last tick did, as a sentence, with the run it started.
function lastOutcome(schedule) {
  const last = schedule.last_outcome;
  if (!last) return h("span", { class: "muted schedule-outcome" }, "No tick yet");
  const missed = last.missed ? ` (${last.missed} earlier missed)` : "";
  return h("span", { class: `schedule-outcome outcome-${last.outcome}`, "data-outcome": last.outcome },
    `${last.outcome} at ${when(last.tick_at)}${missed}`,
    last.agent_run_id ? [" · ", h("a", { href: `#/runs/${last.agent_run_id}`, class: "schedule-run" }, "its run")] : null,
    last.reason ? h("span", { class: "schedule-reason" }, ` · ${last.reason}`) : null);
}

export async function schedulesView(projectId) {
  const stillHere = here();
  const [project, tasks, listed] = await Promise.all([
    api("GET", `/api/projects/${projectId}`),
    api("GET", `/api/projects/${projectId}/tasks`),
    api("GET", `/api/projects/${projectId}/schedules`),
  ]);
  remember("projects", projectId, "#/");
  const titles = new Map(tasks.map((t) => [t.id, t.title]));
  const list = h("div", { id: "schedules" });

  function render(schedules) {
    list.replaceChildren(schedules.length
      ? h("ul", { class: "list schedules" }, schedules.map(item))
      : h("p", { class: "muted", id: "no-schedules" }, "No schedules yet."));
  }
  async function reload() {
    render((await api("GET", `/api/projects/${projectId}/schedules`)).schedules);
  }

  function item(schedule) {
    const status = h("div", {});
    const act = (change, done) => async () => {
      status.replaceChildren();
      try {
        await change();
        toast(done);
        await reload();
      } catch (error) {
        status.replaceChildren(errorLine(error));
      }
    };
    const toggle = h("button", {
      type: "button", class: "secondary schedule-toggle",
      onclick: act(() => api("PATCH", `/api/schedules/${schedule.id}`, { paused: !schedule.paused }),
        schedule.paused ? "Schedule resumed" : "Schedule paused"),
    }, schedule.paused ? "Resume" : "Pause");
    const keep = h("button", { type: "button", class: "secondary", onclick: () => ask(false) }, "Keep it");
    const confirmDelete = h("button", {
      type: "button", class: "danger schedule-confirm-delete",
      onclick: act(() => api("DELETE", `/api/schedules/${schedule.id}`), "Schedule deleted"),
    }, "Delete it");
    const confirm = h("div", { class: "actions", hidden: true },
      h("span", {}, "Delete this schedule and its budgets? Runs it started go on."), confirmDelete, keep);
    const remove = h("button", { type: "button", class: "secondary danger schedule-delete", onclick: () => ask(true) }, "Delete…");
    function ask(shown) {
      confirm.hidden = !shown;
      remove.hidden = shown;
      (shown ? keep : remove).focus();
    }
    const title = titles.get(schedule.task_id) || schedule.task_id;
    return h("li", { class: "schedule", "data-schedule": schedule.id, "data-paused": String(schedule.paused) },
      h("div", { class: "schedule-head" },
        h("code", { class: "schedule-cron" }, schedule.cron),
        h("span", { class: "muted" }, ` in ${schedule.time_zone}`),
        schedule.paused ? h("span", { class: "badge stopped schedule-paused" }, "paused") : null),
      h("p", {}, `Starts ${schedule.agent} on `, h("a", { href: `#/tasks/${schedule.task_id}` }, title)),
      schedule.prompt ? h("p", { class: "schedule-prompt" }, `Asking: ${schedule.prompt}`) : null,
      h("p", { class: "schedule-next" }, "Next tick: ",
        schedule.paused ? "none while paused" : when(schedule.next_fire_at)),
      h("p", {}, "Last tick: ", lastOutcome(schedule)),
      schedule.budgets.length
        ? h("p", { class: "muted schedule-budgets" }, `${schedule.budgets.length} budget(s): `,
          h("a", { href: `#/projects/${projectId}/budgets` }, "spend and limits"))
        : null,
      h("div", { class: "actions" }, toggle, remove),
      confirm,
      status);
  }

  const task = h("select", { id: "schedule-task", name: "task_id", required: true },
    tasks.map((t) => h("option", { value: t.id }, t.title)));
  const cron = h("input", { id: "schedule-cron", name: "cron", required: true, placeholder: "0 9 * * MON-FRI" });
  let zoneGuess = "UTC";
  try {
    zoneGuess = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    // An old browser: UTC.
  }
  const zone = h("input", { id: "schedule-zone", name: "time_zone", value: zoneGuess, required: true });
  const agent = h("select", { id: "schedule-agent", name: "agent" }, AGENTS.map((a) => h("option", { value: a }, a)));
  const prompt = h("textarea", { id: "schedule-prompt", name: "prompt", placeholder: "What each run is asked (optional)" });
  const create = form("panel schedule-form", async () => {
    await api("POST", `/api/projects/${projectId}/schedules`, {
      task_id: task.value,
      cron: cron.value,
      time_zone: zone.value,
      agent: agent.value,
      prompt: prompt.value.trim() ? prompt.value : undefined,
    });
    toast("Schedule created");
    cron.value = "";
    prompt.value = "";
    await reload();
  },
  h("label", { for: "schedule-task" }, "Task", task),
  h("label", { for: "schedule-cron" }, "Cron expression (5 fields, or 6 with seconds first)", cron),
  h("label", { for: "schedule-zone" }, "Time zone (IANA)", zone),
  h("label", { for: "schedule-agent" }, "Agent", agent),
  h("label", { for: "schedule-prompt" }, "Request", prompt),
  h("div", { class: "actions" }, h("button", { type: "submit", id: "schedule-create" }, "Create schedule")));

  render(listed.schedules);
  if (!stillHere()) return;
  show(
    h("p", {}, h("a", { href: `#/projects/${projectId}` }, "← Project")),
    h("h1", {}, `Schedules of ${project.name}`),
    h("p", { class: "muted" },
      "Each tick starts the agent on the task, once whichever servers run; a tick while the task's run still goes on is skipped. After downtime, the latest missed tick fires if it is at most 15 minutes old."),
    list,
    h("h2", {}, "New schedule"),
    tasks.length ? create : h("p", { class: "muted", id: "schedule-no-tasks" }, "Create a task first: a schedule starts runs on one."),
  );
}
