//! Tools whose arguments and output are Rust types.
//!
//! A [`TypedTool`] names its argument type; the input schema is generated
//! from it, the model's JSON is parsed into it before `call` runs, and the
//! output is serialised for the model. Invalid arguments never reach `call`:
//! the model gets an error result naming the problem and can try again.

use std::future::Future;
use std::sync::Arc;

use agentloop_types::{Tool, ToolContext, ToolDefinition, ToolResult, ToolStream, single_result};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a typed tool call failed; the model sees the message as an error
/// result. Any `std::error::Error` converts into it, so `?` works in
/// [`TypedTool::call`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(String);

impl ToolError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }

    /// The message the model sees.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

// `ToolError` deliberately does not implement `std::error::Error`: this
// blanket conversion would then overlap with `From<T> for T`.
impl<E: std::error::Error> From<E> for ToolError {
    fn from(error: E) -> Self {
        Self(error.to_string())
    }
}

/// A tool with typed arguments and output. Offer it to an
/// [`Agent`](crate::Agent) as is (`builder.tool(MyTool)`), or turn it into a
/// [`Tool`] for the engine with [`Typed`].
///
/// For progress events, options, suspension or returning a value from the
/// run, implement [`Tool`] directly.
pub trait TypedTool: Send + Sync + 'static {
    /// Name the model calls it by.
    const NAME: &'static str;
    /// What it does, for the model.
    const DESCRIPTION: &'static str;
    /// Whether a call must not run at the same time as other calls of its
    /// turn (see [`Tool::runs_alone`]).
    const RUNS_ALONE: bool = false;
    /// Whether a call starts a sub-agent, so the run's `before_subagent`
    /// and `after_subagent` hooks see it (see [`Tool::runs_subagent`]).
    const RUNS_SUBAGENT: bool = false;

    /// The arguments; its JSON schema is what the model is shown.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// What a call returns: a string is shown to the model as is, anything
    /// else as compact JSON.
    type Output: Serialize;

    /// Runs one call with parsed arguments.
    fn call(
        &self,
        args: Self::Args,
        context: &ToolContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// A [`TypedTool`] as a [`Tool`].
///
/// A wrapper rather than `impl<T: TypedTool> Tool for T`: Rust's orphan
/// rule forbids a blanket impl of a trait from another crate (`Tool` lives
/// in `agentloop-types`, which cannot depend on `schemars`). Every typed
/// tool gets the impl through this one wrapper; the builder applies it for
/// you.
#[derive(Debug, Clone, Default)]
pub struct Typed<T>(pub T);

impl<T: TypedTool> Typed<T> {
    /// The tool, shared, ready for `RunDeps::with_tools`.
    pub fn shared(tool: T) -> Arc<dyn Tool> {
        Arc::new(Self(tool))
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        T::DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        Value::clone(&agentloop_tools::schema::shared_input_schema::<T::Args>())
    }

    fn definition(&self) -> ToolDefinition {
        agentloop_tools::schema::definition_of::<T::Args>(self)
    }

    fn runs_alone(&self) -> bool {
        T::RUNS_ALONE
    }

    fn runs_subagent(&self) -> bool {
        T::RUNS_SUBAGENT
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        single_result(async move {
            let args = match serde_json::from_value::<T::Args>(input) {
                Ok(args) => args,
                Err(e) => {
                    return ToolResult::error(format!("Invalid arguments for {}: {e}", T::NAME));
                }
            };
            match self.0.call(args, &context).await {
                Ok(output) => output_result::<T>(&output),
                Err(e) => ToolResult::error(e.0),
            }
        })
    }
}

fn output_result<T: TypedTool>(output: &T::Output) -> ToolResult {
    match serde_json::to_value(output) {
        Ok(Value::String(text)) => ToolResult::ok(text),
        Ok(value) => ToolResult::ok(value.to_string()),
        Err(e) => ToolResult::error(format!(
            "{} produced an output that cannot be serialised: {e}",
            T::NAME
        )),
    }
}
