//! The terminal view of a run: text as it arrives, thinking under a
//! `thinking` label and dimmed, each tool call as a line with its arguments
//! and then a line with the first lines of its result (or the error reason
//! in red), and a last line with tokens and cost.
//!
//! Everything the model or a tool produced goes through
//! [`sanitize`](crate::out::sanitize) first, so untrusted text cannot send
//! terminal escapes.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use agentloop_types::{
    AgentCompletionEvent, AgentErrorEvent, AgentObserveEvent, AgentReasonEvent,
    AgentRequestInputEvent, AgentStartEvent, AgentToolCompleteEvent, AgentToolStartEvent,
    AgentTurnStartEvent, ApprovalRequestedEvent, BlockStart, ContentBlock, ContextCompactedEvent,
    ContextEdit, EventKind, FinishedEvent, HandoffEvent, HookDecision, HookEvent, LoopEvent,
    LoopResult, LoopStatus, MessageCreatedEvent, PendingToolResultEvent, StreamDelta,
    StreamingChunkEvent, StreamingEndEvent, StreamingStartEvent, TokenTotals, TokensConsumedEvent,
    ToolBlockUpdateEvent, ToolEndEvent, ToolStartEvent, Wait,
};

use crate::markdown::MarkdownStream;
use crate::out::{Style, sanitize};

/// Characters of tool arguments shown on a tool's line.
const ARGUMENT_CHARS: usize = 120;
/// Lines of a tool result shown under it.
const RESULT_LINES: usize = 3;
/// Characters of one result line shown.
const RESULT_LINE_CHARS: usize = 160;

/// Renders the events of one or more runs; remembers tool names by call id
/// so a result line can say which tool it belongs to.
pub struct View {
    style: Style,
    tool_names: HashMap<String, String>,
    /// Tool-use blocks being streamed, by depth and block index: their end
    /// writes nothing.
    tool_blocks: HashSet<(usize, u32)>,
    /// The block whose line is not ended yet, and where it is written (a
    /// turn cut short ends it before the summary).
    open: Open,
    /// A person is asked about pending calls (see [`crate::approve`]):
    /// approval requests and the waiting summary are left to the prompt.
    asking: bool,
    /// The root run's text being rendered as markdown (colour terminals
    /// only; elsewhere the text goes as it came).
    markdown: Option<MarkdownStream>,
}

/// Which sink holds an unfinished line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Text,
    Progress,
}

/// Where the view writes: the root run's text (the answer) and everything
/// else (thinking, tool lines, the status line), which may be one stream.
pub struct Sinks<'a> {
    text: &'a mut dyn Write,
    progress: Option<&'a mut dyn Write>,
}

impl<'a> Sinks<'a> {
    /// Everything to one stream.
    pub fn one(out: &'a mut dyn Write) -> Self {
        Self {
            text: out,
            progress: None,
        }
    }

    /// The answer's text to `text`, the rest to `progress`.
    pub fn split(text: &'a mut dyn Write, progress: &'a mut dyn Write) -> Self {
        Self {
            text,
            progress: Some(progress),
        }
    }

    fn text(&mut self) -> &mut dyn Write {
        &mut *self.text
    }

    fn progress(&mut self) -> &mut dyn Write {
        match &mut self.progress {
            Some(progress) => &mut **progress,
            None => &mut *self.text,
        }
    }

    fn to(&mut self, open: Open) -> &mut dyn Write {
        match open {
            Open::Text => self.text(),
            Open::None | Open::Progress => self.progress(),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.text.flush()?;
        if let Some(progress) = &mut self.progress {
            progress.flush()?;
        }
        Ok(())
    }
}

impl View {
    /// A view writing with `style`.
    pub fn new(style: Style) -> Self {
        Self {
            style,
            tool_names: HashMap::new(),
            tool_blocks: HashSet::new(),
            open: Open::None,
            asking: false,
            markdown: None,
        }
    }

    /// Whether a person is asked about pending calls (then the prompt shows
    /// them instead of the view).
    pub fn set_asking(&mut self, asking: bool) {
        self.asking = asking;
    }

    /// Ends a line left open by a block.
    fn end_line(&mut self, sinks: &mut Sinks<'_>) -> std::io::Result<()> {
        if let Some(mut markdown) = self.markdown.take() {
            write!(sinks.text(), "{}", markdown.finish())?;
        }
        let open = std::mem::replace(&mut self.open, Open::None);
        if open != Open::None {
            writeln!(sinks.to(open), "{}", self.style.reset)?;
        }
        Ok(())
    }

