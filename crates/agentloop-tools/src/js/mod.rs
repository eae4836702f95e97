//! The js tool: sandboxed JavaScript on QuickJS.
//!
//! Each call gets a fresh runtime and context (unless the `keep_state`
//! option keeps one per chat) with a wall-clock limit enforced by the
//! interrupt handler, a heap limit and a stack limit. The sandbox has only
//! the ECMAScript built-ins and a captured `console`: no modules, files,
//! network, processes, timers or environment. The project's library files
//! (`/lib/*.js` in the VFS) run first.

mod outcome;
mod sandbox;
mod session;
mod watchdog;

use std::sync::Arc;

use agentloop_types::{
    ApprovalPolicy, CancellationToken, EntryKind, Tool, ToolContext, ToolDefinition,
    ToolOptionSpec, ToolResult, ToolStream, Vfs, single_result,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub use outcome::{ConsoleLine, ConsoleStream, JsError, JsOutcome};
pub use sandbox::{JsLimits, Library, MAX_STACK, Sandbox};
pub use session::MAX_SESSIONS;

use crate::options::{bool_option, boolean_option, resolve_options};
use crate::schema::{definition_of, parse, shared_input_schema};

/// Option key: keep one context per chat, so globals survive between calls.
pub const KEEP_STATE: &str = "keep_state";
/// Option key: run the project's library files before the code.
pub const LOAD_LIBRARY: &str = "load_library";
/// Default directory of library files in the VFS.
pub const LIBRARY_DIR: &str = "/lib";

const DESCRIPTION: &str = "Run JavaScript in a sandbox and get the value of the last expression \
(or of the awaited promise) as JSON, plus anything written with console.log/console.error. \
Top-level await works. Only standard ECMAScript built-ins are available: no require, import, \
fetch, timers, files, network or process. The project's library functions are already loaded. \
Calls are limited in time and memory.";

/// Input of the js tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct JsInput {
    /// JavaScript source to run. Its last expression is the result.
    pub code: String,
}

/// The js tool.
pub struct JsTool {
    vfs: Option<Arc<dyn Vfs>>,
    library_dir: String,
    limits: JsLimits,
    sessions: session::Sessions,
}

impl JsTool {
    /// A js tool loading its library from `vfs` under [`LIBRARY_DIR`].
    pub fn new(vfs: Arc<dyn Vfs>) -> Self {
        Self {
            vfs: Some(vfs),
            library_dir: LIBRARY_DIR.to_owned(),
            limits: JsLimits::default(),
            sessions: session::Sessions::default(),
        }
    }

    /// A js tool with no library.
    pub fn without_library() -> Self {
        Self {
            vfs: None,
            library_dir: LIBRARY_DIR.to_owned(),
            limits: JsLimits::default(),
            sessions: session::Sessions::default(),
        }
    }

    /// Sets the limits.
    pub fn with_limits(mut self, limits: JsLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the VFS directory whose `*.js` files are the library.
    pub fn with_library_dir(mut self, dir: impl Into<String>) -> Self {
        self.library_dir = dir.into();
        self
    }

    /// Number of kept-state sessions alive.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Drops the kept state of `key` (a chat id, or a run id).
    pub fn reset_session(&self, key: &str) {
        self.sessions.reset(key);
    }

    /// Reads the library files, sorted by path.
    pub async fn libraries(&self) -> Result<Vec<Library>, String> {
        let Some(vfs) = &self.vfs else {
            return Ok(Vec::new());
        };
        let dir = &self.library_dir;
        match vfs.stat(dir).await {
            Ok(Some(m)) if m.is_dir() => {}
            Ok(_) => return Ok(Vec::new()),
            Err(e) => return Err(format!("cannot read the library directory {dir}: {e}")),
        }
        let entries = vfs
            .list(dir)
            .await
            .map_err(|e| format!("cannot list the library directory {dir}: {e}"))?;
        let mut libraries = Vec::new();
        for entry in entries {
            if entry.kind != EntryKind::File || !entry.name.ends_with(".js") {
                continue;
            }
            let source = vfs
                .read_to_string(&entry.path)
                .await
                .map_err(|e| format!("cannot read library file {}: {e}", entry.path))?;
            libraries.push(Library {
                name: entry.path,
                source,
            });
        }
        Ok(libraries)
    }

    /// Runs `code` with these (resolved) options, in a fresh sandbox or in
    /// the kept session `session_key`.
    pub async fn run_code(
        &self,
        code: String,
        keep_state: bool,
        load_library: bool,
        session_key: &str,
        cancel: CancellationToken,
    ) -> JsOutcome {
        let libraries = if load_library {
            match self.libraries().await {
                Ok(l) => l,
                Err(e) => return JsOutcome::failed(JsError::Internal(e)),
            }
        } else {
            Vec::new()
        };
        let limits = self.limits;
        if keep_state {
            return self
                .sessions
                .run(session_key, limits, libraries, code, cancel)
                .await;
        }
        let token = cancel.clone();
        let job = tokio::task::spawn_blocking(move || {
            let sandbox = match Sandbox::new(limits) {
                Ok(s) => s,
                Err(e) => return JsOutcome::failed(e),
            };
            if let Err(e) = sandbox.load_libraries(&libraries, &token) {
                return JsOutcome::failed(e);
            }
            sandbox.run(&code, &token)
        });
        match watchdog::guard(job, limits.time, &cancel).await {
            watchdog::Guarded::Done(Ok(outcome)) => outcome,
            watchdog::Guarded::Done(Err(e)) => {
                JsOutcome::failed(JsError::Internal(format!("the sandbox thread failed: {e}")))
            }
            watchdog::Guarded::Abandoned(e) => JsOutcome::failed(e),
        }
    }

    /// Runs one call.
    pub async fn run(&self, input: Value, context: &ToolContext) -> ToolResult {
        let options = match resolve_options(&self.options(), &context.options) {
            Ok(o) => o,
            Err(e) => return ToolResult::error(format!("Invalid options: {e}")),
        };
        let input: JsInput = match parse(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let key = context.chat_id.as_deref().unwrap_or(&context.run_id);
        let outcome = self
            .run_code(
                input.code,
                bool_option(&options, KEEP_STATE),
                bool_option(&options, LOAD_LIBRARY),
                key,
                context.cancel.clone(),
            )
            .await;
        let text = outcome.render();
        if outcome.result.is_err() {
            ToolResult::error(text)
        } else {
            ToolResult::ok(text)
        }
    }
}

impl Tool for JsTool {
    fn name(&self) -> &str {
        "javascript"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        Value::clone(&shared_input_schema::<JsInput>())
    }

    fn definition(&self) -> ToolDefinition {
        definition_of::<JsInput>(self)
    }

    /// Code can do anything the sandbox allows: every call is asked.
    fn approval(&self) -> ApprovalPolicy {
        ApprovalPolicy::Always
    }

    /// Its `fs` object writes to the project folder.
    fn may_write(&self, _input: &Value) -> bool {
        true
    }

    fn options(&self) -> Vec<ToolOptionSpec> {
        vec![
            boolean_option(
                KEEP_STATE,
                false,
                "Keep globals between calls of the same chat instead of a fresh context per call.",
            ),
            boolean_option(
                LOAD_LIBRARY,
                true,
                "Run the project's library files (/lib/*.js) before the code.",
            ),
        ]
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        single_result(async move { self.run(input, &context).await })
    }
}
