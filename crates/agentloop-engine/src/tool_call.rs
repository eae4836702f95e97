//! One tool call as a well-behaved stream: it starts, reports progress and
//! yields exactly one result, whatever the tool does — panics, ends without
//! a result, or overruns its time limit.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use agentloop_types::{
    CancellationToken, Tool, ToolContext, ToolOutput, ToolResult, ToolStream, ToolStreamEvent,
    ToolUseBlock,
};
use futures::{Future, Stream, StreamExt};
use serde_json::{Map, Value};

/// What a call stream yields.
pub(crate) enum CallItem {
    /// First item: the call starts now.
    Started,
    /// Progress.
    Event(ToolStreamEvent),
    /// Last item.
    Done(ToolResult),
}

/// Stream of one call; see the module docs.
pub(crate) struct CallStream {
    inner: Option<ToolStream>,
    started: bool,
    tool_name: String,
    timeout: Option<Duration>,
    /// Armed when the call starts (first polled), not when it is created:
    /// calls queued behind `tool_concurrency` get their whole time too.
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    cancel: CancellationToken,
}

impl CallStream {
    /// Starts `call` on `tool` (`None` when no offered tool has its name).
    pub(crate) fn start(
        call: &ToolUseBlock,
        tool: Option<&Arc<dyn Tool>>,
        available: &[String],
        configured: Option<&Map<String, Value>>,
        mut context: ToolContext,
        timeout: Option<Duration>,
    ) -> Self {
        let cancel = context.cancel.clone();
        let immediate = |result: ToolResult| -> ToolStream {
            Box::pin(futures::stream::once(
                async move { ToolOutput::Done(result) },
            ))
        };
        let inner = match tool {
            None => immediate(ToolResult::error(format!(
                "Unknown tool: {}. Available tools: {}.",
                call.name,
                if available.is_empty() {
                    "none".to_owned()
                } else {
                    available.join(", ")
                }
            ))),
            Some(_) if !call.input.is_object() => immediate(ToolResult::error(
                invalid_input_message(&call.name, &call.input),
            )),
            Some(tool) => match resolve_options(tool.as_ref(), configured) {
                Err(message) => immediate(ToolResult::error(message)),
                Ok(options) => {
                    context.options = options;
                    let tool = Arc::clone(tool);
                    let input = call.input.clone();
                    match catch_unwind(AssertUnwindSafe(|| tool.execute(input, context))) {
                        Ok(stream) => stream,
                        Err(panic) => immediate(panicked(&call.name, &panic)),
                    }
                }
            },
        };
        Self {
            inner: Some(inner),
            started: false,
            tool_name: call.name.clone(),
            timeout,
            deadline: None,
            cancel,
        }
    }

    fn finish(&mut self, result: ToolResult) -> Poll<Option<CallItem>> {
        self.inner = None;
        Poll::Ready(Some(CallItem::Done(result)))
    }
}

impl Stream for CallStream {
    type Item = CallItem;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<CallItem>> {
        if !self.started {
            self.started = true;
            self.deadline = self.timeout.map(|t| Box::pin(tokio::time::sleep(t)));
            return Poll::Ready(Some(CallItem::Started));
        }
        if self.inner.is_none() {
            return Poll::Ready(None);
        }
        if let (Some(limit), Some(sleep)) = (self.timeout, self.deadline.as_mut())
            && sleep.as_mut().poll(cx).is_ready()
        {
            self.cancel.cancel();
            let name = self.tool_name.clone();
            return self.finish(ToolResult::error(format!(
                "Tool {name} timed out after {} ms.",
                limit.as_millis()
            )));
        }
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match catch_unwind(AssertUnwindSafe(|| inner.poll_next_unpin(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(Some(ToolOutput::Event(event)))) => {
                Poll::Ready(Some(CallItem::Event(event)))
            }
            Ok(Poll::Ready(Some(ToolOutput::Done(result)))) => self.finish(result),
            Ok(Poll::Ready(None)) => {
                let message = format!("Tool {} ended without a result.", self.tool_name);
                self.finish(ToolResult::error(message))
            }
            Err(panic) => {
                let result = panicked(&self.tool_name, &panic);
                self.finish(result)
            }
        }
    }
}

fn panicked(name: &str, panic: &Box<dyn std::any::Any + Send>) -> ToolResult {
    ToolResult::error(format!(
        "Tool {name} failed unexpectedly: {}",
        crate::panic_message(panic)
    ))
}

fn invalid_input_message(name: &str, input: &Value) -> String {
    match input {
        Value::String(raw) => {
            let reason = serde_json::from_str::<Value>(raw)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_else(|| "not a JSON object".to_owned());
            format!(
                "Invalid arguments for {name}: the arguments were not valid JSON ({reason}). \
                 The output may have been cut off; call the tool again with complete arguments."
            )
        }
        other => format!(
            "Invalid arguments for {name}: expected a JSON object, got {}.",
            json_type(other)
        ),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The tool's option values: its declared defaults overlaid with the
/// configured values, each checked against its declared kind.
fn resolve_options(
    tool: &dyn Tool,
    configured: Option<&Map<String, Value>>,
) -> Result<Map<String, Value>, String> {
    use agentloop_types::ToolOptionKind;
    let specs = tool.options();
    let mut options = Map::new();
    for spec in &specs {
        options.insert(spec.key.clone(), spec.default.clone());
    }
    for (key, value) in configured.into_iter().flatten() {
        let Some(spec) = specs.iter().find(|s| &s.key == key) else {
            return Err(format!(
                "Option {key} is not an option of tool {}.",
                tool.name()
            ));
        };
        let fits = match spec.kind {
            ToolOptionKind::Boolean => value.is_boolean(),
            ToolOptionKind::Longtext | ToolOptionKind::Model => value.is_string(),
        };
        if !fits {
            return Err(format!(
                "Option {key} of tool {} must be a {:?} value, got {}.",
                tool.name(),
                spec.kind,
                json_type(value)
            ));
        }
        options.insert(key.clone(), value.clone());
    }
    Ok(options)
}
