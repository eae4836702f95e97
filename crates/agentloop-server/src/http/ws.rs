//! `GET /api/ws`: a WebSocket that receives the caller's notifications —
//! `streaming-started`, `streaming-ended` and `agent-run-status` — as JSON
//! text messages.

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::get;
use tokio::sync::broadcast::error::RecvError;

use super::extract::WsUser;
use crate::state::AppState;

/// The owner notification socket: `/api/ws`.
pub fn router() -> Router<AppState> {
    Router::new().route("/api/ws", get(upgrade))
}

pub(super) async fn upgrade(
    State(state): State<AppState>,
    WsUser(user): WsUser,
    ws: WebSocketUpgrade,
) -> Response {
    let notices = state.notices.subscribe();
    let shutdown = state.shutdown.clone();
    ws.on_upgrade(move |socket| async move {
        tokio::select! {
            () = forward(socket, notices, user.id) => {}
            () = shutdown.cancelled() => {}
        }
    })
}

async fn forward(
    mut socket: WebSocket,
    mut notices: tokio::sync::broadcast::Receiver<crate::state::Notice>,
    user_id: String,
) {
    loop {
        tokio::select! {
            notice = notices.recv() => match notice {
                Ok(notice) if notice.user_id == user_id => {
                    let text = notice.message.to_string();
                    if socket.send(Message::Text(text.into())).await.is_err() {
                        return;
                    }
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
}
