//! A task's bodies: a new task, its document, Mark Done.

use schemars::JsonSchema;
use serde::Deserialize;

use super::body::RequestBody;
use crate::http::error::ApiError;

/// `PUT /api/tasks/{taskId}/workflow-complete`: Mark Done, or undo it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WorkflowComplete {
    /// `true` stops the task's loop and force-completes its active runs;
    /// `false` lets it run again.
    pub complete: bool,
}

impl RequestBody for WorkflowComplete {
    fn refused(_: String) -> ApiError {
        ApiError::bad_request("complete must be a boolean")
    }
}

/// `POST /api/projects/{projectId}/tasks`: a new task.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct NewTask {
    /// The task's title: at most 500 characters, not only white space.
    #[schemars(required, with = "String", length(max = 500), pattern(r"\S"))]
    pub title: Option<String>,
    /// The start of the task's document, below the title (bounded by the
    /// request body limit).
    pub description: Option<String>,
}

impl RequestBody for NewTask {}

/// `PUT /api/tasks/{taskId}/document`: the task document's new content.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TaskDocumentContent {
    /// The whole document.
    pub content: String,
}

impl RequestBody for TaskDocumentContent {}
