//! Compaction: what a model call sends when the whole history would fill
//! too much of the context window. Pure functions over the history; the
//! core decides when to use them and keeps what is in effect.
//!
//! The stored history never changes: a [`Compaction`] only says which
//! history message the verbatim tail starts at and what stands in for the
//! messages before it (a summary, or a note that they were left out).
//! System messages are always sent verbatim, wherever they are.
//!
//! Where the tail may start (a *cut*): at a message that is neither a
//! system message nor a tool-result message, so every `tool_use` stays in
//! the same part as its `tool_result`; never past the last message holding
//! a provider compaction block (Anthropic's server-side compaction must be
//! sent back as it came); and never inside the last `keep_last_turns`
//! assistant turns (with the user message that prompted the earliest of
//! them).
//!
//! Token estimate: the characters of the system prompt, of every text,
//! thinking, tool call (name and JSON input), tool result and provider
//! block (its JSON), and of the offered tool definitions, divided by four
//! and rounded up; each image or document counts a flat
//! [`ATTACHMENT_TOKENS`]. Providers count differently; the estimate only
//! has to be steady, and the threshold leaves the margin.

use agentloop_types::{CompactionStrategy, ContentBlock, Message, Role, ToolDefinition};
use serde::{Deserialize, Serialize};

/// Characters per estimated token.
const CHARS_PER_TOKEN: u64 = 4;

/// Estimated tokens of one image or document.
pub(crate) const ATTACHMENT_TOKENS: u64 = 1_600;

/// The instruction of a summarising request.
pub(crate) const SUMMARY_INSTRUCTION: &str = "You compact a conversation between a user and an AI \
assistant that uses tools. Summarise the transcript you are given so the assistant can continue \
the task from the summary alone: the user's goals and constraints, decisions made, facts learned \
from tool results (names, paths, values, errors), work done and work still open. Be concise and \
specific. Answer with the summary only.";

/// What a run's requests send in place of the older history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Compaction {
    /// Id of the first history message sent verbatim.
    pub(crate) kept_from: String,
    /// What stands in for the messages before it; `None` when they were
    /// left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) summary: Option<String>,
    /// Context `before_compaction` hooks added: sent after the summary
    /// (or the note that turns were left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<String>,
}

/// A compaction decided and not yet carried out: what
/// `before_compaction` hooks are asked about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PlannedCompaction {
    /// How.
    pub(crate) strategy: CompactionStrategy,
    /// Id of the first history message it keeps verbatim.
    pub(crate) kept_from: String,
    /// The estimated request before compacting.
    pub(crate) tokens_before: u64,
}

/// A summarising call decided and not yet answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PendingSummary {
    /// Id of the first history message the compaction will keep verbatim.
    pub(crate) kept_from: String,
    /// The estimated request before compacting.
    pub(crate) tokens_before: u64,
    /// Context `before_compaction` hooks added, kept with the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<String>,
}

/// Estimated tokens of a request; see the module docs.
pub(crate) fn estimate_tokens(
    system_prompt: Option<&str>,
    messages: &[Message],
    tools: &[ToolDefinition],
) -> u64 {
    let mut chars = system_prompt.map_or(0, |p| p.chars().count() as u64);
    let mut attachments = 0u64;
    for block in messages.iter().flat_map(|m| &m.content) {
        match block {
            ContentBlock::Text { text, .. } => chars += text.chars().count() as u64,
            ContentBlock::Thinking { thinking, .. } => chars += thinking.chars().count() as u64,
            ContentBlock::RedactedThinking { data } => chars += data.len() as u64,
            ContentBlock::ToolUse(call) => {
                chars += (call.name.chars().count() + call.input.as_json().chars().count()) as u64;
            }
            ContentBlock::ToolResult(result) => chars += result.content.chars().count() as u64,
            ContentBlock::Image { .. } | ContentBlock::Document { .. } => attachments += 1,
            ContentBlock::Provider { block, .. } => {
                chars += block.to_string().chars().count() as u64;
            }
        }
    }
    for tool in tools {
        chars += (tool.name.chars().count()
            + tool.description.chars().count()
            + tool.input_schema.to_string().chars().count()) as u64;
    }
    chars.div_ceil(CHARS_PER_TOKEN) + attachments * ATTACHMENT_TOKENS
}

