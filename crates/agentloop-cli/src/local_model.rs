//! `--local`: a real model with no key. Reuses the llama.cpp server already
//! answering on the local port, or starts the one `scripts/local-model.sh
//! build` installed (its cache's `current.env` names the server binary, the
//! GGUF model and the model's alias). A server started here keeps running
//! for the next run, detached from this process; its log and pid sit in the
//! cache's `run/` folder.
//!
//! Settings: `AGENTLOOP_LOCAL_MODEL_CACHE` (the cache folder, default
//! `$XDG_CACHE_HOME/agentloop/local-model` or `~/.cache/agentloop/local-model`),
//! `AGENTLOOP_LOCAL_MODEL_PORT` (default 8089).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_types::{
    ApiKind, ModelProvider, ModelRequest, ModelStream, ProviderError, ProviderErrorKind,
};
use futures::StreamExt;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::out::Failure;

/// The port the local server listens on when none is configured.
pub const DEFAULT_PORT: u16 = 8089;

/// How long a starting server may take to load its model.
const READY_WITHIN: Duration = Duration::from_secs(120);

/// A local server ready to answer.
pub struct Local {
    /// Its OpenAI-compatible base URL.
    pub base_url: String,
    /// The model id it answers to.
    pub model: String,
}

/// What a build left in the cache.
struct Installed {
    server: PathBuf,
    model: PathBuf,
    alias: String,
}

fn cache_dir() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = set("AGENTLOOP_LOCAL_MODEL_CACHE") {
        return Some(PathBuf::from(dir));
    }
    let base = set("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("agentloop").join("local-model"))
}

fn port() -> Result<u16, Failure> {
    match std::env::var("AGENTLOOP_LOCAL_MODEL_PORT") {
        Ok(text) if !text.trim().is_empty() => text.trim().parse().map_err(|_| {
            Failure::usage(format!(
                "AGENTLOOP_LOCAL_MODEL_PORT {text:?} is not a port number"
            ))
        }),
        _ => Ok(DEFAULT_PORT),
    }
}

const NOT_INSTALLED: &str = "the local model is not installed: run `scripts/local-model.sh build` \
from a clone of agentloop (it builds llama.cpp's llama-server and fetches the SmolLM2 model \
into the cache, once per machine)";

fn installed(cache: &Path) -> Result<Installed, Failure> {
    let text = std::fs::read_to_string(cache.join("current.env"))
        .map_err(|_| Failure::usage(format!("{NOT_INSTALLED}; looked in {}", cache.display())))?;
    let value = |key: &str| {
        text.lines()
            .rev()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_owned)
    };
    let (Some(server), Some(model), Some(alias)) = (
        value("LLAMA_SERVER"),
        value("LOCAL_MODEL_GGUF"),
        value("LOCAL_MODEL_ALIAS"),
    ) else {
        return Err(Failure::usage(format!(
            "{NOT_INSTALLED}; {} is incomplete",
            cache.join("current.env").display()
        )));
    };
    let installed = Installed {
        server: PathBuf::from(server),
        model: PathBuf::from(model),
        alias,
    };
    if !installed.server.is_file() || !installed.model.is_file() {
        return Err(Failure::usage(format!(
            "{NOT_INSTALLED}; {} or {} is missing",
            installed.server.display(),
            installed.model.display()
        )));
    }
    Ok(installed)
}

/// What `agentloop info` says of the local model: installed (what
/// `--local` runs, on which port) or how to install it.
pub fn describe() -> String {
    let installed = cache_dir()
        .ok_or_else(|| Failure::usage("no cache folder (set HOME or AGENTLOOP_LOCAL_MODEL_CACHE)"))
        .and_then(|cache| installed(&cache));
    match (installed, port()) {
        (Ok(installed), Ok(port)) => format!(
            "{} (`--local` on run, chat, eval, serve and mcp serve: the server on \
             127.0.0.1:{port}, started when none answers there)",
            installed.model.display()
        ),
        (Err(failure), _) | (_, Err(failure)) => failure.to_string(),
    }
}

/// Whether a server on `port` answers `GET /health` with 200.
async fn healthy(port: u16) -> bool {
    let check = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        stream
            .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await?;
        let mut head = [0u8; 16];
        let read = stream.read(&mut head).await?;
        Ok::<bool, std::io::Error>(head[..read].starts_with(b"HTTP/1.1 200"))
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), check).await,
        Ok(Ok(true))
    )
}

