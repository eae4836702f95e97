//! What a server asks the person while one of its tools runs (MCP
//! elicitation, form mode): the host gives an [`Elicitor`] in
//! [`ServerOptions::elicitor`](crate::ServerOptions::elicitor), the
//! client then declares the capability, and each form the server sends is
//! handed to it with the server's name. Without one the capability is not
//! declared, so servers do not ask. A URL-mode request is declined: this
//! client opens no pages for a server.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// A form a server asks the person to fill in.
#[derive(Debug, Clone, PartialEq)]
pub struct FormRequest {
    /// The server asking.
    pub server: String,
    /// What it says the form is for.
    pub message: String,
    /// The fields it asks for: a JSON Schema object of flat properties
    /// (strings, numbers, integers, booleans, enums and lists of enum
    /// values), as the spec restricts it.
    pub schema: Value,
}

/// The person's answer to a form.
#[derive(Debug, Clone, PartialEq)]
pub enum FormAnswer {
    /// Filled in: the value of each field answered.
    Accept(Map<String, Value>),
    /// Refused: the tool goes on without it.
    Decline,
    /// Dismissed: the tool's operation should stop.
    Cancel,
}

/// Who answers a server's forms: the host's person.
pub trait Elicitor: Send + Sync {
    /// The person's answer to `request`.
    fn answer(&self, request: FormRequest) -> BoxFuture<'static, FormAnswer>;
}

/// An elicitor shows only that it is one (options are printed).
impl std::fmt::Debug for dyn Elicitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Elicitor")
    }
}

/// The elicitor of a session, with the server's name.
#[derive(Clone)]
pub(crate) struct Asking {
    pub(crate) server: String,
    pub(crate) elicitor: Arc<dyn Elicitor>,
}