/// Where `id` is in `messages`.
pub(crate) fn position(messages: &[Message], id: &str) -> Option<usize> {
    messages.iter().position(|m| m.id == id)
}

/// The history as sent under `compaction`: system messages of the older
/// part, the compaction item, then the verbatim tail. Unchanged when there
/// is no compaction or its message is not in the history.
pub(crate) fn shape(
    messages: Vec<Message>,
    compaction: Option<&Compaction>,
    run_id: &str,
) -> Vec<Message> {
    let Some(compaction) = compaction else {
        return messages;
    };
    let Some(kept) = position(&messages, &compaction.kept_from) else {
        return messages;
    };
    let mut older = messages;
    let tail = older.split_off(kept);
    let mut sent: Vec<Message> = older
        .into_iter()
        .filter(|m| m.role == Role::System)
        .collect();
    sent.push(compaction_item(compaction, run_id));
    sent.extend(tail);
    sent
}

/// The user message that stands in for the older history.
fn compaction_item(compaction: &Compaction, run_id: &str) -> Message {
    let mut text = match &compaction.summary {
        Some(summary) => format!(
            "Summary of the earlier part of this conversation, compacted to fit the context \
             window:\n\n{summary}"
        ),
        None => {
            "Earlier turns of this conversation were left out to fit the context window.".to_owned()
        }
    };
    if let Some(context) = &compaction.context {
        text.push_str("\n\n");
        text.push_str(context);
    }
    Message::user_text(format!("{run_id}-compaction"), text)
}

/// The history messages a compaction replaces (system messages are sent
/// anyway and not counted).
pub(crate) fn compacted_count(messages: &[Message], compaction: &Compaction) -> u32 {
    let kept = position(messages, &compaction.kept_from).unwrap_or(0);
    messages[..kept]
        .iter()
        .filter(|m| m.role != Role::System)
        .count() as u32
}

/// Every place the verbatim tail may start at, ascending, later than
/// `current` (where the compaction in effect starts it); see the module
/// docs. The caller still validates what a cut would send.
pub(crate) fn cut_points(
    messages: &[Message],
    current: Option<usize>,
    keep_last_turns: u32,
) -> Vec<usize> {
    let Some(first) = messages.iter().position(|m| m.role != Role::System) else {
        return Vec::new();
    };
    let lower = current.map_or(first, |c| c.max(first)) + 1;
    let Some(mut upper) = tail_start(messages, keep_last_turns) else {
        return Vec::new();
    };
    if let Some(held) = messages.iter().rposition(holds_provider_compaction) {
        upper = upper.min(held);
    }
    (lower..=upper)
        .filter(|&i| {
            let message = &messages[i];
            message.role != Role::System && message.tool_results().next().is_none()
        })
        .collect()
}

/// The latest index the tail may start at so it keeps the last
/// `keep_last_turns` assistant turns; `None` when there are not that many.
fn tail_start(messages: &[Message], keep_last_turns: u32) -> Option<usize> {
    let last = messages.len().checked_sub(1)?;
    if keep_last_turns == 0 {
        return Some(last);
    }
    let index = messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| m.role == Role::Assistant)
        .nth(keep_last_turns as usize - 1)
        .map(|(i, _)| i)?;
    // The user's prompt belongs with the answer it prompted.
    match index.checked_sub(1).map(|p| &messages[p]) {
        Some(prompt) if prompt.role == Role::User && prompt.tool_results().next().is_none() => {
            Some(index - 1)
        }
        _ => Some(index),
    }
}

/// Whether `message` holds a provider's own compaction block.
fn holds_provider_compaction(message: &Message) -> bool {
    message.content.iter().any(|block| {
        matches!(block, ContentBlock::Provider { block, .. }
            if block.get("type").and_then(|t| t.as_str()) == Some("compaction"))
    })
}