/// The flags `--local` sets, of whichever command was given it.
pub struct Flags<'a> {
    pub provider: &'a mut Option<String>,
    pub base_url: &'a mut Option<String>,
    pub model: &'a mut Option<String>,
    /// Whether `--model` named the model (else the local one is used).
    pub model_flag: bool,
    /// The system prompt; `None` for a command whose inputs bring their
    /// own (an eval's cases), which gets no default.
    pub system: Option<&'a mut Option<String>>,
    pub max_tokens: &'a mut Option<u32>,
    /// The tools offered, by name.
    pub tools: &'a [String],
}

/// `--local`, on any command: starts or reuses the local server, points
/// the provider flags at it (the OpenAI-compatible provider at its
/// address, its model unless `--model` named one) and fills the defaults
/// a small model needs (`defaults`).
pub async fn setup(flags: Flags<'_>) -> Result<(), Failure> {
    let local = ensure().await?;
    *flags.provider = Some("openai-compatible".to_owned());
    *flags.base_url = Some(local.base_url);
    if !flags.model_flag {
        *flags.model = Some(local.model);
    }
    match flags.system {
        Some(system) => defaults(system, flags.max_tokens, flags.tools),
        None => {
            flags.max_tokens.get_or_insert(MAX_TOKENS);
        }
    }
    Ok(())
}

/// The local server: the one answering on the port, else one started now.
pub async fn ensure() -> Result<Local, Failure> {
    start_or_reuse(false).await
}

