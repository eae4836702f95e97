//! Model provider adapters for agentloop.
//!
//! [`HttpProvider`] implements the [`ModelProvider`](agentloop_types::ModelProvider)
//! port for Anthropic Messages, OpenAI Chat Completions, OpenAI Responses,
//! Google Gemini and any OpenAI-compatible Chat Completions server (Ollama,
//! vLLM, OpenRouter, llama.cpp server, Azure OpenAI), streaming over
//! server-sent events or,
//! with `disable_stream`, as one JSON response decoded into the same
//! deltas. Around it: an SSE parser ([`sse`]), retries with backoff
//! ([`RetryPolicy`]; failures are retried only until the first content
//! arrives), prompt caching ([`PromptCache`]: Anthropic breakpoints on by
//! default), a model table of context windows and prices
//! ([`PricingTable`]) and [`replay_sse`] to run a
//! recorded body through an adapter ([`sse_from_json_lines`] frames
//! recordings kept as JSON lines).
//!
//! ```
//! use agentloop_providers::{HttpProvider, ProviderConfig, RetryPolicy};
//!
//! let config = ProviderConfig::openai_compatible("http://localhost:11434/v1", None)
//!     .with_retry(RetryPolicy { max_retries: 3, ..RetryPolicy::default() });
//! let provider = HttpProvider::new(config).unwrap();
//! assert_eq!(provider.config().endpoint(), "http://localhost:11434/v1/chat/completions");
//! ```
//!
//! Provider quirks handled here rather than in the engine: blocks the loop
//! does not interpret are passed through verbatim as
//! [`ContentBlock::Provider`](agentloop_types::ContentBlock::Provider) and
//! only sent back to the API that produced them; Chat Completions with
//! `n > 1` uses the first choice only; prefill (and stop sequences on
//! Responses, web search on Chat) are refused with a typed
//! [`Unsupported`](agentloop_types::ProviderErrorKind::Unsupported) error
//! where the API has no such feature.
//!
//! # Cargo features
//!
//! None: every API adapter is always built. TLS is rustls with the `ring`
//! provider.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod anthropic;
mod attachments;
mod cache;
mod config;
mod decode;
mod decoders;
mod error;
mod gemini;
mod openai_chat;
mod openai_responses;
mod pricing;
mod provider;
mod replay;
mod request_common;
mod retry;
mod schema_texts;
pub mod sse;
mod timestamp;
mod transport;
mod wire_cache;

pub use cache::{CacheTtl, PromptCache};
pub use config::{Auth, ProviderConfig};
/// The borrowed string the typed decoders read; the SSE benchmark's
/// serde-only reference reads the same.
#[doc(hidden)]
pub use decode::WireStr;
pub use error::is_retryable;
pub use pricing::{
    KNOWN_MODEL_MAX_TOKENS, LongContextPrice, ModelLimits, ModelPrice, PricingTable, Rates,
    UNKNOWN_MODEL_MAX_TOKENS,
};
pub use provider::{HttpProvider, ensure_crypto_provider};
pub use replay::{ReplayOutcome, assemble_sse, replay_response, replay_sse, sse_from_json_lines};
pub use retry::RetryPolicy;
