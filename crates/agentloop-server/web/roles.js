// Roles in a project: the page shows only what the signed-in user's role
// allows. Controls that need a role carry `data-needs="editor"` or
// `data-needs="owner"`; the view names the user's role in its project on
// <body data-role> and app.css hides what the role does not reach (the
// server refuses it anyway, with a 403). The members panel lists the
// project's members; an owner invites, changes roles and removes.

import { h, api, toast, errorLine } from "./app.js";

const ROLES = ["viewer", "editor", "owner"];

// The role the current view acts in; none outside a project (every
// control shows: the views there need no role).
export function actAs(role) {
  if (ROLES.includes(role)) document.body.dataset.role = role;
  else delete document.body.dataset.role;
}

// Whether `role` may do what `needed` may.
export function allows(role, needed) {
  return ROLES.indexOf(role) >= ROLES.indexOf(needed);
}

function roleChoice(id, current) {
  const choice = h("select", { id, name: "role" }, ROLES.map((r) => h("option", { value: r }, r)));
  choice.value = current;
  return choice;
}

// The project's members, with an owner's controls.
export function membersPanel(project) {
  const box = h("div", { id: "members" });
  const status = h("div", {});
  const owner = allows(project.role, "owner");

  async function load() {
    const { members } = await api("GET", `/api/projects/${project.id}/members`);
    const rows = members.map((m) => {
      const name = h("td", {}, m.name);
      let roleCell = h("td", { "data-role-of": m.name }, m.role);
      let remove = h("td", {});
      if (owner && !m.creator) {
        const choice = roleChoice(`member-role-${m.user_id}`, m.role);
        choice.setAttribute("aria-label", `Role of ${m.name}`);
        choice.addEventListener("change", async () => {
          status.replaceChildren();
          try {
            await api("PATCH", `/api/projects/${project.id}/members/${encodeURIComponent(m.user_id)}`, { role: choice.value });
            toast(`${m.name} is now ${choice.value}`);
          } catch (error) {
            status.replaceChildren(errorLine(error));
          }
          await load();
        });
        roleCell = h("td", { "data-role-of": m.name }, choice);
        remove = h("td", {}, h("button", {
          type: "button",
          class: "secondary danger",
          "data-remove": m.name,
          onclick: async () => {
            status.replaceChildren();
            try {
              await api("DELETE", `/api/projects/${project.id}/members/${encodeURIComponent(m.user_id)}`);
              toast(`${m.name} removed`);
            } catch (error) {
              status.replaceChildren(errorLine(error));
            }
            await load();
          },
        }, "Remove"));
      }
      return h("tr", { "data-member": m.name }, name, roleCell, remove);
    });
    box.replaceChildren(h("table", { class: "members" },
      h("thead", {}, h("tr", {}, ["Member", "Role", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows)));
  }

  const invitee = h("input", { id: "invite-name", name: "user", required: true, placeholder: "a user name" });
  const role = roleChoice("invite-role", "viewer");
  const invite = h("form", { class: "panel inline", id: "invite", "data-needs": "owner" },
    h("label", { for: "invite-name" }, "Invite", invitee),
    h("label", { for: "invite-role" }, "as", role),
    h("button", { type: "submit" }, "Invite"));
  invite.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.replaceChildren();
    try {
      const member = await api("POST", `/api/projects/${project.id}/members`, { user: invitee.value, role: role.value });
      toast(`${member.name} invited as ${member.role}`);
      invitee.value = "";
      await load();
    } catch (error) {
      status.replaceChildren(errorLine(error));
    }
  });
  load().catch((error) => status.replaceChildren(errorLine(error)));
  return h("div", {},
    h("h2", {}, "Members"),
    h("p", { class: "muted", id: "my-role" }, `Your role: ${project.role}`),
    box, owner ? invite : null, status);
}
