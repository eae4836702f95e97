//! Benchmark: the loop against the floor. One in-process mock
//! OpenAI-compatible server answers a 200-step run (199 streamed tool calls,
//! then a text answer). The loop runs it through `HttpProvider`; the floor
//! is a bare reqwest loop that sends the same bytes (checked) and reads each
//! response whole, doing nothing else. Both run on a current-thread runtime
//! on this thread while the mock runs on its own thread, so this thread's
//! CPU time is the client's alone. The same run is timed again with 19
//! more tools offered (never called), to show whether the tools a run
//! offers cost it a turn; a last scenario times each step of a 1,010-step
//! run, to show whether a step costs more as the history grows.
//! Prints markdown table rows; `cargo xtask bench` runs it in release mode.
#![allow(clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentloop_engine::{RunDeps, collect, run};
use agentloop_providers::{HttpProvider, ProviderConfig, RetryPolicy};
use agentloop_types::{ApiKind, LoopOptions, LoopStatus, Message, RequestOptions, Tool};
use axum::body::Bytes;
use axum::extract::State;
use serde_json::Value;

#[allow(dead_code)]
#[path = "support/scripted.rs"]
mod scripted;
use scripted::{Echo, FloorBody, Idle, MAX_TOKENS, MODEL, ms, response};
#[path = "support/parsing_floor.rs"]
mod parsing_floor;

const SHORT: usize = 200;
const LONG: usize = 1_010;
const ROUNDS: usize = 21;

/// The mock's script: response `i` of a run of `steps` calls the tool,
/// except the last, which answers in text.
struct Mock {
    responses: Vec<Bytes>,
    next: AtomicUsize,
    arrivals: Mutex<Vec<Instant>>,
    bodies: Mutex<Option<Vec<Bytes>>>,
}

async fn answer(State(mock): State<Arc<Mock>>, body: Bytes) -> impl axum::response::IntoResponse {
    let i = mock.next.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut arrivals) = mock.arrivals.lock() {
        arrivals.push(Instant::now());
    }
    if let Ok(mut bodies) = mock.bodies.lock()
        && let Some(bodies) = bodies.as_mut()
    {
        bodies.push(body);
    }
    let response = mock.responses[i % mock.responses.len()].clone();
    ([("content-type", "text/event-stream")], response)
}

/// Starts the mock on its own thread; returns its base URL.
fn start_mock(mock: Arc<Mock>) -> Result<String, Box<dyn std::error::Error>> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let base = format!("http://{}/v1", listener.local_addr()?);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("the mock's runtime starts");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let app = axum::Router::new()
                .route("/v1/chat/completions", axum::routing::post(answer))
                .with_state(mock);
            axum::serve(listener, app).await.expect("the mock serves");
        });
    });
    Ok(base)
}

/// CPU time of this thread, from the scheduler's count in nanoseconds.
fn thread_cpu() -> Duration {
    let nanos = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Duration::from_nanos(nanos)
}

/// One timed run: wall and CPU time.
struct Timing {
    wall: Duration,
    cpu: Duration,
}

async fn floor_run(
    client: &reqwest::Client,
    url: &str,
    tools: &Value,
    steps: usize,
) -> Result<Timing, Box<dyn std::error::Error>> {
    let (wall, cpu) = (Instant::now(), thread_cpu());
    scripted::floor_run(client, url, tools, steps).await?;
    Ok(Timing {
        wall: wall.elapsed(),
        cpu: thread_cpu() - cpu,
    })
}

async fn parsing_run(
    client: &reqwest::Client,
    url: &str,
    tools: &Value,
    steps: usize,
) -> Result<Timing, Box<dyn std::error::Error>> {
    let (wall, cpu) = (Instant::now(), thread_cpu());
    let conversation = parsing_floor::run(client, url, tools, steps)
        .await
        .map_err(|e| e.to_string())?;
    let timing = Timing {
        wall: wall.elapsed(),
        cpu: thread_cpu() - cpu,
    };
    if conversation.len() != 2 * steps {
        return Err(format!("the parsing floor kept {} messages", conversation.len()).into());
    }
    Ok(timing)
}

