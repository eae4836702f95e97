//! One QuickJS runtime and context with limits: the sandbox a script runs
//! in. Not `Send`; it lives on one blocking thread.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use agentloop_types::CancellationToken;
use rquickjs::context::{EvalOptions, intrinsic};
use rquickjs::{Context, Ctx, Function, Runtime, Value};

use super::outcome::{ConsoleLine, ConsoleStream, JsError, JsOutcome};

const PRELUDE: &str = include_str!("prelude.js");
const HARDEN: &str = include_str!("harden.js");

/// What [`describe_thrown`] says of an exception that carries no value.
const UNINITIALIZED: &str = "a thrown uninitialized value";

/// Name QuickJS gives evaluated scripts in stack traces.
const SCRIPT_NAME: &str = "eval_script:";

/// Largest interpreter stack limit accepted; it must stay well below the
/// stack of the thread running the sandbox (2 MiB for tokio's blocking
/// threads).
pub const MAX_STACK: usize = 1024 * 1024;

/// Limits of one JavaScript run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsLimits {
    /// Wall-clock time for one call (library loading included).
    pub time: Duration,
    /// Heap limit of the runtime, in bytes.
    pub memory: usize,
    /// Stack limit of the interpreter, in bytes (at most [`MAX_STACK`]).
    pub stack: usize,
    /// Most bytes of console output and of the result kept.
    pub max_output: usize,
}

impl Default for JsLimits {
    fn default() -> Self {
        Self {
            time: Duration::from_secs(5),
            memory: 64 * 1024 * 1024,
            stack: 512 * 1024,
            max_output: 64 * 1024,
        }
    }
}

/// A library file run before the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    /// Its path, for error messages.
    pub name: String,
    /// Its source.
    pub source: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
    Cancelled,
}

/// State shared between the sandbox, its interrupt handler and its console.
#[derive(Default)]
struct Shared {
    deadline: Cell<Option<Instant>>,
    cancel: RefCell<Option<CancellationToken>>,
    stop: Cell<Option<Stop>>,
    console: RefCell<Vec<ConsoleLine>>,
    console_bytes: Cell<usize>,
    console_truncated: Cell<bool>,
}

impl Shared {
    fn should_stop(&self) -> bool {
        if self.stop.get().is_some() {
            return true;
        }
        let cancelled = self
            .cancel
            .borrow()
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled);
        if cancelled {
            self.stop.set(Some(Stop::Cancelled));
        } else if self.deadline.get().is_some_and(|d| Instant::now() >= d) {
            self.stop.set(Some(Stop::Timeout));
        }
        self.stop.get().is_some()
    }
}

/// A thrown value or an engine error, before it is described.
enum Failure<'js> {
    Thrown(Value<'js>),
    Engine(rquickjs::Error),
}

impl From<rquickjs::Error> for Failure<'_> {
    fn from(e: rquickjs::Error) -> Self {
        Self::Engine(e)
    }
}

/// A runtime and context with limits, console capture and an interrupt
/// handler.
pub struct Sandbox {
    // Field order matters: the context must drop before its runtime.
    context: Context,
    runtime: Runtime,
    shared: Rc<Shared>,
    limits: JsLimits,
}

