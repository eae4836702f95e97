//! A compact, one-line-per-event rendering of runs, for snapshot tests and
//! terminal logs. Stable and readable; not meant to be parsed.

use crate::{
    AgentCompletionEvent, AgentErrorEvent, AgentObserveEvent, AgentReasonEvent,
    AgentRequestInputEvent, AgentStartEvent, AgentToolCompleteEvent, AgentToolStartEvent,
    AgentTurnStartEvent, FinishedEvent, MessageCreatedEvent, PendingToolResultEvent,
    StreamingChunkEvent, StreamingEndEvent, StreamingStartEvent, TokensConsumedEvent,
    ToolBlockUpdateEvent, ToolEndEvent, ToolStartEvent,
};
use crate::{
    ApprovalRequestedEvent, ContextCompactedEvent, HandoffEvent, HookDecision, HookEvent, Wait,
};
use std::fmt::Write;

use crate::context::ContextEdit;
use crate::event::{EventKind, LoopEvent};
use crate::message::{ContentBlock, Message, Role};
use crate::render_blocks::{ToolResultRenderBlock, ToolResultStatus};
use crate::result::{LoopResult, LoopStatus};
use crate::stream::{BlockStart, StreamDelta};
use crate::tokens::TokenTotals;

/// Renders events, one line each.
pub fn render_events<'a>(events: impl IntoIterator<Item = &'a LoopEvent>) -> String {
    events
        .into_iter()
        .map(render_event)
        .fold(String::new(), |mut out, line| {
            out.push_str(&line);
            out.push('\n');
            out
        })
}

/// Renders one event: `seq path name details`.
pub fn render_event(event: &LoopEvent) -> String {
    let path = if event.path.is_root() {
        "/".to_owned()
    } else {
        format!("/{}", event.path.0.join("/"))
    };
    let details = render_kind(&event.kind);
    let name = event.kind.name();
    if details.is_empty() {
        format!("{:03} {path} {name}", event.seq)
    } else {
        format!("{:03} {path} {name} {details}", event.seq)
    }
}

