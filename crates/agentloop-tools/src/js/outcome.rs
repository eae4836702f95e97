//! What a JavaScript run produced.

use std::time::Duration;

/// Which console stream a line went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleStream {
    /// `console.log`, `console.info`, `console.debug`.
    Log,
    /// `console.error`, `console.warn`.
    Error,
}

/// One captured console line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleLine {
    /// Where it was written.
    pub stream: ConsoleStream,
    /// What was written (arguments joined by spaces).
    pub text: String,
}

/// Why a JavaScript run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsError {
    /// The code threw.
    #[error("{name}: {message}{}", location(*line, library.as_deref()))]
    Thrown {
        /// The error's `name` (`TypeError`, ...), or `Uncaught` for a non-Error value.
        name: String,
        /// The error's message.
        message: String,
        /// Line in the evaluated code, when known.
        line: Option<u32>,
        /// Where a library file threw while loading.
        library: Option<String>,
    },
    /// The wall-clock limit was reached.
    #[error("Timeout: execution stopped after the {} ms time limit", .0.as_millis())]
    Timeout(Duration),
    /// The memory limit was reached.
    #[error("Memory limit exceeded: the script tried to use more than {} MiB", .0 / (1024 * 1024))]
    MemoryLimit(usize),
    /// The run was cancelled.
    #[error("Cancelled: the run was cancelled")]
    Cancelled,
    /// The awaited promise can never settle.
    #[error("The returned promise never settled (this sandbox has no timers or I/O)")]
    NeverSettled,
    /// The sandbox itself failed.
    #[error("Sandbox error: {0}")]
    Internal(String),
}

fn location(line: Option<u32>, library: Option<&str>) -> String {
    match (line, library) {
        (Some(l), Some(lib)) => format!(" (line {l} of library {lib})"),
        (None, Some(lib)) => format!(" (in library {lib})"),
        (Some(l), None) => format!(" (line {l})"),
        (None, None) => String::new(),
    }
}

/// The result of one run: console output and the value or error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsOutcome {
    /// Console lines, in order.
    pub console: Vec<ConsoleLine>,
    /// Whether console output was cut at the output limit.
    pub console_truncated: bool,
    /// The result as JSON text (`None` for `undefined` and other values
    /// JSON cannot express), or the error.
    pub result: Result<Option<String>, JsError>,
}

impl JsOutcome {
    /// An outcome with no console output.
    pub fn failed(error: JsError) -> Self {
        Self {
            console: Vec::new(),
            console_truncated: false,
            result: Err(error),
        }
    }

    /// The text the model sees.
    pub fn render(&self) -> String {
        let mut out = String::new();
        match &self.result {
            Ok(Some(json)) => out.push_str(&format!("Result: {json}\n")),
            Ok(None) => out.push_str("Result: undefined\n"),
            Err(e) => out.push_str(&format!("Error: {e}\n")),
        }
        if !self.console.is_empty() {
            out.push_str("Console:\n");
            for line in &self.console {
                let tag = match line.stream {
                    ConsoleStream::Log => "",
                    ConsoleStream::Error => "[error] ",
                };
                out.push_str(&format!("{tag}{}\n", line.text));
            }
        }
        if self.console_truncated {
            out.push_str("[Console output cut at the output limit.]\n");
        }
        out
    }
}