    /// Writes one event; nested runs are indented by depth.
    pub fn event(&mut self, sinks: &mut Sinks<'_>, event: &LoopEvent) -> std::io::Result<()> {
        let Style {
            dim,
            cyan,
            red,
            reset,
        } = self.style;
        let indent = "  ".repeat(event.path.depth());
        let out = sinks.progress();
        match &event.kind {
            EventKind::StreamingChunk(StreamingChunkEvent { delta }) => match delta {
                StreamDelta::BlockStart { block, index } => match block {
                    BlockStart::Thinking => {
                        self.open = Open::Progress;
                        write!(out, "{indent}{dim}thinking ┆ ")?
                    }
                    // The root run's text is the answer; a nested run's is
                    // progress.
                    BlockStart::Text => {
                        self.open = if event.path.is_root() {
                            Open::Text
                        } else {
                            Open::Progress
                        };
                        if event.path.is_root() && !self.style.reset.is_empty() {
                            self.markdown = Some(MarkdownStream::default());
                        }
                        write!(sinks.to(self.open), "{indent}")?
                    }
                    // The call is shown once its arguments are complete
                    // (`ToolStart`).
                    BlockStart::ToolUse { .. } => {
                        self.tool_blocks.insert((event.path.depth(), *index));
                    }
                    BlockStart::RedactedThinking { .. } => {
                        writeln!(out, "{indent}{dim}thinking ┆ [redacted]{reset}")?
                    }
                    BlockStart::Provider { block, .. } => writeln!(
                        out,
                        "{indent}{dim}[{}]{reset}",
                        sanitize(block["type"].as_str().unwrap_or("provider block"))
                    )?,
                },
                StreamDelta::Text { text, .. } => match &mut self.markdown {
                    Some(markdown) if event.path.is_root() => {
                        write!(sinks.text(), "{}", markdown.push(text))?
                    }
                    _ => write!(sinks.to(self.open), "{}", sanitize(text))?,
                },
                StreamDelta::Thinking { thinking, .. } => {
                    // Keep the label's column on every line of the thought.
                    let body = sanitize(thinking).replace('\n', &format!("\n{indent}         ┆ "));
                    write!(out, "{body}")?
                }
                StreamDelta::BlockStop { index } => {
                    if !self.tool_blocks.remove(&(event.path.depth(), *index)) {
                        self.end_line(sinks)?
                    }
                }
                StreamDelta::ToolInput { .. }
                | StreamDelta::Signature { .. }
                | StreamDelta::Citation { .. } => {}
            },
            EventKind::ToolStart(ToolStartEvent {
                tool_use_id,
                name,
                input,
                ..
            }) => {
                self.tool_names.insert(tool_use_id.clone(), name.clone());
                let arguments = shorten(&input.to_string(), ARGUMENT_CHARS);
                writeln!(
                    out,
                    "{indent}{cyan}→ {}{reset} {dim}{}{reset}",
                    sanitize(name),
                    sanitize(&arguments)
                )?
            }
            EventKind::MessageCreated(MessageCreatedEvent { message }) => {
                for block in &message.content {
                    // A call a hook blocks never starts: its result line
                    // needs the name from here.
                    if let ContentBlock::ToolUse(call) = block {
                        self.tool_names
                            .entry(call.id.clone())
                            .or_insert_with(|| call.name.clone());
                    }
                    if let ContentBlock::ToolResult(result) = block {
                        let name = self
                            .tool_names
                            .remove(&result.tool_use_id)
                            .unwrap_or_else(|| "tool".to_owned());
                        self.result(out, &indent, &name, &result.content, result.is_error)?;
                    }
                }
            }
            EventKind::AgentReason(AgentReasonEvent { message, .. })
            | EventKind::AgentObserve(AgentObserveEvent { message, .. }) => {
                writeln!(out, "{indent}{dim}{}{reset}", sanitize(message))?
            }
            EventKind::AgentError(AgentErrorEvent { message, .. }) => {
                writeln!(out, "{indent}{red}{}{reset}", sanitize(message))?
            }
            EventKind::ContextCompacted(ContextCompactedEvent {
                strategy,
                tokens_before,
                tokens_after,
                ..
            }) => writeln!(
                out,
                "{indent}{dim}[context compacted ({}): ~{tokens_before} → ~{tokens_after} tokens]{reset}",
                strategy.name()
            )?,
            EventKind::ContextEdited(edited) => {
                let line = match &edited.edit {
                    ContextEdit::ToolsLoaded { tools } => {
                        format!("tools loaded: {}", sanitize(&tools.join(", ")))
                    }
                    ContextEdit::ResultsShortened { calls } => {
                        format!("{} tool results shortened to their budget", calls.len())
                    }
                    ContextEdit::ResultsCleared {
                        calls,
                        tokens_before,
                        tokens_after,
                        ..
                    } => format!(
                        "{calls} older tool results cleared: ~{tokens_before} → ~{tokens_after} tokens"
                    ),
                    ContextEdit::PassagesRecalled { sources, .. } => {
                        format!("recalled: {}", sanitize(&sources.join(", ")))
                    }
                };
                writeln!(out, "{indent}{dim}[{line}]{reset}")?
            }
            // A hook that let the moment pass says nothing, unless it
            // noted what it did.
            EventKind::Hook(hook)
                if matches!(hook.decision, HookDecision::Pass)
                    && hook.error.is_none()
                    && hook.note.is_none() => {}
            EventKind::Hook(hook) => {
                let HookEvent {
                    hook,
                    point,
                    decision,
                    ignored,
                    error,
                    note,
                    ..
                } = &**hook;
                self.end_line(sinks)?;
                let out = sinks.progress();
                let ignored = if *ignored { " (ignored)" } else { "" };
                let error = match error {
                    Some(error) => format!(" after an error: {}", sanitize(error)),
                    None => String::new(),
                };
                let note = match note {
                    Some(note) => format!(" — {}", sanitize(note)),
                    None => String::new(),
                };
                writeln!(
                    out,
                    "{indent}{dim}[hook {} at {}: {}{ignored}{error}{note}]{reset}",
                    sanitize(hook),
                    point.name(),
                    decision.name()
                )?
            }
            EventKind::Handoff(handoff) => {
                let HandoffEvent {
                    from, to, reason, ..
                } = &**handoff;
                self.end_line(sinks)?;
                let out = sinks.progress();
                let reason = match reason {
                    Some(reason) => format!(": {}", sanitize(reason)),
                    None => String::new(),
                };
                writeln!(
                    out,
                    "{indent}{dim}[handoff {} → {}{reason}]{reset}",
                    sanitize(from),
                    sanitize(to)
                )?
            }
            EventKind::Finished(FinishedEvent { result }) if !event.path.is_root() => {
                writeln!(out, "{indent}{dim}sub-run {}{reset}", result.status.name())?
            }
            EventKind::Finished(FinishedEvent { result }) => {
                self.end_line(sinks)?;
                if !(self.asking && matches!(result.status, LoopStatus::Suspended { .. })) {
                    self.summary(sinks.progress(), result)?
                }
            }
            EventKind::ApprovalRequested(approval) if self.asking => {
                // A rejected call never starts: its result line needs the
                // name from here.
                self.tool_names
                    .insert(approval.tool_use_id.clone(), approval.tool.clone());
                self.end_line(sinks)?
            }
            EventKind::ApprovalRequested(approval) => {
                let ApprovalRequestedEvent {
                    tool_use_id,
                    tool,
                    reason,
                    ..
                } = &**approval;
                self.tool_names.insert(tool_use_id.clone(), tool.clone());
                self.end_line(sinks)?;
                let out = sinks.progress();
                writeln!(
                    out,
                    "{indent}{cyan}? {} waits for approval: {}{reset}",
                    sanitize(tool),
                    sanitize(reason)
                )?
            }
            EventKind::StreamingStart(StreamingStartEvent { .. })
            | EventKind::FirstChunk
            | EventKind::StreamingEnd(StreamingEndEvent { .. })
            | EventKind::TokensConsumed(TokensConsumedEvent { .. })
            | EventKind::PendingToolResult(PendingToolResultEvent { .. })
            | EventKind::ToolEnd(ToolEndEvent { .. })
            | EventKind::ToolBlockUpdate(ToolBlockUpdateEvent { .. })
            | EventKind::AgentStart(AgentStartEvent { .. })
            | EventKind::AgentTurnStart(AgentTurnStartEvent { .. })
            | EventKind::AgentRequestInput(AgentRequestInputEvent { .. })
            | EventKind::AgentToolStart(AgentToolStartEvent { .. })
            | EventKind::AgentToolComplete(AgentToolCompleteEvent { .. })
            | EventKind::AgentCompletion(AgentCompletionEvent { .. }) => {}
        }
        sinks.flush()
    }

