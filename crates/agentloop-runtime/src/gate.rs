//! Holding tool calls until the consumer has recorded them.
//!
//! The engine may run ahead of its consumer by a buffer of events, so a tool
//! could start before the consumer has stored the assistant message that
//! asked for it. Every tool the runtime hands the loop is wrapped in a
//! [`GatedTool`]: its call waits until the consumer has processed the call's
//! `tool_start` event (and so has committed the message and the run's
//! tool-call intent). `tool_start` is emitted before a call is first polled,
//! so the wait always ends while the consumer keeps reading.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use agentloop_types::{
    ApprovalPolicy, Tool, ToolContext, ToolDefinition, ToolOptionSpec, ToolStream,
};
use futures::StreamExt;
use futures::channel::oneshot;
use serde_json::Value;

#[derive(Default)]
struct GateState {
    open: HashSet<String>,
    waiting: HashMap<String, Vec<oneshot::Sender<()>>>,
}

/// Tool-call ids the consumer has released.
#[derive(Clone, Default)]
pub(crate) struct Gate(Arc<Mutex<GateState>>);

impl Gate {
    /// Releases the call `tool_use_id`.
    pub(crate) fn open(&self, tool_use_id: &str) {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        state.open.insert(tool_use_id.to_owned());
        for waiter in state.waiting.remove(tool_use_id).unwrap_or_default() {
            let _ = waiter.send(());
        }
    }

    /// Waits until the call is released.
    async fn wait(&self, tool_use_id: &str) {
        let rx = {
            let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            if state.open.contains(tool_use_id) {
                return;
            }
            let (tx, rx) = oneshot::channel();
            state
                .waiting
                .entry(tool_use_id.to_owned())
                .or_default()
                .push(tx);
            rx
        };
        // The sender sits in the state this gate shares, so it is dropped
        // only after `open` has sent on it.
        let _ = rx.await;
    }
}

/// A tool whose calls wait for the [`Gate`].
pub(crate) struct GatedTool {
    inner: Arc<dyn Tool>,
    gate: Gate,
}

impl GatedTool {
    /// Wraps every tool.
    pub(crate) fn wrap_all(tools: &[Arc<dyn Tool>], gate: &Gate) -> Vec<Arc<dyn Tool>> {
        tools
            .iter()
            .map(|inner| {
                Arc::new(GatedTool {
                    inner: Arc::clone(inner),
                    gate: gate.clone(),
                }) as Arc<dyn Tool>
            })
            .collect()
    }
}

impl Tool for GatedTool {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn input_schema(&self) -> Value {
        self.inner.input_schema()
    }
    fn definition(&self) -> ToolDefinition {
        self.inner.definition()
    }
    fn options(&self) -> Vec<ToolOptionSpec> {
        self.inner.options()
    }
    fn runs_alone(&self) -> bool {
        self.inner.runs_alone()
    }
    fn approval(&self) -> ApprovalPolicy {
        self.inner.approval()
    }
    fn is_skill(&self) -> bool {
        self.inner.is_skill()
    }
    fn runs_subagent(&self) -> bool {
        self.inner.runs_subagent()
    }
    fn may_write(&self, input: &Value) -> bool {
        self.inner.may_write(input)
    }
    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        let gate = self.gate.clone();
        let inner = Arc::clone(&self.inner);
        let id = context.tool_use_id.clone();
        Box::pin(
            futures::stream::once(async move {
                gate.wait(&id).await;
                inner.execute(input, context)
            })
            .flatten(),
        )
    }
}

#[cfg(test)]
mod approval_tests {
    use super::*;

    /// A tool whose every call asks and starts a sub-agent, with a schema
    /// it shares.
    struct Asking(Arc<Value>);

    impl Tool for Asking {
        fn name(&self) -> &str {
            "asking"
        }
        fn description(&self) -> &str {
            "asks"
        }
        fn input_schema(&self) -> Value {
            Value::clone(&self.0)
        }
        fn definition(&self) -> ToolDefinition {
            ToolDefinition {
                name: "asking".into(),
                description: "asks".into(),
                input_schema: self.0.clone(),
            }
        }
        fn approval(&self) -> ApprovalPolicy {
            ApprovalPolicy::Always
        }
        fn runs_subagent(&self) -> bool {
            true
        }
        fn execute(self: Arc<Self>, _input: Value, _context: ToolContext) -> ToolStream {
            agentloop_types::single_result(async { agentloop_types::ToolResult::ok("done") })
        }
    }

    #[test]
    fn a_gated_tool_keeps_the_approval_policy_schema_and_sub_agent_mark_of_the_tool_it_wraps() {
        let schema = Arc::new(serde_json::json!({"type": "object"}));
        let asking: Arc<dyn Tool> = Arc::new(Asking(schema.clone()));
        let gated = GatedTool::wrap_all(&[asking], &Gate::default());
        assert_eq!(gated[0].approval(), ApprovalPolicy::Always);
        assert!(gated[0].runs_subagent());
        assert!(Arc::ptr_eq(&gated[0].definition().input_schema, &schema));
    }
}
