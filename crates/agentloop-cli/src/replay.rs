//! `agentloop replay-stream`: a recording through the adapters, printed as
//! one JSON object.
//!
//! A recording is either the raw SSE body an HTTP response carries, or
//! JSON lines (one event object a line, the SSE framing stripped, as the
//! fixtures under `provider-streams/` hold them); the second is told apart
//! by its first non-empty line starting with `{` and framed as `api`'s
//! server would have sent it.

use std::path::PathBuf;
use std::process::ExitCode;

use agentloop_providers::{replay_sse, sse_from_json_lines};
use agentloop_types::ApiKind;
use clap::{Args, ValueEnum};
use serde_json::json;

use crate::out::{Failure, Outcome, Stdout};

/// The wire protocols `replay-stream` understands.
#[derive(Clone, Copy, ValueEnum)]
pub enum ApiArg {
    AnthropicMessages,
    OpenaiChat,
    OpenaiResponses,
    Gemini,
}

#[derive(Args)]
pub struct ReplayArgs {
    /// The API the recording comes from.
    #[arg(long, value_enum)]
    pub api: ApiArg,
    /// File with the raw SSE body.
    pub file: PathBuf,
}

/// Prints `{content, stop_reason, usage, error?}`; exits 1 when the stream
/// carried an error. A stream cut before its end still shows the stop
/// reason and usage it reported. A recording whose events are plainly
/// another API's than `--api` names is refused (exit 2), naming the API
/// they are.
pub fn replay(args: ReplayArgs) -> Outcome {
    let body = std::fs::read(&args.file)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", args.file.display())))?;
    let api = match args.api {
        ApiArg::AnthropicMessages => ApiKind::AnthropicMessages,
        ApiArg::OpenaiChat => ApiKind::OpenaiChat,
        ApiArg::OpenaiResponses => ApiKind::OpenaiResponses,
        ApiArg::Gemini => ApiKind::Gemini,
    };
    if let Some(recorded) = recorded_api(&body).filter(|recorded| *recorded != api) {
        return Err(Failure::usage(format!(
            "{} holds a {} stream, not {}: pass --api {}",
            args.file.display(),
            api_name(recorded),
            api_name(api),
            api_name(recorded)
        )));
    }
    let body = if is_json_lines(&body) {
        let text = String::from_utf8(body)
            .map_err(|e| Failure::usage(format!("the recording is not UTF-8: {e}")))?;
        sse_from_json_lines(api, &text).into_bytes()
    } else {
        body
    };
    let outcome = replay_sse(api, &body);
    let mut report = json!({
        "content": outcome.content,
        "stop_reason": outcome.stop_reason,
        "usage": outcome.usage,
    });
    if let Some(error) = &outcome.error {
        report["error"] = json!({
            "kind": error.kind,
            "message": error.message,
            "status": error.status,
            "type": error.error_type,
            "request_id": error.request_id,
        });
        // What a cut stream reported before the cut (also in `usage` and
        // `stop_reason` above).
        if let Some(partial) = &error.partial {
            report["error"]["partial"] = json!(partial);
        }
    }
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    Stdout::new().line(text)?;
    Ok(if outcome.error.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The `--api` value naming `api`.
fn api_name(api: ApiKind) -> &'static str {
    match api {
        ApiKind::AnthropicMessages => "anthropic-messages",
        ApiKind::OpenaiChat => "openai-chat",
        ApiKind::OpenaiResponses => "openai-responses",
        ApiKind::Gemini => "gemini",
    }
}

/// The API a recording's events plainly belong to, from the first event
/// (SSE `data:` or a JSON line) that only one API sends; `None` when no
/// event tells.
fn recorded_api(body: &[u8]) -> Option<ApiKind> {
    const ANTHROPIC_EVENTS: [&str; 6] = [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ];
    String::from_utf8_lossy(body)
        .lines()
        .map(str::trim)
        .map(|line| line.strip_prefix("data:").map_or(line, str::trim_start))
        .filter(|line| line.starts_with('{'))
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find_map(|event| {
            let kind = event.get("type").and_then(serde_json::Value::as_str);
            match kind {
                Some(kind) if ANTHROPIC_EVENTS.contains(&kind) => Some(ApiKind::AnthropicMessages),
                Some(kind) if kind.starts_with("response.") => Some(ApiKind::OpenaiResponses),
                _ if event.get("choices").is_some() => Some(ApiKind::OpenaiChat),
                _ if event.get("candidates").is_some() => Some(ApiKind::Gemini),
                _ => None,
            }
        })
}

/// Whether `body` is JSON lines rather than SSE.
fn is_json_lines(body: &[u8]) -> bool {
    body.split(|b| *b == b'\n')
        .map(<[u8]>::trim_ascii)
        .find(|line| !line.is_empty())
        .is_some_and(|line| line.starts_with(b"{"))
}