async fn loop_run(
    provider: &Arc<HttpProvider>,
    tools: &[Arc<dyn Tool>],
    steps: usize,
) -> Result<Timing, Box<dyn std::error::Error>> {
    let (wall, cpu) = (Instant::now(), thread_cpu());
    let options = LoopOptions {
        request: RequestOptions {
            model: MODEL.into(),
            max_tokens: MAX_TOKENS,
            ..RequestOptions::default()
        },
        max_iterations: steps as u32 + 1,
        ..LoopOptions::default()
    };
    let deps = RunDeps::new(provider.clone()).with_tools(tools.iter().cloned());
    let result = collect(run(options, vec![Message::user_text("u1", "go")], deps)).await;
    let timing = Timing {
        wall: wall.elapsed(),
        cpu: thread_cpu() - cpu,
    };
    match result.status {
        LoopStatus::Complete { .. } if result.messages.len() == 2 * steps => Ok(timing),
        other => Err(format!(
            "the loop ended {} with {} messages",
            other.name(),
            result.messages.len()
        )
        .into()),
    }
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(bench())
}

fn mock(steps: usize) -> Arc<Mock> {
    Arc::new(Mock {
        responses: (0..steps).map(|i| response(i, steps)).collect(),
        next: AtomicUsize::new(0),
        arrivals: Mutex::new(Vec::new()),
        bodies: Mutex::new(None),
    })
}

fn provider(base: &str) -> Result<Arc<HttpProvider>, Box<dyn std::error::Error>> {
    let config = ProviderConfig::for_api(ApiKind::OpenaiChat, "bench-key")
        .with_base_url(base)
        .with_retry(RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        });
    Ok(Arc::new(HttpProvider::new(config)?))
}

/// The tools a scenario offers: the loop's, and the `tools` array the
/// floor sends for them.
struct Offered {
    tools: Vec<Arc<dyn Tool>>,
    json: Value,
}

impl Offered {
    /// `Echo`, then `idle` tools that are never called.
    fn with_idle(idle: usize) -> Self {
        let idle: Vec<Idle> = (1..=idle).map(Idle::new).collect();
        let json = scripted::tools_with(&idle);
        let tools = std::iter::once(Arc::new(Echo) as Arc<dyn Tool>)
            .chain(idle.into_iter().map(|t| Arc::new(t) as Arc<dyn Tool>))
            .collect();
        Self { tools, json }
    }
}

async fn bench() -> Result<(), Box<dyn std::error::Error>> {
    let short = mock(SHORT);
    let base = start_mock(short.clone())?;
    let url = format!("{base}/chat/completions");
    let provider = provider(&base)?;
    let client = reqwest::Client::new();
    let one = Offered::with_idle(0);

    // `floor_bench profile loop|floor|parsing` runs only one side, many
    // times, for a profiler.
    if std::env::args().nth(1).as_deref() == Some("profile") {
        let side = std::env::args().nth(2).unwrap_or_default();
        for _ in 0..50 {
            match side.as_str() {
                "floor" => floor_run(&client, &url, &one.json, SHORT).await?,
                "parsing" => parsing_run(&client, &url, &one.json, SHORT).await?,
                _ => loop_run(&provider, &one.tools, SHORT).await?,
            };
        }
        return Ok(());
    }

    let side = Side {
        provider: &provider,
        client: &client,
        url: &url,
        mock: &short,
    };
    side.by_side(
        "floor: 200-step tool loop over HTTP, openai-chat, in-process mock",
        &one,
    )
    .await?;
    side.by_side(
        "floor: 200-step tool loop over HTTP, openai-chat, in-process mock, 20 tools offered",
        &Offered::with_idle(19),
    )
    .await?;

    // `floor_bench short` stops here (for profiling the short run alone).
    if std::env::args().nth(1).as_deref() == Some("short") {
        return Ok(());
    }
    let long = mock(LONG);
    let base = start_mock(long.clone())?;
    let url = format!("{base}/chat/completions");
    let provider = self::provider(&base)?;
    let label = "floor: per-step time of a 1,010-step run";
    for who in ["floor", "parsing floor", "loop"] {
        long.arrivals.lock().map_err(|_| "poisoned")?.clear();
        match who {
            "floor" => floor_run(&client, &url, &one.json, LONG).await?,
            "parsing floor" => parsing_run(&client, &url, &one.json, LONG).await?,
            _ => loop_run(&provider, &one.tools, LONG).await?,
        };
        let arrivals = long.arrivals.lock().map_err(|_| "poisoned")?.clone();
        let step = |at: usize| {
            median(
                (at - 5..at + 5)
                    .map(|i| arrivals[i + 1] - arrivals[i])
                    .collect(),
            )
        };
        let (early, late) = (step(10), step(1_000));
        println!(
            "| {label} | {who}: step 10 / step 1,000 (median of 10 steps each) | {:.0} µs / {:.0} µs ({:.2}×) |",
            early.as_secs_f64() * 1e6,
            late.as_secs_f64() * 1e6,
            late.as_secs_f64() / early.as_secs_f64()
        );
    }
    Ok(())
}

