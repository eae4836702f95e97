//! Prometheus metrics of one instance, served as text by [`router`] on a
//! listener of its own (`agentloop serve --metrics-bind`), so they need no
//! token and are not exposed where the API is.
//!
//! Run metrics are read off the events each run stores ([`RunMetrics`]),
//! so they count exactly what the event log holds.

use agentloop_types::{
    AgentCompletionEvent, AgentErrorEvent, AgentObserveEvent, AgentReasonEvent,
    AgentRequestInputEvent, AgentStartEvent, AgentToolCompleteEvent, AgentToolStartEvent,
    AgentTurnStartEvent, FinishedEvent, MessageCreatedEvent, PendingToolResultEvent,
    StreamingChunkEvent, StreamingEndEvent, StreamingStartEvent, TokensConsumedEvent,
    ToolBlockUpdateEvent, ToolEndEvent, ToolStartEvent,
};
use agentloop_types::{ApiKind, ContextCompactedEvent};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use agentloop_types::{EventKind, LoopError, LoopEvent, LoopStatus};
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels naming a model.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModelLabels {
    /// The provider's wire protocol (`anthropic-messages`, ...).
    pub provider: String,
    /// The model id.
    pub model: String,
}

/// Labels of token counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TokenLabels {
    /// The provider's wire protocol.
    pub provider: String,
    /// The model id.
    pub model: String,
    /// `input`, `output`, `cache_read` or `cache_write`.
    pub kind: &'static str,
}

/// Labels naming whom a run spends for.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OwnerLabels {
    /// The user owning the run's project.
    pub user: String,
    /// The run's project.
    pub project: String,
}

/// Labels naming a tool.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolLabels {
    /// The tool's name.
    pub tool: String,
}

/// Labels of finished runs.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabels {
    /// The agent run's final status.
    pub status: &'static str,
}

/// Labels of HTTP requests.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    /// The method.
    pub method: String,
    /// The route template (`/api/tasks/{task_id}`), never the raw path.
    pub route: String,
    /// The answer's status code.
    pub status: u16,
}

fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

/// Every metric of the instance.
pub struct Metrics {
    registry: Registry,
    /// Agent runs executing on this instance (set when scraped).
    pub active_runs: Gauge,
    /// Agent runs ended here, by final status.
    pub runs_finished: Family<StatusLabels, Counter>,
    /// Model turn latency, from request to the end of its stream.
    pub model_turn_seconds: Family<ModelLabels, Histogram, fn() -> Histogram>,
    /// Runs that ended with a provider or model-stream error.
    pub model_errors: Family<ModelLabels, Counter>,
    /// Tokens, by model and kind.
    pub tokens: Family<TokenLabels, Counter>,
    /// Cost in US dollars, by model.
    pub cost_usd: Family<ModelLabels, Counter<f64, AtomicU64>>,
    /// Cost in US dollars of the model calls made here, by user and
    /// project.
    pub owner_cost_usd: Family<OwnerLabels, Counter<f64, AtomicU64>>,
    /// Tool call latency.
    pub tool_call_seconds: Family<ToolLabels, Histogram, fn() -> Histogram>,
    /// Tool calls that ended with an error result.
    pub tool_errors: Family<ToolLabels, Counter>,
    /// Open SSE event streams.
    pub sse_clients: Gauge,
    /// Runs this instance took over after their lease expired.
    pub lease_takeovers: Counter,
    /// HTTP requests answered, by method, route and status.
    pub http_requests: Family<HttpLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut metrics = Self {
            registry: Registry::with_prefix("agentloop"),
            active_runs: Gauge::default(),
            runs_finished: Family::default(),
            model_turn_seconds: Family::new_with_constructor(seconds_histogram),
            model_errors: Family::default(),
            tokens: Family::default(),
            cost_usd: Family::default(),
            owner_cost_usd: Family::default(),
            tool_call_seconds: Family::new_with_constructor(seconds_histogram),
            tool_errors: Family::default(),
            sse_clients: Gauge::default(),
            lease_takeovers: Counter::default(),
            http_requests: Family::default(),
        };
        let registry = &mut metrics.registry;
        registry.register(
            "active_runs",
            "Agent runs executing on this instance",
            metrics.active_runs.clone(),
        );
        registry.register(
            "runs_finished",
            "Agent runs ended on this instance, by final status",
            metrics.runs_finished.clone(),
        );
        registry.register(
            "model_turn_seconds",
            "Model turn latency from request to end of stream",
            metrics.model_turn_seconds.clone(),
        );
        registry.register(
            "model_errors",
            "Runs ended by a provider or model-stream error",
            metrics.model_errors.clone(),
        );
        registry.register("tokens", "Tokens by model and kind", metrics.tokens.clone());
        registry.register(
            "cost_usd",
            "Cost in US dollars by model",
            metrics.cost_usd.clone(),
        );
        registry.register(
            "owner_cost_usd",
            "Cost in US dollars by user and project",
            metrics.owner_cost_usd.clone(),
        );
        registry.register(
            "tool_call_seconds",
            "Tool call latency",
            metrics.tool_call_seconds.clone(),
        );
        registry.register(
            "tool_errors",
            "Tool calls that ended with an error result",
            metrics.tool_errors.clone(),
        );
        registry.register(
            "sse_clients",
            "Open SSE event streams",
            metrics.sse_clients.clone(),
        );
        registry.register(
            "lease_takeovers",
            "Runs taken over after their lease expired",
            metrics.lease_takeovers.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests answered",
            metrics.http_requests.clone(),
        );
        metrics
    }
}

