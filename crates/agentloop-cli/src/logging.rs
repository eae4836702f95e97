//! Where log lines and spans go: `tracing` events to stderr, as text or
//! JSON lines, filtered by `RUST_LOG` when it is set, else by the level
//! given; and, with the `otel` feature, spans exported over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set, configured by the standard `OTEL_*` variables.

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One readable line per event.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
    /// Short notices for a person at a terminal (a retry, a warning): no
    /// timestamp or module, for commands other than `serve`.
    #[value(skip)]
    Notices,
}

/// Keeps the exporter alive; dropping it sends the spans not sent yet.
pub struct Telemetry {
    #[cfg(feature = "otel")]
    traces: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(provider) = self.traces.take() {
            // Flushes the batch; a collector that is gone loses the spans.
            let _ = provider.shutdown();
        }
    }
}

/// The log filter for `-v` counted `count` times.
pub fn verbosity(count: u8) -> &'static str {
    match count {
        0 => "warn",
        1 => "info",
        _ => "debug",
    }
}

/// Installs the process's subscriber. `level` is a filter directive
/// (`info`, `agentloop_server=debug,warn`, ...) used when `RUST_LOG` is
/// not set; with `spans`, each span is also logged when it closes (with its
/// fields and duration); `trace` is a file that receives every closed span
/// as a JSON line.
pub fn init(
    format: LogFormat,
    level: &str,
    spans: bool,
    trace: Option<&std::path::Path>,
) -> Result<Telemetry, String> {
    use tracing_subscriber::fmt::format::FmtSpan;
    let span_events = if spans { FmtSpan::CLOSE } else { FmtSpan::NONE };
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(directives)
            .map_err(|e| format!("RUST_LOG is not a valid filter: {e}"))?,
        _ => EnvFilter::try_new(level)
            .map_err(|e| format!("--log-level {level:?} is not a valid filter: {e}"))?,
    };
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    // The level filters the log lines only: exported spans keep their own
    // level, so `warn` on stderr still exports every run's spans.
    let lines = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_span_events(span_events.clone())
            .with_writer(std::io::stderr)
            .with_ansi(colour)
            .with_filter(filter)
            .boxed(),
        // At the default level a notice is its message alone: its fields
        // (a retry's count and wait) restate it. `-v` shows them.
        LogFormat::Notices if !spans => tracing_subscriber::fmt::layer()
            .without_time()
            .with_target(false)
            .fmt_fields(tracing_subscriber::fmt::format::debug_fn(
                |writer, field, value| {
                    if field.name() == "message" {
                        write!(writer, "{value:?}")
                    } else {
                        Ok(())
                    }
                },
            ))
            .with_writer(std::io::stderr)
            .with_ansi(colour)
            .with_filter(filter)
            .boxed(),
        LogFormat::Notices => tracing_subscriber::fmt::layer()
            .without_time()
            .with_target(false)
            .with_span_events(span_events.clone())
            .with_writer(std::io::stderr)
            .with_ansi(colour)
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_span_events(span_events)
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_filter(filter)
            .boxed(),
    };
    let spans_file = match trace {
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| format!("cannot write the trace file {}: {e}", path.display()))?;
            Some(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_span_list(false)
                    .with_span_events(FmtSpan::CLOSE)
                    .with_writer(std::sync::Mutex::new(file))
                    .with_ansi(false)
                    .with_filter(tracing_subscriber::filter::LevelFilter::INFO),
            )
        }
        None => None,
    };
    let registry = tracing_subscriber::registry().with(lines).with(spans_file);
    #[cfg(feature = "otel")]
    {
        let traces = otlp::provider()?;
        let spans = traces.as_ref().map(|provider| {
            use opentelemetry::trace::TracerProvider as _;
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("agentloop"))
                .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
        });
        registry
            .with(spans)
            .try_init()
            .map_err(|e| format!("cannot install the log subscriber: {e}"))?;
        Ok(Telemetry { traces })
    }
    #[cfg(not(feature = "otel"))]
    {
        registry
            .try_init()
            .map_err(|e| format!("cannot install the log subscriber: {e}"))?;
        Ok(Telemetry {})
    }
}

#[cfg(feature = "otel")]
mod otlp {
    use opentelemetry_otlp::WithExportConfig as _;
    use opentelemetry_sdk::trace::SdkTracerProvider;

    /// The OTLP/HTTP trace exporter, when an endpoint is configured.
    pub fn provider() -> Result<Option<SdkTracerProvider>, String> {
        let configured = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
        if !configured {
            return Ok(None);
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .build()
            .map_err(|e| format!("cannot set up the OTLP exporter: {e}"))?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name("agentloop")
            .build();
        Ok(Some(
            SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource)
                .build(),
        ))
    }
}