/// Where both sides of a scenario send their requests.
struct Side<'a> {
    provider: &'a Arc<HttpProvider>,
    client: &'a reqwest::Client,
    url: &'a str,
    mock: &'a Mock,
}

impl Side<'_> {
    /// Checks that both floors send what the loop sends, then times the
    /// three, alternating, and prints the rows of `label`.
    async fn by_side(
        &self,
        label: &str,
        offered: &Offered,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let looped = self
            .sent_by(loop_run(self.provider, &offered.tools, SHORT))
            .await?;
        let parsed = self
            .sent_by(parsing_run(self.client, self.url, &offered.json, SHORT))
            .await?;
        let mut floor = FloorBody::new(&offered.json);
        for (step, (body, parsed)) in looped.iter().zip(&parsed).enumerate() {
            let ours: Value = serde_json::from_slice(body)?;
            for (who, theirs) in [
                ("floor", serde_json::from_slice::<Value>(&floor.bytes())?),
                ("parsing floor", serde_json::from_slice(parsed)?),
            ] {
                if ours != theirs {
                    return Err(format!(
                        "step {step}: the {who}'s body differs from the loop's:\n{theirs}\n{ours}"
                    )
                    .into());
                }
            }
            floor.push_step(step);
        }
        if looped.len() != SHORT || parsed.len() != SHORT {
            return Err("a side sent too few requests".into());
        }

        let (mut floor, mut parsing, mut looped) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            floor.push(floor_run(self.client, self.url, &offered.json, SHORT).await?);
            parsing.push(parsing_run(self.client, self.url, &offered.json, SHORT).await?);
            looped.push(loop_run(self.provider, &offered.tools, SHORT).await?);
        }
        let medians = |timings: &[Timing]| {
            (
                median(timings.iter().map(|t| t.wall).collect()),
                median(timings.iter().map(|t| t.cpu).collect()),
            )
        };
        let (fw, fc) = medians(&floor);
        let (pw, pc) = medians(&parsing);
        let (lw, lc) = medians(&looped);
        println!(
            "| {label} | bare floor / parsing floor / loop: wall, median of {ROUNDS} | {:.1} ms / {:.1} ms / {:.1} ms |",
            ms(fw),
            ms(pw),
            ms(lw)
        );
        println!(
            "| {label} | bare floor / parsing floor / loop: CPU, median of {ROUNDS} | {:.1} ms / {:.1} ms / {:.1} ms |",
            ms(fc),
            ms(pc),
            ms(lc)
        );
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        println!(
            "| {label} | loop / bare floor, loop / parsing floor: wall | {:.2}× / {:.2}× |",
            ratio(lw, fw),
            ratio(lw, pw)
        );
        println!(
            "| {label} | loop / bare floor, loop / parsing floor: CPU | {:.2}× / {:.2}× |",
            ratio(lc, fc),
            ratio(lc, pc)
        );
        Ok(())
    }

    /// The request bodies the mock received while `side` ran.
    async fn sent_by(
        &self,
        side: impl std::future::Future<Output = Result<Timing, Box<dyn std::error::Error>>>,
    ) -> Result<Vec<Bytes>, Box<dyn std::error::Error>> {
        *self.mock.bodies.lock().map_err(|_| "poisoned")? = Some(Vec::new());
        side.await?;
        Ok(self
            .mock
            .bodies
            .lock()
            .map_err(|_| "poisoned")?
            .take()
            .unwrap_or_default())
    }
}
