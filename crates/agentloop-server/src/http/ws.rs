//! `GET /api/ws`: a WebSocket that receives the caller's notifications —
//! `streaming-started`, `streaming-ended`, `agent-run-status`,
//! `agent-run-waiting`, `chain-ended` — as JSON text messages, and
//! `notices-missed` in place of those it fell too far behind to receive.
//! The socket closes (code 1008) once the token that opened it is revoked
//! or expires.

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::response::Response;

use super::extract::WsUser;
use crate::notices::UserNotices;
use crate::state::AppState;
use crate::users::until_invalid;

pub(super) async fn upgrade(
    State(state): State<AppState>,
    WsUser(user, token): WsUser,
    ws: WebSocketUpgrade,
) -> Response {
    let notices = state.notices.subscribe(&user.id);
    ws.on_upgrade(move |socket| async move {
        let shutdown = state.shutdown.clone();
        let revoked = until_invalid(
            &*state.store,
            &token,
            state.config.token_check,
            &state.revocations,
        );
        tokio::select! {
            () = forward(socket, notices, revoked) => {}
            () = shutdown.cancelled() => {}
        }
    })
}

/// Sends the notices until the client leaves or `revoked` resolves (the
/// token stopped authenticating: the socket is closed with code 1008,
/// policy violation).
async fn forward(
    mut socket: WebSocket,
    mut notices: UserNotices,
    revoked: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(revoked);
    loop {
        tokio::select! {
            () = &mut revoked => {
                let close = CloseFrame {
                    code: close_code::POLICY,
                    reason: "the token was revoked or expired".into(),
                };
                let _ = socket.send(Message::Close(Some(close))).await;
                return;
            }
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
