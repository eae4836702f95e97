//! The bodies and answers of the members' routes
//! (`/api/projects/{id}/members`), and the role a project listing names.

use agentloop_storage::ProjectRole;
use agentloop_storage::time::rfc3339;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::requests::RequestBody;

/// A role in a project: `viewer` reads the project and follows its runs;
/// `editor` also works on its tasks (creates and deletes tasks, edits
/// documents, starts runs, decides, sends messages, cancels, marks done,
/// schedules); `owner` also changes its settings, members, webhooks and
/// budgets, and deletes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "Role")]
pub enum RoleName {
    /// Reads and follows.
    Viewer,
    /// Works on tasks and runs.
    Editor,
    /// Manages the project.
    Owner,
}

impl From<RoleName> for ProjectRole {
    fn from(role: RoleName) -> Self {
        match role {
            RoleName::Viewer => Self::Viewer,
            RoleName::Editor => Self::Editor,
            RoleName::Owner => Self::Owner,
        }
    }
}

impl From<ProjectRole> for RoleName {
    fn from(role: ProjectRole) -> Self {
        match role {
            ProjectRole::Viewer => Self::Viewer,
            ProjectRole::Editor => Self::Editor,
            ProjectRole::Owner => Self::Owner,
        }
    }
}

/// `POST /api/projects/{projectId}/members`: a user to invite, by name,
/// and their role.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMember {
    /// The user's name (as `agentloop users create` made it), or id.
    #[serde(
        alias = "name",
        alias = "user_name",
        alias = "username",
        alias = "user_id"
    )]
    #[schemars(length(min = 1))]
    pub user: String,
    /// Their role.
    pub role: RoleName,
}

impl RequestBody for NewMember {}

/// `PATCH /api/projects/{projectId}/members/{user}`: the member's new
/// role.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberChange {
    /// The new role.
    pub role: RoleName,
}

impl RequestBody for MemberChange {}

/// A member of a project.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Member")]
pub struct MemberShape {
    /// The user's id.
    pub user_id: String,
    /// The user's name.
    pub name: String,
    /// Their role.
    pub role: RoleName,
    /// Whether they created the project (its first owner, whose role
    /// cannot change and who cannot be removed).
    pub creator: bool,
    /// When they were added (RFC 3339; the project's creation for its
    /// creator).
    pub added_at: String,
}

impl MemberShape {
    /// The shape of a member.
    pub fn new(user_id: &str, name: &str, role: ProjectRole, creator: bool, added_at: i64) -> Self {
        Self {
            user_id: user_id.to_owned(),
            name: name.to_owned(),
            role: role.into(),
            creator,
            added_at: rfc3339(added_at),
        }
    }
}

/// A project's members.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Members")]
pub struct MembersShape {
    /// Its creator first, then the others as they were added.
    pub members: Vec<MemberShape>,
}