    /// `  ✓ name  first line` then up to two more lines, or `✗ name  reason`
    /// in red.
    fn result(
        &self,
        out: &mut dyn Write,
        indent: &str,
        name: &str,
        content: &str,
        is_error: bool,
    ) -> std::io::Result<()> {
        let Style {
            dim,
            cyan,
            red,
            reset,
        } = self.style;
        let (colour, mark) = if is_error {
            (red, "✗")
        } else {
            (cyan, "✓")
        };
        let lines: Vec<&str> = content.lines().filter(|l| !l.trim().is_empty()).collect();
        let first = lines.first().copied().unwrap_or("(no output)");
        // `Blocked by hook `x`: why` (the model's wording) reads as
        // `✗ fs blocked by hook `x`: why`.
        let first = match first.strip_prefix("Blocked by ") {
            Some(rest) if is_error => format!("blocked by {rest}"),
            _ => first.to_owned(),
        };
        let text_colour = if is_error { red } else { dim };
        writeln!(
            out,
            "{indent}  {colour}{mark} {}{reset} {text_colour}{}{reset}",
            sanitize(name),
            sanitize(&shorten(&first, RESULT_LINE_CHARS))
        )?;
        if is_error {
            return Ok(());
        }
        // A single hidden line costs as much room as saying it is hidden.
        let shown = if lines.len() <= RESULT_LINES + 1 {
            lines.len()
        } else {
            RESULT_LINES
        };
        for line in lines.iter().skip(1).take(shown.saturating_sub(1)) {
            writeln!(
                out,
                "{indent}    {dim}{}{reset}",
                sanitize(&shorten(line, RESULT_LINE_CHARS))
            )?;
        }
        if lines.len() > shown {
            writeln!(
                out,
                "{indent}    {dim}… {}{reset}",
                crate::out::counted((lines.len() - shown) as u64, "more line", "more lines")
            )?;
        }
        Ok(())
    }