/// [`ensure`]; `again` when a server answered before in this process, so
/// one started now replaces a server that stopped (and the note says so).
async fn start_or_reuse(again: bool) -> Result<Local, Failure> {
    let cache = cache_dir().ok_or_else(|| {
        Failure::usage("--local: no cache folder (set HOME or AGENTLOOP_LOCAL_MODEL_CACHE)")
    })?;
    let installed = installed(&cache)?;
    let port = port()?;
    let local = Local {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        model: installed.alias.clone(),
    };
    if healthy(port).await {
        return Ok(local);
    }
    let run_dir = cache.join("run");
    std::fs::create_dir_all(&run_dir)
        .map_err(|e| format!("cannot create {}: {e}", run_dir.display()))?;
    let log_path = run_dir.join(format!("llama-server-{port}.log"));
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let mut command = Command::new(&installed.server);
    command
        .arg("-m")
        .arg(&installed.model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--alias", &installed.alias])
        // Tool calls need the model's chat template; greedy sampling makes
        // the same question get the same answer.
        .args([
            "--jinja",
            "--temp",
            "0",
            "-c",
            "8192",
            "-np",
            "2",
            "--no-webui",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    // Its own process group: Ctrl-C on this run leaves it serving.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", installed.server.display()))?;
    let pid = child.id();
    let pid_path = run_dir.join(format!("llama-server-{port}.pid"));
    std::fs::write(&pid_path, format!("{pid}\n"))
        .map_err(|e| format!("cannot write {}: {e}", pid_path.display()))?;
    let why = if again {
        "the local model server stopped answering; "
    } else {
        ""
    };
    crate::out::note(format!(
        "{why}starting the local model server on 127.0.0.1:{port} (pid {pid}; it keeps running \
         for later runs; log: {})",
        log_path.display()
    ));
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        if healthy(port).await {
            return Ok(local);
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Failure::Runtime(format!(
                "the local model server exited ({status}) before it was ready; see {}",
                log_path.display()
            )));
        }
        if Instant::now() >= deadline {
            return Err(Failure::Runtime(format!(
                "the local model server was not ready within {} s; see {}",
                READY_WITHIN.as_secs(),
                log_path.display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The tokens one request to the local server may hold: its context of
/// 8192 shared by two slots. Past it, llama-server would cut the prompt's
/// start without saying so, so such a request is refused here instead.
pub const CONTEXT_TOKENS: u32 = 4096;

/// The output cap per turn of `--local` when `--max-tokens` names none:
/// the small model rambles, and each token takes a while on a CPU.
pub const MAX_TOKENS: u32 = 128;

/// The system prompt of `--local` when `--system` names none: a small
/// model keeps calling tools unless told when to stop.
pub const SYSTEM_PROMPT: &str = "You are a helpful assistant. Answer briefly. Call a tool only \
when you need what it returns; once a tool's result holds what you need, stop calling tools and \
answer in one or two sentences.";

/// What the fs tool adds to [`SYSTEM_PROMPT`]: the one call a folder
/// question needs.
const FS_HINT: &str = " To see what is in the folder, call the fs tool once with \
{\"command\": \"view\", \"path\": \"/\"}, then name the files it lists.";

/// Fills `--local`'s defaults where the flags named none: the system
/// prompt for a small model (with the fs call spelled out when `tools`
/// offers fs) and the output cap.
fn defaults(system: &mut Option<String>, max_tokens: &mut Option<u32>, tools: &[String]) {
    if system.is_none() {
        let fs = tools.iter().any(|tool| tool.trim() == "fs");
        *system = Some(format!("{SYSTEM_PROMPT}{}", if fs { FS_HINT } else { "" }));
    }
    max_tokens.get_or_insert(MAX_TOKENS);
}

/// The local server's provider, guarded: before each request the server
/// is checked and started again when it died (one start at a time), so a
/// long eval outlives a crashed server: the request in flight when it died
/// fails, the next ones go to the new server. When a start fails, the
/// requests of the next [`RETRY_START_AFTER`] fail at once with that
/// reason (an eval's remaining cases say why in a moment rather than each
/// waiting for a start), then a start is tried again (a server runs on).
/// A request past [`CONTEXT_TOKENS`] fails saying so.
pub fn guarded(inner: Arc<dyn ModelProvider>) -> Arc<dyn ModelProvider> {
    Arc::new(Guarded {
        inner,
        starting: Arc::new(futures::lock::Mutex::new(None)),
    })
}

/// How long after a failed start requests fail at once with its reason.
pub const RETRY_START_AFTER: Duration = Duration::from_secs(60);

struct Guarded {
    inner: Arc<dyn ModelProvider>,
    /// Held while the server is checked or started; holds why the last
    /// start failed, and when.
    starting: Arc<futures::lock::Mutex<Option<(String, Instant)>>>,
}

impl ModelProvider for Guarded {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let inner = Arc::clone(&self.inner);
        let starting = Arc::clone(&self.starting);
        Box::pin(
            futures::stream::once(async move {
                let estimate = estimated_tokens(&request) + u64::from(request.options.max_tokens);
                if estimate > u64::from(CONTEXT_TOKENS) {
                    return failed(
                        ProviderErrorKind::InvalidRequest,
                        format!(
                            "this request needs about {estimate} tokens (prompt and answer), past \
                         the local model's context of {CONTEXT_TOKENS}, which would cut the \
                         prompt's start: shorten the prompt or the history, lower --max-tokens, \
                         or pass --compaction drop-oldest"
                        ),
                    );
                }
                let ready = {
                    let mut failed_start = starting.lock().await;
                    match failed_start.as_ref() {
                        Some((reason, at)) if at.elapsed() < RETRY_START_AFTER => {
                            Err(reason.clone())
                        }
                        _ => match start_or_reuse(true).await {
                            Ok(local) => {
                                *failed_start = None;
                                Ok(local)
                            }
                            Err(failure) => {
                                let reason = format!(
                                    "the local model server stopped answering and could not be \
                                     started again: {failure}"
                                );
                                *failed_start = Some((reason.clone(), Instant::now()));
                                Err(reason)
                            }
                        },
                    }
                };
                match ready {
                    Ok(_) => inner.stream(request),
                    Err(reason) => failed(ProviderErrorKind::Connection, reason),
                }
            })
            .flatten(),
        )
    }

    fn api(&self) -> Option<ApiKind> {
        self.inner.api()
    }
}

/// A turn that fails at once with `message`.
fn failed(kind: ProviderErrorKind, message: String) -> ModelStream {
    let error = ProviderError::new(kind, message);
    Box::pin(futures::stream::once(async move { Err(error) }))
}

/// The tokens a request's text takes, estimated at four characters a
/// token (the model's tokenizer averages about that on English).
fn estimated_tokens(request: &ModelRequest) -> u64 {
    let mut chars = request
        .options
        .system_prompt
        .as_deref()
        .map_or(0, |p| p.chars().count());
    for message in request.messages.iter() {
        chars += message.text().chars().count();
        chars += message
            .tool_uses()
            .map(|call| call.name.len() + call.input.as_json().len())
            .sum::<usize>();
        chars += message
            .tool_results()
            .map(|result| result.content.chars().count())
            .sum::<usize>();
    }
    for tool in request.tools.iter() {
        chars += tool.name.len()
            + tool.description.chars().count()
            + tool.input_schema.to_string().len();
    }
    (chars as u64).div_ceil(4)
}
