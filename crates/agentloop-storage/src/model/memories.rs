//! Memories that outlast a run, and whose they are.

use serde::{Deserialize, Serialize};

use crate::error::StorageError;

/// Whose memories these are: a person's across their projects, a
/// project's, or one agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryScopeKind {
    /// A user's.
    User,
    /// A project's.
    Project,
    /// An agent's.
    Agent,
}

impl MemoryScopeKind {
    /// Its stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
            Self::Agent => "agent",
        }
    }

    /// The kind a stored name means.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "user" => Some(Self::User),
            "project" => Some(Self::Project),
            "agent" => Some(Self::Agent),
            _ => None,
        }
    }
}

/// The owner of a set of memories: a kind and the owner's id. Memories of
/// one scope are never read through another.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MemoryScope {
    /// User, project or agent.
    pub kind: MemoryScopeKind,
    /// The user's, project's or agent's id.
    pub id: String,
}

impl MemoryScope {
    /// The memories of user `id`.
    pub fn user(id: impl Into<String>) -> Self {
        Self {
            kind: MemoryScopeKind::User,
            id: id.into(),
        }
    }

    /// The memories of project `id`.
    pub fn project(id: impl Into<String>) -> Self {
        Self {
            kind: MemoryScopeKind::Project,
            id: id.into(),
        }
    }

    /// The memories of agent `id`.
    pub fn agent(id: impl Into<String>) -> Self {
        Self {
            kind: MemoryScopeKind::Agent,
            id: id.into(),
        }
    }
}

impl std::fmt::Display for MemoryScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind.as_str(), self.id)
    }
}

impl std::str::FromStr for MemoryScope {
    type Err = StorageError;

    /// Reads `kind:id` (`user:ada`, `project:p1`, `agent:reviewer`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || {
            StorageError::Invalid(format!(
                "memory scope {s:?}: expected user:ID, project:ID or agent:ID"
            ))
        };
        let (kind, id) = s.split_once(':').ok_or_else(invalid)?;
        let kind = MemoryScopeKind::parse(kind).ok_or_else(invalid)?;
        if id.is_empty() {
            return Err(invalid());
        }
        Ok(Self {
            kind,
            id: id.to_owned(),
        })
    }
}

/// One memory: a text kept under a path of its scope (the memory tool's
/// files map to memories one to one), with where and when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryRecord {
    /// Id.
    pub id: String,
    /// Whose memory it is.
    pub scope: MemoryScope,
    /// Its normalised path (`/memories/...`), unique within the scope.
    pub path: String,
    /// What is remembered.
    pub text: String,
    /// The run that last wrote it, if a run did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_run: Option<String>,
    /// The step (tool call) of that run that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_step: Option<String>,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Last write time (Unix ms).
    pub updated_at: i64,
    /// When it is forgotten (Unix ms); never when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

impl MemoryRecord {
    /// Whether it is still remembered at `now`.
    pub fn live_at(&self, now: i64) -> bool {
        self.expires_at.is_none_or(|at| at > now)
    }
}
