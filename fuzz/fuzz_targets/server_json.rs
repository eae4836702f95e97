//! The server's JSON request bodies, through the real router over an
//! in-memory store: every body a route accepts (and every one it does not)
//! gets a JSON answer, a 4xx with an `error` message when refused, and
//! never a 5xx.
#![no_main]

use std::sync::{Arc, OnceLock};

use agentloop_server::{AppState, ServerConfig};
use agentloop_storage::MemoryStore;
use agentloop_types::{ModelProvider, ModelRequest, ModelStream};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tower::ServiceExt;

/// A model whose turns end at once without a word: runs fail at their
/// first turn, since the target is about request bodies, not loops.
struct NoModel;

impl ModelProvider for NoModel {
    fn stream(&self, _request: ModelRequest) -> ModelStream {
        Box::pin(futures::stream::empty())
    }
}

struct Fixture {
    runtime: tokio::runtime::Runtime,
    router: Router,
    token: String,
    project: String,
    task: String,
}

async fn call(
    router: &Router,
    token: &str,
    method: Method,
    uri: &str,
    body: Vec<u8>,
) -> (u16, Vec<u8>) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap_or_else(|e| panic!("{e}"));
    let response = router
        .clone()
        .oneshot(request)
        .await
        .unwrap_or_else(|e| match e {});
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (status, bytes.to_vec())
}

fn id_of(body: &[u8]) -> String {
    let value: Value = serde_json::from_slice(body).unwrap_or_else(|e| panic!("{e}"));
    value["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {value}"))
        .to_owned()
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let base =
            std::env::temp_dir().join(format!("agentloop-fuzz-server-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap_or_else(|e| panic!("{e}"));
        let (router, token, project, task) = runtime.block_on(async {
            let store = Arc::new(MemoryStore::new());
            let (_, token) = agentloop_server::users::create_user(&*store, "fuzz")
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let mut config = ServerConfig::new(Arc::new(NoModel), "none");
            // Project folders are created under this root, never elsewhere.
            config.projects_root = Some(base.clone());
            config.max_body_bytes = 64 * 1024;
            // Millions of inputs from one client: a limit would answer
            // nearly all of them 429 before any route saw them.
            config.rate_limit = None;
            let state = AppState::new(store, config);
            let router = agentloop_server::routes::router(state);
            let (status, body) = call(
                &router,
                &token,
                Method::POST,
                "/api/projects",
                br#"{"name":"fuzz","repoFolder":"fuzz-project"}"#.to_vec(),
            )
            .await;
            assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
            let project = id_of(&body);
            let (status, body) = call(
                &router,
                &token,
                Method::POST,
                &format!("/api/projects/{project}/tasks"),
                br#"{"title":"fuzz"}"#.to_vec(),
            )
            .await;
            assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
            let task = id_of(&body);
            (router, token, project, task)
        });
        Fixture {
            runtime,
            router,
            token,
            project,
            task,
        }
    })
}

fuzz_target!(|input: (u8, Vec<u8>)| {
    let (route, body) = input;
    let f = fixture();
    let (method, uri) = match route % 6 {
        0 => (Method::POST, "/api/projects".to_owned()),
        1 => (Method::POST, format!("/api/projects/{}/tasks", f.project)),
        2 => (Method::PUT, format!("/api/tasks/{}/document", f.task)),
        3 => (
            Method::PUT,
            format!("/api/tasks/{}/workflow-complete", f.task),
        ),
        4 => (Method::POST, format!("/api/tasks/{}/agent-runs", f.task)),
        _ => (
            Method::POST,
            "/api/agent-runs/0000000000000000/cancel".to_owned(),
        ),
    };
    let (status, answer) = f
        .runtime
        .block_on(call(&f.router, &f.token, method, &uri, body));
    assert!(
        status < 500,
        "{uri} answered {status}: {}",
        String::from_utf8_lossy(&answer)
    );
    let value: Value = serde_json::from_slice(&answer)
        .unwrap_or_else(|e| panic!("{uri} answered {status} with a body that is not JSON: {e}"));
    if status >= 400 {
        assert!(
            value["error"].is_string(),
            "{uri} answered {status} without an error: {value}"
        );
    }
});
