//! Audit entries for what the protocol endpoints do (`/a2a`, `/mcp`): one
//! HTTP request there can start a run, steer it, decide on its calls or
//! cancel it, so the route alone does not say what was done, as it does
//! for REST (see [`super::audit`]). Each input such a request submits
//! that succeeds is recorded with the same action names as REST's
//! (`run.start`, `run.message`, `run.decide`, `run.cancel`,
//! `task.mark_done`, `task.create`), its project and target, the client's
//! address, and in `detail` the protocol (`via`) and its method or tool.
//! Nothing of the message or the arguments is kept.

use std::convert::Infallible;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use serde_json::json;

use super::error::ApiError;
use super::requests::NewTask;
use super::service::{self, Submitted, Target, submit};
use crate::audit::{Action, record};
use crate::runner::TaskContext;
use crate::state::AppState;
use crate::users::User;
use agentloop_types::RunInput;

/// The address a request came from (through the server's trusted
/// proxies), when the connection says.
pub(crate) fn client_address(state: &AppState, parts: &Parts) -> Option<String> {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| {
            state
                .config
                .trusted_proxies
                .client_address(info.0.ip(), &parts.headers)
                .to_string()
        })
}

/// The client's address as an extractor (never refuses a request).
pub(crate) struct ClientAddress(pub Option<String>);

impl FromRequestParts<AppState> for ClientAddress {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(Self(client_address(state, parts)))
    }
}

/// Who called a protocol endpoint, how and from where: what its audit
/// entries say besides the action.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    /// `a2a` or `mcp`.
    pub protocol: &'static str,
    /// The protocol's method (`SendMessage`, `CancelTask`) or tool
    /// (`start_agent_run`).
    pub method: String,
    /// The client's address.
    pub address: Option<String>,
}

impl Caller {
    pub(crate) fn new(protocol: &'static str, method: &str, address: Option<String>) -> Self {
        Self {
            protocol,
            method: method.to_owned(),
            address,
        }
    }

    /// [`submit`], recording what it did once it succeeded: the action of
    /// the input (a message that started a run is `run.message` still,
    /// its target the run started).
    pub(crate) async fn submit(
        &self,
        state: &AppState,
        user: &User,
        target: Target<'_>,
        input: RunInput,
    ) -> Result<Submitted, ApiError> {
        let action = action_of(&input);
        let ctx = match target {
            Target::Task(ctx) | Target::Run(_, ctx) => ctx,
        };
        let submitted = submit(state, user, target, input).await?;
        let on = match &submitted {
            Submitted::Started(run)
            | Submitted::Decided { run, .. }
            | Submitted::Queued { run, .. }
            | Submitted::Cancelled(run) => run.id.as_str(),
            Submitted::Stopped => ctx.task.id.as_str(),
        };
        self.record(state, user, action, &ctx.project.id, on).await;
        Ok(submitted)
    }

    /// [`service::create_task`], recorded as `task.create` once it
    /// succeeded.
    pub(crate) async fn create_task(
        &self,
        state: &AppState,
        user: &User,
        project_id: &str,
        task: NewTask,
    ) -> Result<TaskContext, ApiError> {
        let ctx = service::create_task(state, user, project_id, task).await?;
        self.record(state, user, "task.create", &ctx.project.id, &ctx.task.id)
            .await;
        Ok(ctx)
    }

    /// Records `action` by `user` on `target` of `project_id`.
    async fn record(
        &self,
        state: &AppState,
        user: &User,
        action: &str,
        project_id: &str,
        target: &str,
    ) {
        let entry = Action {
            user_id: Some(user.id.clone()),
            action: action.to_owned(),
            project_id: Some(project_id.to_owned()),
            target: Some(target.to_owned()),
            address: self.address.clone(),
            detail: json!({ "via": self.protocol, "method": self.method }),
        };
        if let Err(error) = record(&*state.store, entry).await {
            tracing::error!(%error, action, "the audit log could not be written");
        }
    }
}

/// The audit action of `input`, as REST names it.
fn action_of(input: &RunInput) -> &'static str {
    match input {
        RunInput::Start { .. } => "run.start",
        RunInput::Message { .. } => "run.message",
        RunInput::Decide { .. } => "run.decide",
        RunInput::Cancel {} => "run.cancel",
        RunInput::Stop {} => "task.mark_done",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_named_as_rest_names_them() {
        assert_eq!(action_of(&RunInput::Cancel {}), "run.cancel");
        assert_eq!(action_of(&RunInput::Stop {}), "task.mark_done");
    }
}