fn render_kind(kind: &EventKind) -> String {
    match kind {
        // The recorded request is left out: it repeats the messages the
        // transcript shows, and its own tests read it.
        EventKind::StreamingStart(StreamingStartEvent {
            iteration,
            agent,
            request: _,
        }) => match agent {
            Some(agent) => format!("iteration={iteration} agent={agent}"),
            None => format!("iteration={iteration}"),
        },
        EventKind::FirstChunk => String::new(),
        EventKind::StreamingChunk(StreamingChunkEvent { delta }) => render_delta(delta),
        EventKind::StreamingEnd(StreamingEndEvent { stop_reason }) => match stop_reason {
            Some(reason) => format!("stop={}", json(reason)),
            None => "stop=none".to_owned(),
        },
        EventKind::MessageCreated(MessageCreatedEvent { message }) => render_message(message),
        EventKind::TokensConsumed(TokensConsumedEvent { tokens }) => render_tokens(tokens),
        EventKind::PendingToolResult(PendingToolResultEvent { message_id, blocks }) => {
            let blocks: Vec<String> = blocks.iter().map(render_tool_block).collect();
            format!("{message_id} [{}]", blocks.join(", "))
        }
        EventKind::ToolStart(ToolStartEvent {
            tool_use_id,
            name,
            input,
            is_skill,
            depth,
        }) => format!(
            "{tool_use_id} {name} {}{} depth={depth}",
            json(input),
            if *is_skill { " skill" } else { "" }
        ),
        EventKind::ToolBlockUpdate(ToolBlockUpdateEvent { tool_use_id, block }) => {
            format!("{tool_use_id} {}", render_tool_block(block))
        }
        EventKind::ToolEnd(ToolEndEvent {
            tool_use_id,
            name,
            is_error,
            is_skill,
            depth,
            // A duration varies from run to run; the transcript is compared.
            duration_ms: _,
        }) => format!(
            "{tool_use_id} {name}{}{} depth={depth}",
            if *is_error { " error" } else { " ok" },
            if *is_skill { " skill" } else { "" }
        ),
        EventKind::AgentStart(AgentStartEvent { max_steps }) => format!("max_steps={max_steps}"),
        EventKind::AgentTurnStart(AgentTurnStartEvent { step }) => format!("step={step}"),
        EventKind::AgentReason(AgentReasonEvent { message, step })
        | EventKind::AgentObserve(AgentObserveEvent { message, step })
        | EventKind::AgentError(AgentErrorEvent { message, step }) => {
            format!("step={step} {}", json(message))
        }
        EventKind::AgentRequestInput(AgentRequestInputEvent { question, step }) => {
            format!("step={step} {}", json(question))
        }
        EventKind::AgentToolStart(AgentToolStartEvent { tool, step }) => {
            format!("step={step} {tool}")
        }
        EventKind::AgentToolComplete(AgentToolCompleteEvent { tool, result, step }) => {
            format!("step={step} {tool} {}", json(result))
        }
        EventKind::AgentCompletion(AgentCompletionEvent {
            steps,
            final_answer,
        }) => {
            format!("steps={steps} {}", json(final_answer))
        }
        EventKind::ContextCompacted(ContextCompactedEvent {
            strategy,
            tokens_before,
            tokens_after,
            messages_compacted,
        }) => format!(
            "{} tokens={tokens_before}->{tokens_after} messages={messages_compacted}",
            strategy.name()
        ),
        EventKind::ContextEdited(edited) => match &edited.edit {
            ContextEdit::ToolsLoaded { tools } => format!("tools_loaded {}", tools.join(",")),
            ContextEdit::ResultsShortened { calls } => {
                format!("results_shortened {}", calls.join(","))
            }
            ContextEdit::ResultsCleared {
                calls,
                through,
                tokens_before,
                tokens_after,
            } => format!(
                "results_cleared calls={calls} through={through} tokens={tokens_before}->{tokens_after}"
            ),
            ContextEdit::PassagesRecalled { query, sources } => {
                format!("passages_recalled {query:?} {}", sources.join(","))
            }
        },
        EventKind::ApprovalRequested(event) => {
            let ApprovalRequestedEvent {
                tool_use_id,
                tool,
                arguments,
                reason,
            } = &**event;
            format!("{tool_use_id} {tool} {} {}", json(arguments), json(reason))
        }
        EventKind::Handoff(event) => {
            let HandoffEvent {
                from,
                to,
                tool_use_id,
                reason,
                handoffs,
            } = &**event;
            let mut out = format!("{from} -> {to} {tool_use_id} #{handoffs}");
            if let Some(reason) = reason {
                out.push_str(&format!(" {}", json(reason)));
            }
            out
        }
        EventKind::Hook(event) => {
            let HookEvent {
                hook,
                point,
                tool_use_id,
                decision,
                ignored,
                error,
                guardrail,
                note,
            } = &**event;
            let mut out = if *guardrail {
                format!("guardrail {hook} {}", point.name())
            } else {
                format!("{hook} {}", point.name())
            };
            if let Some(id) = tool_use_id {
                out.push_str(&format!(" {id}"));
            }
            out.push_str(&format!(" {}", render_decision(decision)));
            if *ignored {
                out.push_str(" (ignored)");
            }
            if let Some(error) = error {
                out.push_str(&format!(" error={}", json(error)));
            }
            if let Some(note) = note {
                out.push_str(&format!(" note={}", json(note)));
            }
            out
        }
        EventKind::Finished(FinishedEvent { result }) => render_result(result),
    }
}

fn render_decision(decision: &HookDecision) -> String {
    let name = decision.name();
    match decision {
        HookDecision::Pass => name.to_owned(),
        HookDecision::Block { reason }
        | HookDecision::Ask { reason }
        | HookDecision::Continue { reason } => format!("{name} {}", json(reason)),
        HookDecision::Rewrite { arguments } => format!("{name} {}", json(arguments)),
        HookDecision::AddContext { text } => format!("{name} {}", json(text)),
        HookDecision::Replace { result, is_error } => {
            format!(
                "{name} {}{}",
                json(result),
                if *is_error { " error" } else { "" }
            )
        }
    }
}

fn render_delta(delta: &StreamDelta) -> String {
    match delta {
        StreamDelta::BlockStart { index, block } => match block {
            BlockStart::Text => format!("start[{index}] text"),
            BlockStart::Thinking => format!("start[{index}] thinking"),
            BlockStart::RedactedThinking { .. } => format!("start[{index}] redacted_thinking"),
            BlockStart::ToolUse { id, name } => format!("start[{index}] tool_use {id} {name}"),
            BlockStart::Provider { api, block } => {
                format!("start[{index}] provider {} {}", api.as_str(), json(block))
            }
        },
        StreamDelta::Text { index, text } => format!("text[{index}] {}", json(text)),
        StreamDelta::Thinking { index, thinking } => {
            format!("thinking[{index}] {}", json(thinking))
        }
        StreamDelta::Signature { index, signature } => {
            format!("signature[{index}] {}", json(signature))
        }
        StreamDelta::ToolInput {
            index,
            partial_json,
        } => {
            format!("tool_input[{index}] {}", json(partial_json))
        }
        StreamDelta::Citation { index, citation } => {
            format!("citation[{index}] {}", json(citation))
        }
        StreamDelta::BlockStop { index } => format!("stop[{index}]"),
    }
}

