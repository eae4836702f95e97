//! The terminal view of a run: text as it arrives, thinking dimmed, tool
//! calls and results on one line each, a last line with tokens and cost.

use std::io::Write;

use agentloop_types::{
    BlockStart, EventKind, LoopEvent, LoopResult, LoopStatus, StreamDelta, TokenTotals,
};

const DIM: &str = "\x1b[2m";
const CYAN: &str = "\x1b[36m";
const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

/// Writes one event; nested runs are indented by depth.
pub fn event(out: &mut impl Write, event: &LoopEvent) -> std::io::Result<()> {
    let indent = "  ".repeat(event.path.depth());
    match &event.kind {
        EventKind::StreamingChunk { delta } => match delta {
            StreamDelta::BlockStart { block, .. } => match block {
                BlockStart::Thinking => write!(out, "{indent}{DIM}")?,
                BlockStart::Text => write!(out, "{indent}")?,
                BlockStart::ToolUse { name, .. } => write!(out, "{indent}{CYAN}→ {name}{RESET} ")?,
                BlockStart::RedactedThinking { .. } => {
                    writeln!(out, "{indent}{DIM}[redacted thinking]{RESET}")?
                }
                BlockStart::Provider { block, .. } => writeln!(
                    out,
                    "{indent}{DIM}[{}]{RESET}",
                    block["type"].as_str().unwrap_or("provider block")
                )?,
            },
            StreamDelta::Text { text, .. } => write!(out, "{text}")?,
            StreamDelta::Thinking { thinking, .. } => write!(out, "{thinking}")?,
            StreamDelta::ToolInput { partial_json, .. } => {
                write!(out, "{DIM}{partial_json}{RESET}")?
            }
            StreamDelta::BlockStop { .. } => writeln!(out, "{RESET}")?,
            StreamDelta::Signature { .. } | StreamDelta::Citation { .. } => {}
        },
        EventKind::ToolEnd { name, is_error, .. } => {
            let (colour, mark) = if *is_error {
                (RED, "✗")
            } else {
                (CYAN, "✓")
            };
            writeln!(out, "{indent}{colour}{mark} {name}{RESET}")?
        }
        EventKind::AgentReason { message, .. } | EventKind::AgentObserve { message, .. } => {
            writeln!(out, "{indent}{DIM}{message}{RESET}")?
        }
        EventKind::AgentError { message, .. } => writeln!(out, "{indent}{RED}{message}{RESET}")?,
        EventKind::Finished { result } if !event.path.is_root() => {
            writeln!(out, "{indent}{DIM}sub-run {}{RESET}", result.status.name())?
        }
        EventKind::Finished { result } => summary(out, result)?,
        EventKind::StreamingStart { .. }
        | EventKind::FirstChunk
        | EventKind::StreamingEnd { .. }
        | EventKind::MessageCreated { .. }
        | EventKind::TokensConsumed { .. }
        | EventKind::PendingToolResult { .. }
        | EventKind::ToolStart { .. }
        | EventKind::ToolBlockUpdate { .. }
        | EventKind::AgentStart { .. }
        | EventKind::AgentTurnStart { .. }
        | EventKind::AgentRequestInput { .. }
        | EventKind::AgentToolStart { .. }
        | EventKind::AgentToolComplete { .. }
        | EventKind::AgentCompletion { .. } => {}
    }
    out.flush()
}

fn summary(out: &mut impl Write, result: &LoopResult) -> std::io::Result<()> {
    match &result.status {
        LoopStatus::Error { error } => writeln!(out, "{RED}error: {error}{RESET}")?,
        LoopStatus::Suspended { reason, .. } => {
            writeln!(out, "{CYAN}waiting for input: {reason}{RESET}")?
        }
        LoopStatus::Complete {
            return_value: Some(value),
            ..
        } => writeln!(out, "returned: {value}")?,
        LoopStatus::Complete {
            return_value: None,
            output: Some(value),
        } => writeln!(out, "output: {value}")?,
        LoopStatus::Complete {
            return_value: None,
            output: None,
        }
        | LoopStatus::MaxIterations
        | LoopStatus::Cancelled
        | LoopStatus::LimitExceeded { .. } => {}
    }
    writeln!(
        out,
        "{DIM}{} · {}{RESET}",
        result.status.name(),
        tokens(&result.tokens)
    )
}

/// `1,234 in · 56 out · $0.0123`, with `?` when the cost is unreliable.
pub fn tokens(t: &TokenTotals) -> String {
    let mut line = format!(
        "{} in · {} out",
        t.input_tokens + t.cache_read_tokens + t.cache_creation_tokens,
        t.output_tokens
    );
    if t.cache_read_tokens > 0 {
        line.push_str(&format!(" ({} cached)", t.cache_read_tokens));
    }
    line.push_str(&format!(" · ${:.4}", t.cost));
    if t.cost_unreliable {
        line.push_str(" (unknown model price: cost incomplete)");
    }
    line
}
