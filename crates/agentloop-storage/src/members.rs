//! The members of projects and their roles. A project's creator owns it
//! (its `owner` setting) without a row here; the rows are the people its
//! owners invited, each with one role. Rows go with their project and
//! with their user.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::StorageResult;

/// What a member may do in a project, from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProjectRole {
    /// Reads the project and follows its runs.
    Viewer,
    /// A viewer who also works on tasks: starts runs, decides, sends
    /// messages, cancels.
    Editor,
    /// An editor who also changes the project's settings and members.
    Owner,
}

impl ProjectRole {
    /// Every role, from least to most.
    pub const ALL: [Self; 3] = [Self::Viewer, Self::Editor, Self::Owner];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Editor => "editor",
            Self::Owner => "owner",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.as_str() == s)
    }

    /// Whether this role may do what `needed` may.
    pub fn allows(self, needed: Self) -> bool {
        self >= needed
    }
}

/// One member of a project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectMember {
    /// The project.
    pub project_id: String,
    /// The user.
    pub user_id: String,
    /// What they may do.
    pub role: ProjectRole,
    /// When they were added (Unix ms).
    pub added_at: i64,
}

/// The invited members of projects.
#[async_trait]
pub trait MembersStore: Send + Sync {
    /// Adds a member; `AlreadyExists` (kind `member`, the user id) if the
    /// user is one already, `Invalid` if the project or the user does not
    /// exist.
    async fn add_project_member(&self, member: &ProjectMember) -> StorageResult<()>;
    /// The role of `user_id` in `project_id`, if they are a member (one
    /// read by the key).
    async fn project_role(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> StorageResult<Option<ProjectRole>>;
    /// Changes a member's role; `NotFound` (kind `member`) if not one.
    async fn set_project_role(
        &self,
        project_id: &str,
        user_id: &str,
        role: ProjectRole,
    ) -> StorageResult<()>;
    /// Removes a member; `NotFound` (kind `member`) if not one.
    async fn remove_project_member(&self, project_id: &str, user_id: &str) -> StorageResult<()>;
    /// A project's members, first added first (ties by user id).
    async fn list_project_members(&self, project_id: &str) -> StorageResult<Vec<ProjectMember>>;
    /// The projects a user is a member of, first added first (ties by
    /// project id).
    async fn list_memberships(&self, user_id: &str) -> StorageResult<Vec<ProjectMember>>;
}
