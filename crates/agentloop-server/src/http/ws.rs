//! `GET /api/ws`: a WebSocket that receives the caller's notifications —
//! `streaming-started`, `streaming-ended`, `agent-run-status`,
//! `agent-run-waiting` — as JSON text messages, and `notices-missed` in
//! place of those it fell too far behind to receive.

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;

use super::extract::WsUser;
use crate::notices::UserNotices;
use crate::state::AppState;

pub(super) async fn upgrade(
    State(state): State<AppState>,
    WsUser(user): WsUser,
    ws: WebSocketUpgrade,
) -> Response {
    let notices = state.notices.subscribe(&user.id);
    let shutdown = state.shutdown.clone();
    ws.on_upgrade(move |socket| async move {
        tokio::select! {
            () = forward(socket, notices) => {}
            () = shutdown.cancelled() => {}
        }
    })
}

async fn forward(mut socket: WebSocket, mut notices: UserNotices) {
    loop {
        tokio::select! {
            notice = notices.next() => match notice {
                Some(text) => {
                    if socket.send(Message::Text((&*text).into())).await.is_err() {
                        return;
                    }
                }
                None => return,
            },
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
}
