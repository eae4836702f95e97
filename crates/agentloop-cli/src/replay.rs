//! `agentloop replay-stream`: a recording through the adapters, printed as
//! one JSON object.

use std::process::ExitCode;

use agentloop_providers::replay_sse;
use agentloop_types::ApiKind;
use serde_json::json;

use crate::args::{ApiArg, ReplayArgs};

/// Prints `{content, stop_reason, usage, error?}`; exits 1 when the stream
/// carried an error. A stream cut before its end still shows the stop
/// reason and usage it reported.
pub fn replay(args: ReplayArgs) -> Result<ExitCode, String> {
    let body = std::fs::read(&args.file)
        .map_err(|e| format!("cannot read {}: {e}", args.file.display()))?;
    let api = match args.api {
        ApiArg::AnthropicMessages => ApiKind::AnthropicMessages,
        ApiArg::OpenaiChat => ApiKind::OpenaiChat,
        ApiArg::OpenaiResponses => ApiKind::OpenaiResponses,
        ApiArg::Gemini => ApiKind::Gemini,
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
    println!("{text}");
    Ok(if outcome.error.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