impl Sandbox {
    /// A fresh sandbox.
    pub fn new(limits: JsLimits) -> Result<Self, JsError> {
        let internal = |e: rquickjs::Error| JsError::Internal(e.to_string());
        let runtime = Runtime::new().map_err(internal)?;
        runtime.set_memory_limit(limits.memory);
        runtime.set_max_stack_size(limits.stack.min(MAX_STACK));
        let shared = Rc::new(Shared::default());
        let handler_state = shared.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || handler_state.should_stop())));
        let context = Context::builder()
            .with::<intrinsic::Date>()
            .with::<intrinsic::Eval>()
            .with::<intrinsic::RegExpCompiler>()
            .with::<intrinsic::RegExp>()
            .with::<intrinsic::Json>()
            .with::<intrinsic::Proxy>()
            .with::<intrinsic::MapSet>()
            .with::<intrinsic::TypedArrays>()
            .with::<intrinsic::Promise>()
            .with::<intrinsic::BigInt>()
            .with::<intrinsic::WeakRef>()
            .build(&runtime)
            .map_err(internal)?;
        let sandbox = Self {
            context,
            runtime,
            shared,
            limits,
        };
        sandbox.install_console().map_err(internal)?;
        Ok(sandbox)
    }

    fn install_console(&self) -> rquickjs::Result<()> {
        let shared = self.shared.clone();
        let max = self.limits.max_output;
        self.context.with(|ctx| {
            let emit = Function::new(ctx.clone(), move |stream: i32, text: String| {
                let used = shared.console_bytes.get();
                if used + text.len() > max {
                    shared.console_truncated.set(true);
                    return;
                }
                shared.console_bytes.set(used + text.len());
                let stream = if stream == 0 {
                    ConsoleStream::Log
                } else {
                    ConsoleStream::Error
                };
                shared
                    .console
                    .borrow_mut()
                    .push(ConsoleLine { stream, text });
            })?;
            let setup: Function = ctx.eval(PRELUDE)?;
            setup.call::<_, ()>((emit,))?;
            ctx.eval::<(), _>(HARDEN)
        })
    }

    fn begin(&self, cancel: &CancellationToken) {
        self.shared.stop.set(None);
        *self.shared.cancel.borrow_mut() = Some(cancel.clone());
        self.shared
            .deadline
            .set(Some(Instant::now() + self.limits.time));
        self.shared.console.borrow_mut().clear();
        self.shared.console_bytes.set(0);
        self.shared.console_truncated.set(false);
    }

    fn end(&self, result: Result<Option<String>, JsError>) -> JsOutcome {
        self.shared.deadline.set(None);
        *self.shared.cancel.borrow_mut() = None;
        JsOutcome {
            console: std::mem::take(&mut *self.shared.console.borrow_mut()),
            console_truncated: self.shared.console_truncated.get(),
            result,
        }
    }

    /// Runs library files, in order, within one time limit.
    pub fn load_libraries(
        &self,
        libraries: &[Library],
        cancel: &CancellationToken,
    ) -> Result<(), JsError> {
        self.begin(cancel);
        let result = self.context.with(|ctx| {
            for lib in libraries {
                if let Err(failure) = eval_script(&ctx, &lib.source) {
                    let error = match self.describe(&ctx, failure) {
                        JsError::Thrown {
                            name,
                            message,
                            line,
                            ..
                        } => JsError::Thrown {
                            name,
                            message,
                            line,
                            library: Some(lib.name.clone()),
                        },
                        other => other,
                    };
                    return Err(error);
                }
            }
            Ok(None)
        });
        self.end(result).result.map(|_| ())
    }

    /// Runs `code` and returns the value of its last expression (or of the
    /// promise it evaluates to, once settled) as JSON.
    pub fn run(&self, code: &str, cancel: &CancellationToken) -> JsOutcome {
        self.begin(cancel);
        let result = self.context.with(|ctx| {
            let value = eval_code(&ctx, code, &self.shared)
                .and_then(|v| settle(&ctx, v, &self.shared))
                .map_err(|f| self.describe(&ctx, f))?;
            self.to_json(&ctx, value)
        });
        let result = result.map_err(|e| self.memory_exhausted(e));
        self.end(result)
    }

    /// QuickJS may throw `null`, or no value at all, when it cannot
    /// allocate; such failures (a `null` only with the heap near its limit)
    /// are reported as the memory limit.
    fn memory_exhausted(&self, error: JsError) -> JsError {
        let JsError::Thrown { name, message, .. } = &error else {
            return error;
        };
        if name != "Uncaught" {
            return error;
        }
        // An exception with no value at all is what a failed allocation
        // leaves behind.
        if message == UNINITIALIZED {
            return JsError::MemoryLimit(self.limits.memory);
        }
        if message != "null" {
            return error;
        }
        let used = usize::try_from(self.runtime.memory_usage().malloc_size).unwrap_or(0);
        if used.saturating_mul(4) >= self.limits.memory.saturating_mul(3) {
            JsError::MemoryLimit(self.limits.memory)
        } else {
            error
        }
    }

    fn to_json<'js>(&self, ctx: &Ctx<'js>, value: Value<'js>) -> Result<Option<String>, JsError> {
        // BigInts, which JSON cannot hold, become decimal strings.
        let replacer: Function = ctx
            .eval("(key, value) => typeof value === 'bigint' ? String(value) : value")
            .map_err(|e| JsError::Internal(e.to_string()))?;
        let json = match ctx.json_stringify_replacer(value, replacer) {
            Ok(json) => json,
            Err(rquickjs::Error::Exception) => {
                let thrown = ctx.catch();
                return Err(self.describe(ctx, Failure::Thrown(thrown)));
            }
            Err(e) => return Err(self.describe(ctx, Failure::Engine(e))),
        };
        let Some(json) = json else { return Ok(None) };
        let text = json
            .to_string()
            .map_err(|e| JsError::Internal(e.to_string()))?;
        Ok(Some(cut(text, self.limits.max_output)))
    }

    fn describe<'js>(&self, ctx: &Ctx<'js>, failure: Failure<'js>) -> JsError {
        match self.shared.stop.get() {
            Some(Stop::Timeout) => return JsError::Timeout(self.limits.time),
            Some(Stop::Cancelled) => return JsError::Cancelled,
            None => {}
        }
        let thrown = match failure {
            Failure::Thrown(v) => v,
            Failure::Engine(rquickjs::Error::Allocation) => {
                return JsError::MemoryLimit(self.limits.memory);
            }
            Failure::Engine(rquickjs::Error::Exception) => ctx.catch(),
            Failure::Engine(rquickjs::Error::WouldBlock) => return JsError::NeverSettled,
            Failure::Engine(e) => return JsError::Internal(e.to_string()),
        };
        let error = describe_thrown(ctx, thrown);
        match &error {
            JsError::Thrown { message, .. } if message.contains("out of memory") => {
                JsError::MemoryLimit(self.limits.memory)
            }
            _ => error,
        }
    }
}

fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let total = text.len();
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    text.push_str(&format!("… [result cut at {max} of {total} bytes]"));
    text
}

fn options(promise: bool) -> EvalOptions {
    let mut options = EvalOptions::default();
    options.strict = false;
    options.promise = promise;
    options
}

fn eval_script<'js>(ctx: &Ctx<'js>, source: &str) -> Result<Value<'js>, Failure<'js>> {
    match ctx.eval_with_options::<Value, _>(source, options(false)) {
        Ok(v) => Ok(v),
        Err(rquickjs::Error::Exception) => Err(Failure::Thrown(ctx.catch())),
        Err(e) => Err(Failure::Engine(e)),
    }
}

/// Evaluates user code; code using top-level `await` is evaluated again as
/// an async script, whose completion value is then unwrapped.
fn eval_code<'js>(ctx: &Ctx<'js>, code: &str, shared: &Shared) -> Result<Value<'js>, Failure<'js>> {
    match eval_script(ctx, code) {
        Err(Failure::Thrown(thrown)) if code.contains("await") && is_syntax_error(&thrown) => {
            let promise = match ctx.eval_with_options::<Value, _>(code, options(true)) {
                Ok(v) => v,
                Err(rquickjs::Error::Exception) => return Err(Failure::Thrown(ctx.catch())),
                Err(e) => return Err(Failure::Engine(e)),
            };
            let settled = settle(ctx, promise, shared)?;
            match settled.as_object() {
                Some(obj) => Ok(obj.get::<_, Value>("value")?),
                None => Ok(settled),
            }
        }
        other => other,
    }
}