impl Metrics {
    /// The metrics in the Prometheus text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// What the metrics listener scrapes: the metrics, and how many runs
/// execute here (the instance's state converts into it).
#[derive(Clone)]
pub struct Scraped {
    metrics: Arc<Metrics>,
    active_runs: Arc<dyn Fn() -> usize + Send + Sync>,
}

impl Scraped {
    /// `metrics`, with `active_runs` read at each scrape.
    pub fn new(
        metrics: Arc<Metrics>,
        active_runs: impl Fn() -> usize + Send + Sync + 'static,
    ) -> Self {
        Self {
            metrics,
            active_runs: Arc::new(active_runs),
        }
    }
}

/// The router of the metrics listener: `GET /metrics`.
pub fn router(source: impl Into<Scraped>) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(source.into())
}

async fn scrape(State(source): State<Scraped>) -> impl IntoResponse {
    let active = i64::try_from((source.active_runs)()).unwrap_or(i64::MAX);
    source.metrics.active_runs.set(active);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        source.metrics.encode(),
    )
}

/// Reads one run's events into the metrics: model turn latency from
/// `streaming_start` to `streaming_end`, tool latency from `tool_start` to
/// `tool_end`, tokens and cost, and model errors from the terminal result.
pub struct RunMetrics {
    metrics: Arc<Metrics>,
    model: ModelLabels,
    turns: Mutex<HashMap<Vec<String>, Instant>>,
    tools: Mutex<HashMap<String, Instant>>,
}

impl RunMetrics {
    /// Metrics of a run calling `model` over the wire API `api`; the
    /// `provider` label is that API's name, `none` for a provider that
    /// speaks none (a scripted one).
    pub fn new(metrics: Arc<Metrics>, api: Option<ApiKind>, model: &str) -> Self {
        Self {
            metrics,
            model: ModelLabels {
                provider: api.map_or("none", ApiKind::as_str).to_owned(),
                model: model.to_owned(),
            },
            turns: Mutex::new(HashMap::new()),
            tools: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one stored event.
    pub fn event(&self, event: &LoopEvent) {
        let path_key = || event.path.0.clone();
        match &event.kind {
            EventKind::StreamingStart(StreamingStartEvent { .. }) => {
                lock(&self.turns).insert(path_key(), Instant::now());
            }
            EventKind::StreamingEnd(StreamingEndEvent { .. }) => {
                if let Some(started) = lock(&self.turns).remove(&path_key()) {
                    self.metrics
                        .model_turn_seconds
                        .get_or_create(&self.model)
                        .observe(started.elapsed().as_secs_f64());
                }
            }
            EventKind::TokensConsumed(TokensConsumedEvent { tokens }) => {
                for (kind, count) in [
                    ("input", tokens.input_tokens),
                    ("output", tokens.output_tokens),
                    ("cache_read", tokens.cache_read_tokens),
                    ("cache_write", tokens.cache_creation_tokens),
                ] {
                    self.metrics
                        .tokens
                        .get_or_create(&TokenLabels {
                            provider: self.model.provider.clone(),
                            model: self.model.model.clone(),
                            kind,
                        })
                        .inc_by(count);
                }
                self.metrics
                    .cost_usd
                    .get_or_create(&self.model)
                    .inc_by(tokens.cost);
            }
            EventKind::ToolStart(ToolStartEvent { tool_use_id, .. }) => {
                lock(&self.tools).insert(tool_use_id.clone(), Instant::now());
            }
            EventKind::ToolEnd(ToolEndEvent {
                tool_use_id,
                name,
                is_error,
                ..
            }) => {
                let labels = ToolLabels { tool: name.clone() };
                if let Some(started) = lock(&self.tools).remove(tool_use_id) {
                    self.metrics
                        .tool_call_seconds
                        .get_or_create(&labels)
                        .observe(started.elapsed().as_secs_f64());
                }
                if *is_error {
                    self.metrics.tool_errors.get_or_create(&labels).inc();
                }
            }
            EventKind::Finished(FinishedEvent { result }) => {
                if event.path.is_root()
                    && let LoopStatus::Error {
                        error:
                            LoopError::Provider { .. }
                            | LoopError::Assembly { .. }
                            | LoopError::IncompleteStream,
                    } = &result.status
                {
                    self.metrics.model_errors.get_or_create(&self.model).inc();
                }
            }
            EventKind::FirstChunk
            | EventKind::StreamingChunk(StreamingChunkEvent { .. })
            | EventKind::MessageCreated(MessageCreatedEvent { .. })
            | EventKind::PendingToolResult(PendingToolResultEvent { .. })
            | EventKind::ToolBlockUpdate(ToolBlockUpdateEvent { .. })
            | EventKind::AgentStart(AgentStartEvent { .. })
            | EventKind::AgentTurnStart(AgentTurnStartEvent { .. })
            | EventKind::AgentReason(AgentReasonEvent { .. })
            | EventKind::AgentRequestInput(AgentRequestInputEvent { .. })
            | EventKind::ApprovalRequested(_)
            | EventKind::AgentToolStart(AgentToolStartEvent { .. })
            | EventKind::AgentToolComplete(AgentToolCompleteEvent { .. })
            | EventKind::AgentObserve(AgentObserveEvent { .. })
            | EventKind::AgentCompletion(AgentCompletionEvent { .. })
            | EventKind::AgentError(AgentErrorEvent { .. })
            | EventKind::Hook(_)
            | EventKind::Handoff(_)
            | EventKind::ContextCompacted(ContextCompactedEvent { .. })
            | EventKind::ContextEdited(_) => {}
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
