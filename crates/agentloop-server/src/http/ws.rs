//! `GET /api/ws`: a WebSocket that receives the caller's notifications —
//! `streaming-started`, `streaming-ended`, `agent-run-status`,
//! `agent-run-waiting`, `chain-ended` — as JSON text messages, and
//! `notices-missed` in place of those it fell too far behind to receive:
//! those of the projects the caller owns, and of those they were invited
//! to when the socket opened. The socket closes (code 1008) once the token that opened it is revoked
//! or expires.

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::response::Response;

use super::extract::WsUser;
use crate::notices::SocketNotices;
use crate::state::AppState;
use crate::users::until_invalid;

pub(super) async fn upgrade(
    State(state): State<AppState>,
    WsUser(user, token): WsUser,
    ws: WebSocketUpgrade,
) -> Response {
    // The projects the user was invited to as the socket opens: their
    // notices too (a socket opened before an invitation hears the
    // project's once it opens again).
    let invited_to: Vec<String> = match super::service::invited_to(&state, &user).await {
        Ok(projects) => projects,
        Err(error) => {
            tracing::warn!(?error, "the user's memberships could not be read");
            Vec::new()
        }
    };
    let notices = SocketNotices::subscribe(&state.notices, &user.id, &invited_to);
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
    mut notices: SocketNotices,
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