fn is_syntax_error(thrown: &Value<'_>) -> bool {
    let Some(obj) = thrown.as_object() else {
        return false;
    };
    let name: Option<String> = obj.get("name").ok();
    name.as_deref() == Some("SyntaxError")
}

/// Drives the job queue until a promise settles; other values pass through.
fn settle<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
    shared: &Shared,
) -> Result<Value<'js>, Failure<'js>> {
    let Some(promise) = value.as_promise().cloned() else {
        return Ok(value);
    };
    loop {
        match promise.state() {
            rquickjs::promise::PromiseState::Resolved => {
                return match promise.result::<Value>() {
                    Some(Ok(v)) => Ok(v),
                    Some(Err(rquickjs::Error::Exception)) | None => {
                        Err(Failure::Thrown(ctx.catch()))
                    }
                    Some(Err(e)) => Err(Failure::Engine(e)),
                };
            }
            rquickjs::promise::PromiseState::Rejected => {
                return match promise.result::<Value>() {
                    Some(Err(rquickjs::Error::Exception)) | None => {
                        Err(Failure::Thrown(ctx.catch()))
                    }
                    Some(Err(e)) => Err(Failure::Engine(e)),
                    Some(Ok(v)) => Err(Failure::Thrown(v)),
                };
            }
            rquickjs::promise::PromiseState::Pending => {
                if shared.should_stop() || !ctx.execute_pending_job() {
                    let _ = ctx.catch();
                    return Err(Failure::Engine(rquickjs::Error::WouldBlock));
                }
            }
        }
    }
}

fn describe_thrown<'js>(ctx: &Ctx<'js>, thrown: Value<'js>) -> JsError {
    if let Some(obj) = thrown.as_object().filter(|_| thrown.is_error()) {
        let get = |key: &str| obj.get::<_, Option<String>>(key).ok().flatten();
        let stack = get("stack").unwrap_or_default();
        return JsError::Thrown {
            name: get("name").unwrap_or_else(|| "Error".to_owned()),
            message: get("message").unwrap_or_default(),
            line: line_of(&stack),
            library: None,
        };
    }
    let message = if let Some(s) = thrown.as_string() {
        s.to_string().unwrap_or_default()
    } else {
        match ctx.json_stringify(thrown.clone()) {
            Ok(Some(s)) => s.to_string().unwrap_or_default(),
            _ => {
                let _ = ctx.catch();
                format!("a thrown {} value", thrown.type_name())
            }
        }
    };
    JsError::Thrown {
        name: "Uncaught".to_owned(),
        message,
        line: None,
        library: None,
    }
}

/// The line of the innermost evaluated-script frame in a QuickJS stack.
fn line_of(stack: &str) -> Option<u32> {
    let at = stack.find(SCRIPT_NAME)? + SCRIPT_NAME.len();
    let digits: String = stack[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Whether a plain object has the property (used by tests of the prelude).
#[cfg(test)]
fn has_global(sandbox: &Sandbox, name: &str) -> bool {
    sandbox.context.with(|ctx| {
        let globals: rquickjs::Object = ctx.globals();
        globals.contains_key(name).unwrap_or(false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_code_and_captures_console() {
        let sandbox = Sandbox::new(JsLimits::default()).unwrap();
        let out = sandbox.run(
            "console.log('hi', {a: 1}); console.error('bad'); 1 + 2",
            &CancellationToken::new(),
        );
        assert_eq!(out.result, Ok(Some("3".into())));
        assert_eq!(out.console.len(), 2);
        assert_eq!(out.console[0].text, "hi {\"a\":1}");
        assert_eq!(out.console[1].stream, ConsoleStream::Error);
        assert!(has_global(&sandbox, "console"));
    }

    #[test]
    fn stack_lines() {
        assert_eq!(line_of("    at f (eval_script:3:7)\n"), Some(3));
        assert_eq!(line_of("no frames"), None);
    }
}
