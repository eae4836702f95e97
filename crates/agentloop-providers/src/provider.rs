//! The [`ModelProvider`] implementation over HTTP.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentloop_types::{
    ApiKind, ModelChunk, ModelProvider, ModelRequest, ModelStream, ProviderError, StopReason,
};
use serde_json::Value;
use tracing::Instrument;

use crate::attachments::Attachments;
use crate::config::ProviderConfig;
use crate::decode::{DecodeContext, Decoder, Item};
use crate::decoders::decoder_for;
use crate::error::{self, is_retryable};
use crate::sse::{SseEvent, SseParser};
use crate::transport::{self, ParsedEndpoint, describe};
use crate::wire_cache::WireCache;

/// A model provider reached over HTTP: Anthropic Messages, OpenAI Chat
/// Completions, OpenAI Responses, Google Gemini or an OpenAI-compatible
/// server, as its
/// [`ProviderConfig`] says.
///
/// Each [`stream`](ModelProvider::stream) call sends one request (streaming
/// unless `options.disable_stream`), retrying failures that happen before
/// any content arrives, and yields deltas then one finish, or an error that
/// ends the turn. Dropping the stream aborts the request and any backoff.
#[derive(Debug, Clone)]
pub struct HttpProvider {
    config: Arc<ProviderConfig>,
    client: reqwest::Client,
    /// Length of the last body sent: the next one (the same history and a
    /// turn more) is written into a buffer that already fits.
    last_body_len: Arc<AtomicUsize>,
    /// History already written, for the next request of each run.
    wire_cache: Arc<WireCache>,
    endpoint: Arc<ParsedEndpoint>,
}

