//! Spans and logs of a model request: one `gen_ai.request` span per turn
//! with the OpenTelemetry GenAI attributes, one `http.attempt` span per
//! attempt with its retry number, a warning with the wait before each
//! retry, and never the API key anywhere.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agentloop_providers::RetryPolicy;
use agentloop_types::ApiKind;
use common::{config, fixture_lines, paused_clock_provider, request, run, sse_body};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-ant-planted-secret-key-0123456789";

/// A span or event as text fields.
#[derive(Debug, Default, Clone)]
struct Captured {
    name: String,
    parent: Option<String>,
    fields: BTreeMap<String, String>,
}

#[derive(Default)]
struct Capture {
    spans: Mutex<BTreeMap<u64, Captured>>,
    events: Mutex<Vec<Captured>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

struct Layer(Arc<Capture>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Layer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut captured = Captured {
            name: attrs.metadata().name().to_owned(),
            parent: ctx
                .span(id)
                .and_then(|s| s.parent().map(|p| p.name().to_owned())),
            ..Captured::default()
        };
        attrs.record(&mut Fields(&mut captured.fields));
        self.0.spans.lock().unwrap().insert(id.into_u64(), captured);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(span) = self.0.spans.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }
    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut captured = Captured {
            name: event.metadata().level().to_string(),
            parent: ctx.event_span(event).map(|s| s.name().to_owned()),
            ..Captured::default()
        };
        event.record(&mut Fields(&mut captured.fields));
        self.0.events.lock().unwrap().push(captured);
    }
}

#[tokio::test(start_paused = true)]
async fn a_retried_request_has_a_turn_span_attempt_spans_and_no_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(529).set_body_string(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let lines = fixture_lines("anthropic-text.chunks.txt");
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(sse_body(ApiKind::AnthropicMessages, &lines)),
        )
        .mount(&server)
        .await;
    let mut config = config(ApiKind::AnthropicMessages, &server.uri()).with_retry(RetryPolicy {
        max_retries: 2,
        ..RetryPolicy::default()
    });
    config.api_key = Some(KEY.to_owned());
    let provider = paused_clock_provider(config);
    let capture = Arc::new(Capture::default());
    let subscriber = tracing_subscriber::registry().with(Layer(capture.clone()));
    let guard = tracing::subscriber::set_default(subscriber);
    let turn = run(&provider, request("claude-sonnet-4-5")).await;
    drop(guard);
    assert!(turn.error.is_none(), "{:?}", turn.error);

    let spans: Vec<Captured> = capture.spans.lock().unwrap().values().cloned().collect();
    let events = capture.events.lock().unwrap().clone();
    let all = format!("{spans:?}{events:?}");
    assert!(!all.contains(KEY), "the API key reached a span or event");
    assert!(!all.contains("planted-secret"));

    let turns: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "gen_ai.request")
        .collect();
    assert_eq!(turns.len(), 1, "{spans:#?}");
    let fields = &turns[0].fields;
    assert_eq!(fields["gen_ai.operation.name"], "chat");
    assert_eq!(fields["gen_ai.provider.name"], "anthropic");
    assert_eq!(fields["gen_ai.request.model"], "claude-sonnet-4-5");
    assert!(
        fields.contains_key("gen_ai.response.finish_reasons"),
        "{fields:?}"
    );
    assert!(
        fields.contains_key("gen_ai.usage.input_tokens"),
        "{fields:?}"
    );
    assert!(
        fields.contains_key("gen_ai.usage.output_tokens"),
        "{fields:?}"
    );
    assert_eq!(fields["agentloop.retries"], "1");

    let attempts: Vec<_> = spans.iter().filter(|s| s.name == "http.attempt").collect();
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    assert_eq!(attempts[0].fields["retry"], "0");
    assert_eq!(attempts[0].fields["http.response.status_code"], "529");
    assert_eq!(attempts[1].fields["retry"], "1");
    assert!(
        attempts
            .iter()
            .all(|a| a.parent.as_deref() == Some("gen_ai.request"))
    );
    let retry = events
        .iter()
        .find(|e| {
            e.fields
                .get("message")
                .is_some_and(|m| m.contains("retrying"))
        })
        .expect("a warning before the retry");
    assert_eq!(retry.name, "WARN");
    assert_eq!(retry.fields["retry"], "1");
    assert!(retry.fields.contains_key("wait_ms"));
}