/// Renders a message as `role id: block | block`.
pub fn render_message(message: &Message) -> String {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let blocks: Vec<String> = message.content.iter().map(render_block).collect();
    format!("{role} {}: {}", message.id, blocks.join(" | "))
}

fn render_block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text, citations } => {
            let mut out = format!("text {}", json(text));
            if !citations.is_empty() {
                let _ = write!(out, " citations={}", citations.len());
            }
            out
        }
        ContentBlock::Thinking {
            thinking,
            signature,
        } => format!(
            "thinking {}{}",
            json(thinking),
            if signature.is_some() { " signed" } else { "" }
        ),
        ContentBlock::RedactedThinking { .. } => "redacted_thinking".to_owned(),
        ContentBlock::ToolUse(call) => {
            format!("tool_use {} {} {}", call.id, call.name, json(&call.input))
        }
        ContentBlock::ToolResult(result) => format!(
            "tool_result {}{} {}",
            result.tool_use_id,
            if result.is_error { " error" } else { "" },
            json(&result.content)
        ),
        ContentBlock::Image { source } => format!("image {}", json(source)),
        ContentBlock::Document { source, .. } => format!("document {}", json(source)),
        ContentBlock::Provider { api, block } => {
            format!("provider {} {}", api.as_str(), json(block))
        }
    }
}

fn render_tool_block(block: &ToolResultRenderBlock) -> String {
    let status = match block.status {
        ToolResultStatus::Running => "running",
        ToolResultStatus::Complete => "complete",
        ToolResultStatus::Error => "error",
    };
    let mut out = format!("{}({}) {status}", block.name, block.tool_use_id);
    if !block.rendering_groups.is_empty() {
        let _ = write!(out, " groups={}", block.rendering_groups.len());
    }
    out
}

fn render_tokens(tokens: &TokenTotals) -> String {
    let mut out = format!("in={} out={}", tokens.input_tokens, tokens.output_tokens);
    for (name, value) in [
        ("reasoning", tokens.reasoning_tokens),
        ("cache_write", tokens.cache_creation_tokens),
        ("cache_read", tokens.cache_read_tokens),
        ("web_search", tokens.web_search_count),
    ] {
        if value > 0 {
            let _ = write!(out, " {name}={value}");
        }
    }
    if tokens.cost > 0.0 {
        let _ = write!(out, " cost={:.6}", tokens.cost);
    }
    if tokens.cost_unreliable {
        out.push_str(" cost_unreliable");
    }
    out
}

fn render_result(result: &LoopResult) -> String {
    let detail = match &result.status {
        LoopStatus::Complete {
            return_value,
            output,
        } => {
            let mut out = String::new();
            if let Some(value) = return_value {
                out.push_str(&format!(" return={}", json(value)));
            }
            if let Some(value) = output {
                out.push_str(&format!(" output={}", json(value)));
            }
            out
        }
        LoopStatus::MaxIterations | LoopStatus::Cancelled => String::new(),
        LoopStatus::Suspended { pending, .. } => pending
            .iter()
            .map(|p| {
                let (kind, why) = match &p.wait {
                    Wait::Approval { reason } => ("approval", reason),
                    Wait::Question { question } => ("question", question),
                };
                let at = if p.path.is_root() {
                    String::new()
                } else {
                    format!("{}/", p.path.0.join("/"))
                };
                format!(" pending={at}{}:{kind}:{}", p.call.id, json(why))
            })
            .collect(),
        LoopStatus::Error { error } => format!(" error={}", json(&error.to_string())),
        LoopStatus::LimitExceeded { limit, .. } => format!(" limit={}", json(limit)),
    };
    format!(
        "{}{detail} messages={} {}",
        result.status.name(),
        result.messages.len(),
        render_tokens(&result.tokens)
    )
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("<unserialisable: {e}>"))
}
