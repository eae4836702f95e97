//! Request bodies an answer leaves unread. A route may answer before it
//! reads the body — a 401 from the auth extractor, a 404, a 405, a 413, a
//! timeout — and drop it. HTTP/1.1 can reuse the connection only once the
//! whole body has been read; hyper then reads on only what it already
//! buffered and otherwise closes the connection after the answer, which by
//! then may have gone out looking kept-alive: a client that sends its next
//! request on it sees the connection reset.
//!
//! So, around every route, the body is tracked: when an answer leaves it
//! unread, the rest is read and discarded first (at most
//! [`DRAIN_BYTES`] in all, within [`DRAIN_WAIT`]) and the connection is
//! kept; when it cannot be (too large, too slow, or a client waiting for
//! `100 Continue`), the answer says `Connection: close` and the connection
//! is marked to linger (see [`crate::listener`]): it keeps reading and
//! discarding for a bounded time after the answer, so the close does not
//! reset what the client has not read yet.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use hyper::body::{Body as HttpBody, Frame, SizeHint};

/// Most bytes of a request body (read by the route and after it) that are
/// drained to keep its connection: the server's default body limit.
pub const DRAIN_BYTES: u64 = 1 << 20;

/// How long the rest of an unread body has to arrive before the answer
/// goes out with `Connection: close` instead.
pub const DRAIN_WAIT: Duration = Duration::from_secs(2);

/// Set on a connection whose answer said `Connection: close` over a body
/// it did not read: the listener then lingers before closing.
#[derive(Debug, Clone, Default)]
pub struct LingerFlag(Arc<AtomicBool>);

impl LingerFlag {
    /// Asks the connection to linger when it closes.
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the connection should linger.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Middleware: after the inner service answered, drains what it left of
/// the request body, or closes the connection; see the module docs.
pub async fn settle_unread_body(request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let expects_continue = request
        .headers()
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let linger = request.extensions().get::<LingerFlag>().cloned();
    let (parts, body) = request.into_parts();
    let slot = Arc::new(Mutex::new(Left::Held));
    let tracked = Tracked {
        inner: Some(body),
        read: 0,
        ended: false,
        failed: false,
        slot: slot.clone(),
    };
    let response = next
        .run(Request::from_parts(parts, Body::new(tracked)))
        .await;
    let left = std::mem::replace(
        &mut *slot.lock().unwrap_or_else(PoisonError::into_inner),
        Left::Held,
    );
    let kept = match left {
        Left::Ended => true,
        // Hyper closes a connection whose body failed.
        Left::Failed => false,
        // Someone still holds the body: it cannot be drained here.
        Left::Held => false,
        // A client waiting for `100 Continue` has sent nothing yet: reading
        // would only invite a body nobody wants.
        Left::Unread { read: 0, .. } if expects_continue => false,
        Left::Unread { .. } if declared.is_some_and(|len| len > DRAIN_BYTES) => false,
        Left::Unread { body, read } => {
            let budget = DRAIN_BYTES.saturating_sub(read);
            tokio::time::timeout(DRAIN_WAIT, drain(body, budget))
                .await
                .unwrap_or(false)
        }
    };
    if kept {
        response
    } else {
        if let Some(linger) = linger {
            linger.set();
        }
        close(response)
    }
}

/// `response`, saying the connection closes after it.
fn close(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Reads `body` to its end, discarding it; false when it holds more than
/// `budget` bytes or fails.
async fn drain(body: Body, budget: u64) -> bool {
    let mut left = budget;
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        let Ok(chunk) = chunk else { return false };
        match left.checked_sub(chunk.len() as u64) {
            Some(rest) => left = rest,
            None => return false,
        }
    }
    true
}

/// What became of a tracked body.
enum Left {
    /// Still held by the route (or never given up).
    Held,
    /// Read to its end.
    Ended,
    /// Its reading failed.
    Failed,
    /// Dropped before its end, after `read` bytes.
    Unread { body: Body, read: u64 },
}

/// A request body that, dropped before its end, hands what is left back
/// to [`settle_unread_body`].
struct Tracked {
    inner: Option<Body>,
    read: u64,
    ended: bool,
    failed: bool,
    slot: Arc<Mutex<Left>>,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.read = this.read.saturating_add(data.len() as u64);
                }
            }
            Poll::Ready(None) => this.ended = true,
            Poll::Ready(Some(Err(_))) => this.failed = true,
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map(HttpBody::size_hint)
            .unwrap_or_default()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let left = match self.inner.take() {
            _ if self.failed => Left::Failed,
            Some(body) if !self.ended && !body.is_end_stream() => Left::Unread {
                body,
                read: self.read,
            },
            _ => Left::Ended,
        };
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = left;
    }
}
