//! A project's webhooks and their deliveries.

use agentloop_storage::ProjectRole;
use agentloop_storage::WEBHOOK_DELIVERIES_KEPT;
use agentloop_storage::model::{WebhookDelivery, now_millis};
use serde_json::Value;

use super::owned::owned_project;
use crate::http::error::ApiError;
use crate::http::requests::WebhooksChange;
use crate::ids::new_token;
use crate::state::AppState;
use crate::users::User;
use crate::webhooks::registry::{self, Registration};

/// The project's webhooks, or 404 when it has none.
pub async fn webhooks(state: &AppState, user: &User, id: &str) -> Result<Registration, ApiError> {
    let project = owned_project(state, user, id, ProjectRole::Owner).await?;
    Registration::of(&project.settings)
        .ok_or_else(|| ApiError::not_found("this project has no webhooks"))
}

/// Sets the project's webhooks. The secret is made on the first
/// registration and kept after, unless `rotate_secret` asks for a new one.
pub async fn set_webhooks(
    state: &AppState,
    user: &User,
    id: &str,
    change: WebhooksChange,
) -> Result<Registration, ApiError> {
    let urls = change
        .urls
        .ok_or_else(|| ApiError::bad_request("urls: required, an array of URLs"))?;
    let rotate = change.rotate_secret.unwrap_or(false);
    let events = registry::check(&urls, change.events.as_deref()).map_err(ApiError::bad_request)?;
    let mut project = owned_project(state, user, id, ProjectRole::Owner).await?;
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
    project.updated_at = now_millis();
    state.store.update_project(&project).await?;
    Ok(registration)
}

/// Removes the project's webhooks.
pub async fn remove_webhooks(state: &AppState, user: &User, id: &str) -> Result<(), ApiError> {
    let mut project = owned_project(state, user, id, ProjectRole::Owner).await?;
    if let Value::Object(settings) = &mut project.settings
        && settings.remove("webhooks").is_some()
    {
        project.updated_at = now_millis();
        state.store.update_project(&project).await?;
    }
    Ok(())
}

/// The project's delivery log as stored: every instance's deliveries, the
/// last ones kept.
pub async fn webhook_deliveries(
    state: &AppState,
    user: &User,
    id: &str,
) -> Result<Vec<WebhookDelivery>, ApiError> {
    let project = owned_project(state, user, id, ProjectRole::Owner).await?;
    Ok(state
        .store
        .list_webhook_deliveries(&project.id, WEBHOOK_DELIVERIES_KEPT)
        .await?)
}
