//! Benchmark: a whole loop run (HTTP, SSE parsing, assembly, events) next
//! to a raw HTTP read of the same stream from the same local server, so the
//! figure is the loop's overhead as a ratio. Prints markdown table rows;
//! `cargo xtask bench` runs it in release mode.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_engine::{RunDeps, collect, run};
use agentloop_providers::{HttpProvider, ProviderConfig, RetryPolicy, sse_from_json_lines};
use agentloop_types::{ApiKind, LoopOptions, LoopStatus, Message, RequestOptions};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const RECORDINGS: &[(ApiKind, &str)] = &[
    (
        ApiKind::AnthropicMessages,
        "anthropic-compaction.1.chunks.txt",
    ),
    (ApiKind::OpenaiChat, "openai-text.chunks.txt"),
    (
        ApiKind::OpenaiResponses,
        "openai-web-search-tool.1.chunks.txt",
    ),
];
const RUNS: u32 = 200;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(bench())
}

async fn bench() -> Result<(), Box<dyn std::error::Error>> {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/agentloop-providers/tests/fixtures");
    for (api, name) in RECORDINGS {
        let recording = std::fs::read_to_string(fixtures.join(name))?;
        let body = sse_from_json_lines(*api, &recording);
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("content-type", "text/event-stream")
                    .set_body_string(body.clone()),
            )
            .mount(&server)
            .await;
        let base_url = format!("{}/v1", server.uri());
        let config = ProviderConfig::for_api(*api, "bench-key")
            .with_base_url(base_url.clone())
            .with_retry(RetryPolicy {
                max_retries: 0,
                ..RetryPolicy::default()
            });
        let endpoint = config.endpoint();
        let provider = Arc::new(HttpProvider::new(config)?);
        let client = reqwest::Client::new();

        let raw = time_runs(|| {
            let client = client.clone();
            let endpoint = endpoint.clone();
            async move {
                let response = client.post(endpoint).body("{}").send().await?;
                let bytes = response.bytes().await?;
                Ok::<usize, reqwest::Error>(bytes.len())
            }
        })
        .await?;
        let looped = time_runs(|| {
            let deps = RunDeps::new(provider.clone());
            let options = LoopOptions {
                request: RequestOptions {
                    model: "bench".into(),
                    ..RequestOptions::default()
                },
                ..LoopOptions::default()
            };
            async move {
                let result =
                    collect(run(options, vec![Message::user_text("u1", "go")], deps)).await;
                match result.status {
                    LoopStatus::Complete { .. } => Ok(result.messages.len()),
                    other => Err(format!("the loop ended {}", other.name())),
                }
            }
        })
        .await?;
        let label = format!(
            "loop over HTTP: {} ({name}, {} KB)",
            api.as_str(),
            body.len() / 1000
        );
        println!("| {label} | raw HTTP read, mean | {:.2} ms |", ms(raw));
        println!("| {label} | loop run, mean | {:.2} ms |", ms(looped));
        println!(
            "| {label} | loop time / raw HTTP time | {:.2}× |",
            looped.as_secs_f64() / raw.as_secs_f64()
        );
    }
    Ok(())
}

/// Mean time of `RUNS` sequential runs (after 10 warm-up runs).
async fn time_runs<F, Fut, T, E>(mut make: F) -> Result<Duration, Box<dyn std::error::Error>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    for _ in 0..10 {
        make().await.map_err(|e| e.to_string())?;
    }
    let start = Instant::now();
    for _ in 0..RUNS {
        make().await.map_err(|e| e.to_string())?;
    }
    Ok(start.elapsed() / RUNS)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