impl HttpProvider {
    /// A provider with a fresh HTTP client (rustls, ring crypto).
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        ensure_crypto_provider();
        let mut builder = reqwest::Client::builder();
        if let Some(timeout) = config.connect_timeout {
            builder = builder.connect_timeout(timeout);
        }
        let client = builder.build().map_err(|e| {
            error::invalid_request(format!("cannot build HTTP client: {}", describe(&e)))
        })?;
        Ok(Self::with_client(config, client))
    }

    /// A provider using the given HTTP client (timeouts, proxies, pools of
    /// your choosing). Building a `reqwest::Client` needs a rustls crypto
    /// provider: call [`ensure_crypto_provider`] before building it.
    pub fn with_client(config: ProviderConfig, client: reqwest::Client) -> Self {
        Self {
            config: Arc::new(config),
            client,
            last_body_len: Arc::default(),
            wire_cache: Arc::default(),
            endpoint: Arc::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The JSON body this provider would send for `request` (attachments
    /// loaded), without sending it.
    pub async fn request_body(&self, request: &ModelRequest) -> Result<Value, ProviderError> {
        let attachments = Attachments::load(request, 0).await?;
        let bytes = build_body(
            &self.config,
            request,
            &attachments,
            0,
            &WireCache::default(),
        )?;
        serde_json::from_slice(&bytes).map_err(|e| error::invalid_request(e.to_string()))
    }
}

/// Installs the ring crypto provider as the process default for rustls,
/// unless a default is installed already. [`HttpProvider::new`] calls it;
/// call it yourself before building a client for
/// [`HttpProvider::with_client`].
pub fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Fails only when another thread installed one first; either way a
        // provider is installed afterwards.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Builds the body for `config.api`, as the bytes to send.
pub(crate) fn build_body(
    config: &ProviderConfig,
    request: &ModelRequest,
    attachments: &Attachments,
    capacity: usize,
    cache: &WireCache,
) -> Result<Vec<u8>, ProviderError> {
    let stream = !request.options.disable_stream;
    match config.api {
        ApiKind::AnthropicMessages => crate::anthropic::request::build(
            request,
            attachments,
            stream,
            &config.prompt_cache,
            capacity,
            cache,
        ),
        ApiKind::OpenaiChat => crate::openai_chat::request::build(
            request,
            attachments,
            stream,
            config,
            capacity,
            cache,
        ),
        ApiKind::OpenaiResponses => crate::openai_responses::request::build(
            request,
            attachments,
            stream,
            config,
            capacity,
            cache,
        ),
        ApiKind::Gemini => crate::gemini::request::build(request, attachments, capacity, cache),
    }
}

impl ModelProvider for HttpProvider {
    /// The API of its configuration: the one its requests are built for.
    fn api(&self) -> Option<ApiKind> {
        Some(self.config.api)
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        // Named and attributed per the OpenTelemetry GenAI conventions; a
        // child of whatever span the caller (the engine's turn) is in.
        let span = tracing::info_span!(
            "gen_ai.request",
            otel.name = %format!("chat {}", request.options.model),
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider_name(self.config.api),
            gen_ai.request.model = %request.options.model,
            gen_ai.request.max_tokens = request.options.max_tokens,
            gen_ai.response.finish_reasons = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            agentloop.cost_usd = tracing::field::Empty,
            agentloop.retries = tracing::field::Empty,
        );
        let turn = Turn {
            span,
            inputs: Arc::new(Inputs {
                config: self.config.clone(),
                client: self.client.clone(),
                request,
                last_body_len: self.last_body_len.clone(),
                wire_cache: self.wire_cache.clone(),
                endpoint: self.endpoint.clone(),
            }),
            phase: Phase::Start,
            queue: VecDeque::new(),
            retries: 0,
            yielded: false,
        };
        let stream = futures::stream::unfold(turn, |mut turn| async move {
            loop {
                if let Some(item) = turn.queue.pop_front() {
                    return Some((item, turn));
                }
                if matches!(turn.phase, Phase::Over) {
                    return None;
                }
                let span = turn.span.clone();
                turn.advance().instrument(span).await;
            }
        });
        Box::pin(futures::StreamExt::fuse(stream))
    }
}

struct Inputs {
    config: Arc<ProviderConfig>,
    client: reqwest::Client,
    request: ModelRequest,
    last_body_len: Arc<AtomicUsize>,
    wire_cache: Arc<WireCache>,
    endpoint: Arc<ParsedEndpoint>,
}

/// Where a turn is; `Over` once nothing more will be produced (whatever
/// is queued is still yielded).
enum Phase {
    Start,
    Body(Box<Body>),
    Over,
}

struct Body {
    response: reqwest::Response,
    parser: SseParser,
    decoder: Box<dyn Decoder>,
    request_id: Option<String>,
}

/// One model turn in progress.
struct Turn {
    /// The turn's span; attempts and retries nest inside it.
    span: tracing::Span,
    inputs: Arc<Inputs>,
    phase: Phase,
    queue: VecDeque<Item>,
    /// Retries used so far, by the transport and after a failed body.
    retries: u32,
    /// Whether any chunk was produced; from then on nothing is retried.
    yielded: bool,
}

/// Feeds events to the decoder; `true` once the turn is over.
pub(crate) fn feed(decoder: &mut dyn Decoder, events: &[SseEvent], out: &mut Vec<Item>) -> bool {
    events.iter().any(|event| decoder.event(event, out))
}

/// Parses `bytes` (or, with `None`, the end of the body) and feeds each
/// event to the decoder until the turn is over; `true` once it is.
pub(crate) fn feed_bytes(
    parser: &mut SseParser,
    decoder: &mut dyn Decoder,
    bytes: Option<&[u8]>,
    out: &mut Vec<Item>,
) -> bool {
    let mut over = false;
    let on_event = |event: &SseEvent| {
        if !over {
            over = decoder.event(event, out);
        }
    };
    match bytes {
        Some(bytes) => parser.push_each(bytes, on_event),
        None => parser.finish_each(on_event),
    }
    over
}

impl Turn {
    async fn advance(&mut self) {
        // The queue is drained before each step: its buffer collects this
        // step's items, so a turn allocates it once, not once a step.
        let mut out = Vec::from(std::mem::take(&mut self.queue));
        // The turn is over unless a branch below (or a retry) sets a phase.
        match std::mem::replace(&mut self.phase, Phase::Over) {
            Phase::Start => {
                let inputs = self.inputs.clone();
                match start(&inputs, &mut self.retries, &mut out).await {
                    Ok(Some(body)) => self.phase = body,
                    Ok(None) => {}
                    Err(e) => {
                        // Failures before a response were retried already.
                        self.queue.push_back(Err(e));
                        return;
                    }
                }
            }
            Phase::Body(mut body) => {
                let Body {
                    response,
                    parser,
                    decoder,
                    request_id,
                } = body.as_mut();
                match response.chunk().await {
                    Ok(Some(bytes)) => {
                        if !feed_bytes(parser, decoder.as_mut(), Some(&bytes), &mut out) {
                            self.phase = Phase::Body(body);
                        }
                    }
                    Ok(None) => {
                        if !feed_bytes(parser, decoder.as_mut(), None, &mut out) {
                            decoder.end(&mut out);
                        }
                    }
                    Err(e) => {
                        let message = format!("connection lost mid-stream: {}", describe(&e));
                        out.push(Err(error::connection(message, request_id.clone())));
                    }
                }
            }
            Phase::Over => {}
        }
        self.settle(out).await;
    }

    /// Queues what a step produced, unless it is a retryable failure (an
    /// overloaded error event, a dropped connection) that came before any
    /// content: then the request is sent again after a backoff.
    async fn settle(&mut self, out: Vec<Item>) {
        if !self.yielded && !out.iter().any(|item| item.is_ok()) {
            let policy = &self.inputs.config.retry;
            let failure = out.iter().find_map(|item| item.as_ref().err());
            if let Some(failure) = failure
                && is_retryable(failure)
                && self.retries < policy.max_retries
                && let Some(delay) = policy.delay(self.retries, None)
            {
                crate::retry::notice_retry(failure, self.retries + 1, policy.max_retries, delay);
                tokio::time::sleep(delay).await;
                self.retries += 1;
                self.phase = Phase::Start;
                return;
            }
        }
        self.yielded |= out.iter().any(|item| item.is_ok());
        for item in &out {
            match item {
                Ok(ModelChunk::Finish { stop_reason, usage }) => {
                    self.span
                        .record("gen_ai.response.finish_reasons", finish_reason(stop_reason))
                        .record("gen_ai.usage.input_tokens", usage.input_tokens)
                        .record("gen_ai.usage.output_tokens", usage.output_tokens)
                        .record("agentloop.cost_usd", usage.cost)
                        .record("agentloop.retries", self.retries);
                }
                Ok(ModelChunk::Delta(_)) => {}
                Err(error) => {
                    tracing::warn!(error = %error, retries = self.retries, "model request failed");
                }
            }
        }
        self.queue = VecDeque::from(out);
    }
}

/// A stop reason as a GenAI finish reason.
fn finish_reason(reason: &StopReason) -> &str {
    match reason {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_call",
        StopReason::MaxTokens => "length",
        StopReason::StopSequence { .. } => "stop_sequence",
        StopReason::Refusal { .. } => "refusal",
        StopReason::PauseTurn => "pause_turn",
        StopReason::ContentFilter => "content_filter",
        StopReason::Other(other) => other,
    }
}

/// The `gen_ai.provider.name` of an API.
fn provider_name(api: ApiKind) -> &'static str {
    match api {
        ApiKind::AnthropicMessages => "anthropic",
        ApiKind::OpenaiChat | ApiKind::OpenaiResponses => "openai",
        ApiKind::Gemini => "gcp.gemini",
    }
}

/// The request's body, its stored attachments loaded: those of the
/// messages the wire cache has not written yet, or, when the body needs an
/// earlier one again (a message rewritten to carry a cache mark), all.
async fn body_bytes(
    config: &ProviderConfig,
    request: &ModelRequest,
    cache: &WireCache,
    capacity: usize,
) -> Result<Vec<u8>, ProviderError> {
    let attachments = Attachments::load(request, cache.written(&request.messages)).await?;
    match build_body(config, request, &attachments, capacity, cache) {
        Err(_) if attachments.missed() => {
            let attachments = Attachments::load(request, 0).await?;
            build_body(config, request, &attachments, capacity, cache)
        }
        built => built,
    }
}

/// Sends the request. Returns the body phase for a stream, or `None` when
/// the whole turn was decoded into `out` already.
async fn start(
    inputs: &Inputs,
    retries: &mut u32,
    out: &mut Vec<Item>,
) -> Result<Option<Phase>, ProviderError> {
    let Inputs {
        config,
        client,
        request,
        last_body_len,
        wire_cache,
        endpoint,
    } = inputs;
    let last = last_body_len.load(Ordering::Relaxed);
    let bytes = body_bytes(config, request, wire_cache, last + last / 8 + 1024).await?;
    last_body_len.store(bytes.len(), Ordering::Relaxed);
    let url = endpoint
        .parse(config.endpoint_for(&request.options.model, !request.options.disable_stream))?;
    let response = transport::send(client, config, url, bytes, retries).await?;
    let request_id = transport::request_id(response.headers());
    let context = DecodeContext {
        model: request.options.model.clone(),
        request_id: request_id.clone(),
        pricing: config.pricing.clone(),
    };
    let mut decoder = decoder_for(config.api, context);
    let is_json = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("json"));
    if !request.options.disable_stream && !is_json {
        return Ok(Some(Phase::Body(Box::new(Body {
            response,
            parser: SseParser::new(),
            decoder,
            request_id,
        }))));
    }
    // A whole JSON response: asked for, or sent by a server that ignores
    // `stream: true`. Its future is boxed: inline, it would make every
    // turn's future larger.
    let bytes = Box::pin(response.bytes())
        .await
        .map_err(|e| error::connection(describe(&e), request_id.clone()))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| error::decode(format!("response is not JSON: {e}"), request_id.clone()))?;
    let events = decoder.events_from_response(&value);
    if !feed(decoder.as_mut(), &events, out) {
        decoder.end(out);
    }
    Ok(None)
}
