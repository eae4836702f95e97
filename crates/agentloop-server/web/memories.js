// A project's memories: what its runs' `memory` tool keeps, one file
// under `/memories` each. Each is shown with the run that last wrote it,
// and can be edited (text, expiry) or forgotten. What a memory says was
// written by a model: it is shown and edited as text only. A viewer reads
// them: the text is read-only and the controls are hidden.

import { h, api, show, here, toast, when, errorLine, remember } from "./app.js";
import { actAs, allows } from "./roles.js";

// `ms` (Unix milliseconds) as a `datetime-local` field's value, in local time.
function localInput(ms) {
  if (ms === null || ms === undefined) return "";
  const date = new Date(ms);
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

export async function memoriesView(projectId) {
  const stillHere = here();
  const [project, listed] = await Promise.all([
    api("GET", `/api/projects/${projectId}`),
    api("GET", `/api/projects/${projectId}/memories`),
  ]);
  remember("projects", projectId, "#/");
  const edits = allows(project.role, "editor");
  const list = h("div", { id: "memories" });
  function render(memories) {
    list.replaceChildren(memories.length
      ? h("ul", { class: "list memories" }, memories.map((memory) => item(memory)))
      : h("p", { class: "muted", id: "no-memories" }, "This project's agents have remembered nothing yet."));
  }
  async function reload() {
    render((await api("GET", `/api/projects/${projectId}/memories`)).memories);
  }

  function item(memory) {
    const li = h("li", { class: "memory", "data-memory": memory.id });
    const text = h("textarea", { class: "memory-text", "aria-label": `Text of ${memory.path}` });
    text.value = memory.text;
    text.readOnly = !edits;
    const expires = h("input", { type: "datetime-local", class: "memory-expires", value: localInput(memory.expires_at) });
    expires.readOnly = !edits;
    const status = h("div", {});
    const source = memory.source_run
      ? h("a", { href: `#/runs/${memory.source_run}`, class: "memory-source" }, "the run that wrote it")
      : h("span", { class: "muted" }, "written by a person");
    const save = h("button", {
      type: "button",
      class: "memory-save",
      onclick: async () => {
        status.replaceChildren();
        let expiresAt = null;
        if (expires.value) {
          expiresAt = new Date(expires.value).getTime();
          if (Number.isNaN(expiresAt)) {
            status.replaceChildren(errorLine(new Error("The expiry is not a date and time.")));
            return;
          }
        }
        try {
          const saved = await api("PATCH", `/api/projects/${projectId}/memories/${memory.id}`,
            { text: text.value, expires_at: expiresAt });
          Object.assign(memory, saved);
          toast("Memory saved");
          updated.textContent = `Last written ${when(saved.updated_at)}`;
        } catch (error) {
          status.replaceChildren(errorLine(error));
        }
      },
    }, "Save");
    const keep = h("button", { type: "button", class: "secondary", onclick: () => ask(false) }, "Keep it");
    const forget = h("button", {
      type: "button",
      class: "danger memory-confirm-delete",
      onclick: async () => {
        status.replaceChildren();
        try {
          await api("DELETE", `/api/projects/${projectId}/memories/${memory.id}`);
          toast("Memory forgotten");
          await reload();
        } catch (error) {
          ask(false);
          status.replaceChildren(errorLine(error));
        }
      },
    }, "Forget it");
    const confirm = h("div", { class: "actions", hidden: true, "data-needs": "editor" }, h("span", {}, "Forget this memory?"), forget, keep);
    const remove = h("button", { type: "button", class: "secondary danger memory-delete", onclick: () => ask(true) }, "Delete…");
    function ask(shown) {
      confirm.hidden = !shown;
      remove.hidden = shown;
      (shown ? keep : remove).focus();
    }
    const updated = h("span", {}, `Last written ${when(memory.updated_at)}`);
    li.append(
      h("div", { class: "memory-head" }, h("code", { class: "memory-path" }, memory.path)),
      h("p", { class: "muted" }, updated, " · ", source),
      text,
      h("label", {}, "Forgotten after (empty: never)", expires),
      h("div", { class: "actions", "data-needs": "editor" }, save, remove),
      confirm,
      status,
    );
    return li;
  }

  render(listed.memories);
  if (!stillHere()) return;
  actAs(project.role);
  show(
    h("p", {}, h("a", { href: `#/projects/${projectId}` }, "← Project")),
    h("h1", {}, `Memories of ${project.name}`),
    h("p", { class: "muted" }, "What this project's agents keep with their memory tool; the next run reads it as it is here."),
    list,
  );
}