/// The summarising request: the instruction, then one user message with
/// the earlier summary (if any) and a transcript of `messages` (system
/// messages left out: they are sent verbatim anyway).
pub(crate) fn summary_request(
    previous: Option<&str>,
    messages: &[Message],
    run_id: &str,
) -> Vec<Message> {
    let mut transcript = String::new();
    if let Some(previous) = previous {
        transcript.push_str("Summary of what came before:\n");
        transcript.push_str(previous);
        transcript.push_str("\n\n");
    }
    for message in messages.iter().filter(|m| m.role != Role::System) {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
        };
        transcript.push_str(&format!("[{role}]\n"));
        for block in &message.content {
            if let Some(line) = transcript_line(block) {
                transcript.push_str(&line);
                transcript.push('\n');
            }
        }
        transcript.push('\n');
    }
    vec![
        Message::system_text(format!("{run_id}-summary-instruction"), SUMMARY_INSTRUCTION),
        Message::user_text(
            format!("{run_id}-summary-transcript"),
            format!("Transcript to summarise:\n\n{}", transcript.trim_end()),
        ),
    ]
}

/// One block of a transcript; thinking is left out.
fn transcript_line(block: &ContentBlock) -> Option<String> {
    Some(match block {
        ContentBlock::Text { text, .. } => text.clone(),
        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => return None,
        ContentBlock::ToolUse(call) => format!("(calls tool {} with {})", call.name, call.input),
        ContentBlock::ToolResult(result) => {
            let kind = if result.is_error { "error" } else { "result" };
            format!(
                "(tool {kind} for {}: {})",
                result.tool_use_id, result.content
            )
        }
        ContentBlock::Image { .. } => "(an image)".to_owned(),
        ContentBlock::Document { name, .. } => match name {
            Some(name) => format!("(a document: {name})"),
            None => "(a document)".to_owned(),
        },
        ContentBlock::Provider { block, .. } => {
            let kind = block
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or("provider");
            format!("(a {kind} block)")
        }
    })
}

#[cfg(test)]
mod tests {
    use agentloop_types::{ApiKind, ToolResultBlock, ToolUseBlock, validate_history};
    use serde_json::json;

    use super::*;

    fn call(id: &str) -> Message {
        Message::new(
            format!("a-{id}"),
            Role::Assistant,
            vec![ContentBlock::ToolUse(ToolUseBlock {
                id: id.into(),
                name: "echo".into(),
                input: json!({"text": id}).into(),
            })],
        )
    }

    fn result(id: &str) -> Message {
        Message::new(
            format!("r-{id}"),
            Role::User,
            vec![ContentBlock::ToolResult(ToolResultBlock::ok(id, "done"))],
        )
    }

    fn history() -> Vec<Message> {
        vec![
            Message::system_text("s", "You help."),
            Message::user_text("u", "Go."),
            call("1"),
            result("1"),
            call("2"),
            result("2"),
            call("3"),
            result("3"),
        ]
    }

    #[test]
    fn cuts_fall_on_assistant_turns_and_spare_the_last_ones() {
        let messages = history();
        assert_eq!(cut_points(&messages, None, 2), vec![2, 4]);
        assert_eq!(cut_points(&messages, None, 1), vec![2, 4, 6]);
        assert_eq!(cut_points(&messages, Some(4), 1), vec![6]);
        assert!(cut_points(&messages, None, 3).is_empty());
    }

    #[test]
    fn a_provider_compaction_block_is_never_cut_past() {
        let mut messages = history();
        messages[4].content.insert(
            0,
            ContentBlock::Provider {
                api: ApiKind::AnthropicMessages,
                block: json!({"type": "compaction", "content": "Earlier: ..."}),
            },
        );
        assert_eq!(cut_points(&messages, None, 1), vec![2, 4]);
    }

    #[test]
    fn shaping_keeps_system_messages_and_the_tail_verbatim() {
        let messages = history();
        let compaction = Compaction {
            kept_from: "a-3".into(),
            summary: Some("Two echoes ran.".into()),
            context: None,
        };
        let sent = shape(messages.clone(), Some(&compaction), "r");
        let ids: Vec<&str> = sent.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["s", "r-compaction", "a-3", "r-3"]);
        assert!(sent[1].text().ends_with("Two echoes ran."));
        assert_eq!(&sent[2..], &messages[6..]);
        validate_history(&sent, false).unwrap();
        assert_eq!(compacted_count(&messages, &compaction), 5);
    }

    #[test]
    fn the_estimate_is_a_quarter_of_the_characters() {
        let messages = vec![Message::user_text("u", "x".repeat(401))];
        assert_eq!(estimate_tokens(Some("abc"), &messages, &[]), 101);
    }
}
