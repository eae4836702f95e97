//! Followers of runs: an SSE client of one run's events (the seqs it saw,
//! in order) and a WebSocket client of one user's notifications.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::watch;

use super::api::Api;

/// How long a run's event stream may stay open.
const FOLLOW_TIMEOUT: Duration = Duration::from_secs(120);

/// What an SSE follower saw of a run's events.
pub struct Followed {
    /// Seqs in the order they arrived.
    pub seqs: Vec<u64>,
    /// Whether the stream ended on its own (not by a timeout or an error).
    pub ended: bool,
}

/// Follows run `run_id`'s events after `last_event_id` until the stream
/// ends. A broken stream is a finding.
pub async fn follow(api: &Api, run_id: &str, last_event_id: Option<u64>) -> Followed {
    const ROUTE: &str = "GET /api/agent-runs/{id}/events (until the stream ends)";
    let mut request = api
        .http
        .get(format!("{}/api/agent-runs/{run_id}/events", api.base))
        .bearer_auth(&api.token);
    if let Some(last) = last_event_id {
        request = request.header("last-event-id", last.to_string());
    }
    let sent = Instant::now();
    let mut followed = Followed {
        seqs: Vec::new(),
        ended: false,
    };
    let read = async {
        let mut response = request.send().await?;
        let status = response.status().as_u16();
        if status != 200 {
            api.stats
                .finding(format!("events of {run_id}: status {status}"));
            return Ok(());
        }
        let mut line = Vec::new();
        while let Some(bytes) = response.chunk().await? {
            for byte in bytes {
                if byte != b'\n' {
                    line.push(byte);
                    continue;
                }
                if let Some(seq) = std::str::from_utf8(&line)
                    .ok()
                    .and_then(|l| l.strip_prefix("id:"))
                    .and_then(|s| s.trim().parse().ok())
                {
                    followed.seqs.push(seq);
                }
                line.clear();
            }
        }
        followed.ended = true;
        Ok::<_, reqwest::Error>(())
    };
    match tokio::time::timeout(FOLLOW_TIMEOUT, read).await {
        Ok(Ok(())) => api.stats.answered(ROUTE, 200, sent.elapsed()),
        Ok(Err(error)) => api.stats.finding(format!(
            "events of {run_id} broke after {:?}: {error:?}",
            sent.elapsed()
        )),
        Err(_) => api.stats.finding(format!(
            "events of {run_id} did not end within {FOLLOW_TIMEOUT:?} (saw {:?})",
            followed.seqs
        )),
    }
    followed
}

/// One `agent-run-status` notice: run id and status.
pub type Notice = (String, String);

/// The notices a user's socket has read so far, shared with the test,
/// which waits on them before it closes the socket.
pub type Told = Arc<Mutex<Vec<Notice>>>;

/// Reads the user's notifications from `GET /api/ws` into `told` until
/// `stop` turns true; `false` when the socket could not be opened or broke
/// (a finding).
pub async fn notices(api: Api, told: Told, mut stop: watch::Receiver<bool>) -> bool {
    let url = format!(
        "{}/api/ws?token={}",
        api.base.replacen("http://", "ws://", 1),
        api.token
    );
    let (mut socket, _) = match tokio_tungstenite::connect_async(url).await {
        Ok(socket) => socket,
        Err(error) => {
            api.stats
                .finding(format!("WebSocket did not open: {error}"));
            return false;
        }
    };
    loop {
        let message = tokio::select! {
            _ = stop.wait_for(|stop| *stop) => break,
            message = socket.next() => message,
        };
        match message {
            Some(Ok(tokio_tungstenite::tungstenite::Message::Text(text))) => {
                let notice: Value = serde_json::from_str(&text).unwrap_or_default();
                if notice["type"] == "agent-run-status" {
                    told.lock().unwrap().push((
                        notice["agentRunId"].as_str().unwrap_or_default().to_owned(),
                        notice["status"].as_str().unwrap_or_default().to_owned(),
                    ));
                }
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => {
                api.stats.finding(format!("WebSocket broke: {error}"));
                return false;
            }
            None => {
                api.stats
                    .finding("WebSocket closed by the server".to_owned());
                return false;
            }
        }
    }
    let _ = socket.close(None).await;
    let _ = socket.flush().await;
    true
}
