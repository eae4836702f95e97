//! A project's webhooks: `GET`/`PUT`/`DELETE /api/projects/{id}/webhooks`
//! (the URLs, the events they hear, the signing secret) and `GET
//! /api/projects/{id}/webhook-deliveries` (the project's delivery log as
//! stored: every instance's deliveries, the last 100). Only the project's
//! owner reaches them.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::error::ApiError;
use super::extract::{ApiJson, AuthUser};
use super::requests::WebhooksChange;
use super::responses::{DeliveriesShape, DeliveryShape, WebhooksShape};
use super::service;
use crate::state::AppState;

pub(super) async fn show(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<WebhooksShape>, ApiError> {
    let registration = service::webhooks(&state, &user, &id).await?;
    Ok(Json(WebhooksShape::from(&registration)))
}

/// `PUT`: `{"urls": [...], "events": [...]?, "rotate_secret": bool?}`.
pub(super) async fn set(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<WebhooksChange>,
) -> Result<Json<WebhooksShape>, ApiError> {
    let registration = service::set_webhooks(&state, &user, &id, body).await?;
    Ok(Json(WebhooksShape::from(&registration)))
}

pub(super) async fn remove(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    service::remove_webhooks(&state, &user, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn deliveries(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<DeliveriesShape>, ApiError> {
    let deliveries = service::webhook_deliveries(&state, &user, &id).await?;
    Ok(Json(DeliveriesShape {
        deliveries: deliveries.iter().map(DeliveryShape::from).collect(),
    }))
}