    pub fn summary(&self, out: &mut dyn Write, result: &LoopResult) -> std::io::Result<()> {
        let Style {
            dim,
            cyan,
            red,
            reset,
        } = self.style;
        match &result.status {
            LoopStatus::Error { error } => {
                writeln!(out, "{red}error: {}{reset}", sanitize(&error.to_string()))?
            }
            LoopStatus::Suspended { pending, .. } => {
                for item in pending {
                    let what = match &item.wait {
                        Wait::Approval { reason } => {
                            format!("approval of {} ({reason})", item.call.name)
                        }
                        Wait::Question { question } => format!("an answer: {question}"),
                    };
                    writeln!(out, "{cyan}waiting for {}{reset}", sanitize(&what))?;
                }
            }
            LoopStatus::Complete {
                return_value: Some(value),
                ..
            } => writeln!(out, "returned: {}", sanitize(&value.to_string()))?,
            LoopStatus::Complete {
                return_value: None,
                output: Some(value),
            } => writeln!(out, "output: {}", sanitize(&value.to_string()))?,
            LoopStatus::Complete {
                return_value: None,
                output: None,
            }
            | LoopStatus::MaxIterations
            | LoopStatus::Cancelled => {}
            LoopStatus::LimitExceeded { limit, .. } => {
                writeln!(out, "limit reached: {}", limit.name())?
            }
        }
        writeln!(
            out,
            "{dim}{} · {}{reset}",
            result.status.name(),
            tokens(&result.tokens)
        )
    }
}

impl View {
    /// An MCP tool's progress line (`Progress 2/5: …`), shown as it
    /// arrives.
    pub fn mcp_progress(
        &self,
        out: &mut impl Write,
        block: &agentloop_types::ToolResultRenderBlock,
    ) -> std::io::Result<()> {
        let Style { dim, reset, .. } = self.style;
        let line = block
            .rendering_groups
            .iter()
            .flat_map(|group| &group.blocks)
            .find_map(|b| match b {
                agentloop_types::RenderingContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            });
        if let Some(line) = line {
            writeln!(
                out,
                "{dim}  {}: {}{reset}",
                sanitize(&block.name),
                sanitize(line)
            )?;
        }
        out.flush()
    }
}

/// `text` cut to `max` characters with an ellipsis.
pub fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// `1,234 in · 56 out · $0.0123`, with a note when the cost is
/// incomplete; no cost when nothing was billed (a demo, a local model).
pub fn tokens(t: &TokenTotals) -> String {
    let mut line = format!(
        "{} in · {} out",
        t.input_tokens + t.cache_read_tokens + t.cache_creation_tokens,
        t.output_tokens
    );
    if t.cache_read_tokens > 0 {
        line.push_str(&format!(" ({} cached)", t.cache_read_tokens));
    }
    if t.cost > 0.0 || t.cost_unreliable {
        line.push_str(&format!(" · ${:.4}", t.cost));
    }
    if t.cost_unreliable {
        line.push_str(" (unknown model price: cost incomplete)");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_cuts_on_characters() {
        assert_eq!(shorten("héllo", 3), "hél…");
        assert_eq!(shorten("hi", 3), "hi");
    }
}
