//! A tool as the model is offered it: a module of its own, as what a
//! run's log records of a request (`sent`) names it without the tool
//! trait, which names the log's events.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolDefinition {
    /// Name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of its input object, shared: every run that offers the
    /// tool holds the same one.
    pub input_schema: Arc<Value>,
}
