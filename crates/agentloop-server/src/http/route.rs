//! What the route table ([`super::routes`]) says of a route: method,
//! path, handler, who may call it, its limits, and the types of its body
//! and answers, from which the document takes their schemas.

use agentloop_storage::ProjectRole;
use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{MethodFilter, MethodRouter, on};
use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::state::AppState;

/// A schema of a type, in a generator collecting the shared ones.
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// A request body's schema: the type's own, inline.
fn inline<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    T::json_schema(generator)
}

/// An answer's schema: a reference to the type's, shared.
fn shared<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone.
    Public,
    /// A bearer token or the session cookie (with its CSRF header for a
    /// change).
    Bearer,
    /// A WebSocket: a bearer token, or `?token=`.
    WebSocket,
    /// JSON-RPC (A2A): authenticated as [`Access::Bearer`], described in
    /// an extension of the document since its errors are JSON-RPC answers.
    JsonRpc,
}

/// One answer a route gives: its status, what it means and its JSON
/// schema (`None`: not JSON).
pub struct Answer {
    /// The status (`"200"`).
    pub status: &'static str,
    /// What it means.
    pub description: &'static str,
    /// The body's schema.
    pub schema: Option<SchemaFn>,
}

/// One route.
pub struct Route {
    /// Its method.
    pub method: Method,
    /// Its path, `{name}` for a parameter.
    pub path: &'static str,
    /// What it does, for people.
    pub summary: &'static str,
    /// Who may call it.
    pub access: Access,
    /// Whether the request-time limit applies (streams have none).
    pub time_limited: bool,
    /// Whether the per-client rate limit applies (health never is).
    pub rate_limited: bool,
    /// Its JSON body's schema, if it takes one.
    pub body: Option<SchemaFn>,
    /// Its query's schema (an object: each property a parameter), if it
    /// reads one.
    pub query: Option<SchemaFn>,
    /// Its success answer.
    pub success: Answer,
    /// The answers particular to it.
    pub extra: Vec<Answer>,
    /// The least role in the project its ids name (or its `project_id`
    /// query names) that a caller needs; `None` for a route outside any
    /// one project.
    pub role: Option<ProjectRole>,
    /// Its handler.
    pub handler: MethodRouter<AppState>,
}

fn filter(method: &Method) -> MethodFilter {
    match *method {
        Method::POST => MethodFilter::POST,
        Method::PUT => MethodFilter::PUT,
        Method::PATCH => MethodFilter::PATCH,
        Method::DELETE => MethodFilter::DELETE,
        _ => MethodFilter::GET,
    }
}

impl Route {
    pub(super) fn new<H, T>(method: Method, path: &'static str, handler: H) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let handler = on(filter(&method), handler);
        Self {
            method,
            path,
            summary: "",
            access: Access::Bearer,
            time_limited: true,
            rate_limited: true,
            body: None,
            query: None,
            success: Answer {
                status: "200",
                description: "",
                schema: None,
            },
            extra: Vec::new(),
            role: None,
            handler,
        }
    }

    pub(super) fn summary(mut self, summary: &'static str) -> Self {
        self.summary = summary;
        self
    }

    /// Needs the caller to be a member of the project with at least
    /// `role` (the use case checks it; the document says it).
    pub(super) fn role(mut self, role: ProjectRole) -> Self {
        self.role = Some(role);
        self
    }

    pub(super) fn public(mut self) -> Self {
        self.access = Access::Public;
        self
    }

    pub(super) fn websocket(mut self) -> Self {
        self.access = Access::WebSocket;
        self
    }

    pub(super) fn json_rpc(mut self) -> Self {
        self.access = Access::JsonRpc;
        self
    }

    /// A stream: as long as its client wants, no time limit.
    pub(super) fn streaming(mut self) -> Self {
        self.time_limited = false;
        self
    }

    pub(super) fn never_rate_limited(mut self) -> Self {
        self.rate_limited = false;
        self
    }

    pub(super) fn body<T: JsonSchema>(mut self) -> Self {
        self.body = Some(inline::<T>);
        self
    }

    pub(super) fn query<T: JsonSchema>(mut self) -> Self {
        self.query = Some(inline::<T>);
        self
    }

    pub(super) fn answers<T: JsonSchema>(
        mut self,
        status: &'static str,
        description: &'static str,
    ) -> Self {
        self.success = Answer {
            status,
            description,
            schema: Some(shared::<T>),
        };
        self
    }

    pub(super) fn answers_without_json(
        mut self,
        status: &'static str,
        description: &'static str,
    ) -> Self {
        self.success = Answer {
            status,
            description,
            schema: None,
        };
        self
    }

    pub(super) fn or<T: JsonSchema>(
        mut self,
        status: &'static str,
        description: &'static str,
    ) -> Self {
        self.extra.push(Answer {
            status,
            description,
            schema: Some(shared::<T>),
        });
        self
    }

    /// Another answer the route gives, with no JSON body.
    pub(super) fn or_without_json(
        mut self,
        status: &'static str,
        description: &'static str,
    ) -> Self {
        self.extra.push(Answer {
            status,
            description,
            schema: None,
        });
        self
    }

    /// The method's name in the document (`get`).
    pub fn method_name(&self) -> String {
        self.method.as_str().to_ascii_lowercase()
    }
}
