//! Whether spans carry content (prompts, completions, tool arguments and
//! results). Off by default: content may hold secrets and personal data.
//! On when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is `true`
//! (the OpenTelemetry GenAI convention's switch), or after
//! [`set_capture_content`].

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

/// 0: not decided yet (read the environment), 1: off, 2: on.
static CAPTURE: AtomicU8 = AtomicU8::new(0);
static FROM_ENV: OnceLock<bool> = OnceLock::new();

/// Turns content capture on or off for the whole process, whatever the
/// environment says.
pub fn set_capture_content(on: bool) {
    CAPTURE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

/// Whether spans carry content now.
pub fn capture_content() -> bool {
    match CAPTURE.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => *FROM_ENV.get_or_init(|| {
            std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
                .is_ok_and(|v| v.eq_ignore_ascii_case("true"))
        }),
    }
}
