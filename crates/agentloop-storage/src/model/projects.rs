//! Projects and how their runs are approved.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A project: the owner of chats, files, attachments and tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    /// Id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Free-form settings (model defaults, tool options ...).
    pub settings: Value,
    /// Whether its server runs ask a person before writing files or
    /// running code; `None` follows the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<ApprovalMode>,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Last update time (Unix ms).
    pub updated_at: i64,
}

/// Whether a project's server runs wait for a person before the calls
/// that change things (fs writes, JavaScript).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// They wait for a person's decision.
    Ask,
    /// They run without asking, inside the project folder (the fs tool is
    /// jailed there, JavaScript is sandboxed).
    Unattended,
}

impl ApprovalMode {
    /// Every mode, in the order they are listed to people.
    pub const ALL: [Self; 2] = [Self::Ask, Self::Unattended];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Unattended => "unattended",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.as_str() == s)
    }
}
