//! A project's webhooks: `GET`/`PUT`/`DELETE /api/projects/{id}/webhooks`
//! (the URLs, the events they hear, the signing secret) and `GET
//! /api/projects/{id}/webhook-deliveries` (the project's delivery log as
//! stored: every instance's deliveries, the last 100). Only the project's owner reaches them.

use agentloop_storage::WEBHOOK_DELIVERIES_KEPT;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::error::ApiError;
use super::extract::{ApiJson, AuthUser};
use super::projects::owned_project;
use crate::ids::new_token;
use crate::state::AppState;
use crate::webhooks::registry::{self, Registration};

/// The webhook routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/projects/{project_id}/webhooks",
            get(show).put(set).delete(remove),
        )
        .route(
            "/api/projects/{project_id}/webhook-deliveries",
            get(deliveries),
        )
}

fn shown(registration: &Registration) -> Value {
    json!({ "urls": registration.urls, "events": registration.events, "secret": registration.secret })
}

async fn show(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let project = owned_project(&state, &user, &id).await?;
    match Registration::of(&project.settings) {
        Some(registration) => Ok(Json(shown(&registration))),
        None => Err(ApiError::not_found("this project has no webhooks")),
    }
}

/// `PUT`: `{"urls": [...], "events": [...]?, "rotate_secret": bool?}`.
/// The secret is made on the first registration and kept after, unless
/// `rotate_secret` asks for a new one.
async fn set(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson,
) -> Result<Json<Value>, ApiError> {
    if let Some(key) = body
        .keys()
        .find(|k| !matches!(k.as_str(), "urls" | "events" | "rotate_secret"))
    {
        return Err(ApiError::bad_request(format!(
            "unknown field {key:?} (webhooks take urls, events and rotate_secret)"
        )));
    }
    let urls = strings(body.get("urls"), "urls")?
        .ok_or_else(|| ApiError::bad_request("urls: required, an array of URLs"))?;
    let events = strings(body.get("events"), "events")?;
    let rotate = match body.get("rotate_secret") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ApiError::bad_request("rotate_secret: a boolean")),
    };
    let events = registry::check(&urls, events.as_deref()).map_err(ApiError::bad_request)?;
    let mut project = owned_project(&state, &user, &id).await?;
    let secret = match Registration::of(&project.settings) {
        Some(old) if !rotate => old.secret,
        _ => format!("whsec_{}", new_token().trim_start_matches("al_")),
    };
    let registration = Registration {
        urls,
        events,
        secret,
    };
    if let Value::Object(settings) = &mut project.settings {
        settings.insert(
            "webhooks".to_owned(),
            serde_json::to_value(&registration)
                .map_err(|e| ApiError::bad_request(e.to_string()))?,
        );
    }
    project.updated_at = agentloop_storage::model::now_millis();
    state.store.update_project(&project).await?;
    Ok(Json(shown(&registration)))
}

async fn remove(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let mut project = owned_project(&state, &user, &id).await?;
    if let Value::Object(settings) = &mut project.settings
        && settings.remove("webhooks").is_some()
    {
        project.updated_at = agentloop_storage::model::now_millis();
        state.store.update_project(&project).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

async fn deliveries(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let project = owned_project(&state, &user, &id).await?;
    let deliveries: Vec<Value> = state
        .store
        .list_webhook_deliveries(&project.id, WEBHOOK_DELIVERIES_KEPT)
        .await?
        .into_iter()
        .map(|d| {
            json!({
                "id": d.id,
                "event": d.event,
                "url": d.url,
                "state": d.state.as_str(),
                "attempts": d.attempts,
            })
        })
        .collect();
    Ok(Json(json!({ "deliveries": deliveries })))
}

fn strings(value: Option<&Value>, field: &str) -> Result<Option<Vec<String>>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ApiError::bad_request(format!("{field}: strings only")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(ApiError::bad_request(format!(
            "{field}: an array of strings"
        ))),
    }
}
