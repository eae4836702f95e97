// Messages to an agent run from its page ("steering"). The box stays
// usable while the run works: a message sent then is kept by the server
// and handled as the chosen strategy (else the project's) says — by
// default delivered at the run's next step. It shows as queued under the
// conversation until its `message_created` event arrives, which puts it in
// the transcript. A message to a run that has ended starts the task's next
// run with it, as a rollback does: the page goes to that run.

import { h, api, errorLine, toast } from "./app.js";

// The strategies a person can pick, by the API's names.
const STRATEGIES = [
  ["enqueue", "Queue it for the run's next step"],
  ["interrupt", "Interrupt the current step"],
  ["rollback", "Restart the run with it"],
  ["reject", "Refuse it while the run works"],
];

// An id for a message the page sends, so its delivery can be recognised.
function messageId() {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return `msg-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

// The message box of run `runId` (whose project's default strategy is
// `projectStrategy`, or null when unknown). `isActive()` says whether the
// run still works; `openRun(id)` shows another run of the task.
export function messageBox(runId, projectStrategy, isActive, openRun) {
  const queued = h("div", { id: "steer-queued", "aria-live": "polite" });
  const pending = new Map(); // message id -> its queued line
  const taken = new Set(); // ids of messages the transcript holds
  const text = h("textarea", { id: "message-text", name: "message", rows: 3,
    "aria-label": "Message to the agent" });
  const fallback = projectStrategy ? STRATEGIES.find(([name]) => name === projectStrategy) : null;
  const strategy = h("select", { id: "message-strategy", name: "strategy" },
    h("option", { value: "" }, fallback
      ? `As the project says (${fallback[0]})`
      : "As the project says"),
    STRATEGIES.map(([value, label]) => h("option", { value }, label)));
  const status = h("div", {});
  const hint = h("p", { class: "muted", id: "message-hint" });
  const send = h("button", { type: "submit", id: "send-message" }, "Send");

  function showHint() {
    hint.textContent = isActive()
      ? "The agent is working: your message reaches it at its next step (or as the strategy says)."
      : "The run has ended: your message starts the task's next run.";
  }

  const box = h("form", {
    class: "panel steer",
    id: "message-form",
    onsubmit: async (event) => {
      event.preventDefault();
      status.replaceChildren();
      const said = text.value;
      if (!said.trim()) {
        status.replaceChildren(errorLine(new Error("Write a message first.")));
        text.focus();
        return;
      }
      const id = messageId();
      const body = { type: "message", message: { id, role: "user", content: [{ type: "text", text: said }] } };
      if (strategy.value) body.strategy = strategy.value;
      send.disabled = true;
      try {
        const answer = await api("POST", `/api/agent-runs/${runId}/inputs`, body);
        text.value = "";
        const run = answer && answer.agent_run;
        // A new run started with it (a rollback, or the run had ended),
        // or the task's next run took it: that run's page shows it.
        if (run && run.id !== runId) {
          toast(answer.submitted === "started" ? "Your message started a new run" : "Your message went to the task's running agent");
          openRun(run.id);
          return;
        }
        queue(id, said, answer.submitted === "interrupted");
      } catch (error) {
        status.replaceChildren(errorLine(error));
      } finally {
        send.disabled = false;
        showHint();
      }
    },
  },
  h("label", { for: "message-text" }, "Message to the agent", text),
  h("div", { class: "actions steer-actions" },
    h("label", { for: "message-strategy" }, "While it works", strategy),
    send),
  hint, status);

  // A message the run has not taken yet, shown as queued.
  function queue(id, said, interrupted) {
    if (pending.has(id) || taken.has(id)) return;
    const line = h("div", { class: "msg user queued", "data-pending": id },
      h("div", { class: "role" }, interrupted ? "you · interrupting the current step" : "you · queued for the next step"),
      h("div", { class: "body" }, said));
    pending.set(id, line);
    queued.append(line);
  }

  // Messages sent before the page was (re)loaded that the run has not
  // taken yet: the server keeps them, so they show as queued again.
  api("GET", `/api/agent-runs/${runId}/queued-messages`).then((answer) => {
    for (const { message, strategy } of answer.messages) {
      const said = message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
      queue(message.id, said, strategy === "interrupt");
    }
  }).catch(() => { /* shown again at the next load */ });

  showHint();
  return {
    el: h("div", {}, queued, box),
    // The run's transcript now holds message `id`: it is no longer queued.
    delivered(id) {
      taken.add(id);
      const line = pending.get(id);
      if (!line) return;
      pending.delete(id);
      line.remove();
    },
    // The run's status changed.
    refresh: showHint,
  };
}
