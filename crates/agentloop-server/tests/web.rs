//! The page and browser sessions over real HTTP: the page is served with a
//! strict policy; a token becomes an HttpOnly, SameSite=Strict cookie; the
//! cookie reads freely but changes only with the session's CSRF token;
//! signing out ends the session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::ScriptedProvider;
use agentloop_storage::MemoryStore;
use reqwest::header;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_served_with_a_strict_policy() {
    let server = common::start(Arc::new(MemoryStore::new()), ScriptedProvider::new([])).await;
    for (path, kind) in [
        ("/", "text/html"),
        ("/assets/app.js", "text/javascript"),
        ("/assets/steer.js", "text/javascript"),
        ("/assets/memories.js", "text/javascript"),
        ("/assets/audit.js", "text/javascript"),
        ("/assets/roles.js", "text/javascript"),
        ("/assets/app.css", "text/css"),
    ] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        let content_type = headers[header::CONTENT_TYPE].to_str().unwrap();
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
        let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(policy.contains("script-src 'self'"), "{policy}");
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
    }
    let html = server
        .client
        .get(server.url("/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // No inline script or style: every script is a file of this origin.
    assert!(html.contains(r#"<script type="module" src="/assets/app.js"></script>"#));
    assert_eq!(html.matches("<script").count(), 1);
    assert!(!html.contains("<style") && !html.contains(" style="));
    server.stop().await;
}

fn session_cookie(response: &reqwest::Response) -> String {
    let set = response.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(attribute), "{set}");
    }
    set.split(';').next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_becomes_a_session_cookie_guarded_against_csrf() {
    let server = common::start(Arc::new(MemoryStore::new()), ScriptedProvider::new([])).await;
    let client = reqwest::Client::new();
    let sign_in = |body: String, content_type: &'static str| {
        client
            .post(server.url("/api/session"))
            .header(header::CONTENT_TYPE, content_type)
            .body(body)
            .send()
    };

    // A wrong token, and a body a cross-site form could send, are refused.
    let wrong = sign_in(json!({"token": "al_nope"}).to_string(), "application/json")
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get(header::SET_COOKIE).is_none());
    let form = sign_in(
        format!("token={}", server.token),
        "application/x-www-form-urlencoded",
    )
    .await
    .unwrap();
    assert!(form.status().is_client_error(), "{}", form.status());
    assert!(form.headers().get(header::SET_COOKIE).is_none());

    let response = sign_in(
        json!({"token": server.token}).to_string(),
        "application/json",
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 201);
    let cookie = session_cookie(&response);
    assert!(
        !cookie.contains(&server.token),
        "the session has a token of its own"
    );
    let body: Value = response.json().await.unwrap();
    let csrf = body["csrf"].as_str().unwrap().to_owned();
    assert_eq!(body["user"]["name"], "ada");

    let with_cookie = |method: reqwest::Method, path: &str| {
        client
            .request(method, server.url(path))
            .header(header::COOKIE, cookie.clone())
    };
    // Reads need only the cookie.
    let me = with_cookie(reqwest::Method::GET, "/api/me")
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 200);
    let session = with_cookie(reqwest::Method::GET, "/api/session")
        .send()
        .await
        .unwrap();
    assert_eq!(session.json::<Value>().await.unwrap()["csrf"], csrf);

    // A change without the CSRF token, or with a wrong one, is refused.
    let project = json!({"name": "web", "repoFolder": server.repo.path()});
    for token in [None, Some("0".repeat(64))] {
        let mut request = with_cookie(reqwest::Method::POST, "/api/projects").json(&project);
        if let Some(token) = token {
            request = request.header("x-csrf-token", token);
        }
        let refused = request.send().await.unwrap();
        assert_eq!(refused.status(), 403);
        assert!(
            refused.json::<Value>().await.unwrap()["error"]
                .as_str()
                .unwrap()
                .contains("csrf")
        );
    }
    let (_, projects) = server.get("/api/projects").await;
    assert_eq!(projects, json!([]), "nothing was created");
    let created = with_cookie(reqwest::Method::POST, "/api/projects")
        .header("x-csrf-token", &csrf)
        .json(&project)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);

    // Signing out ends the session: the cookie's token no longer works.
    let out = with_cookie(reqwest::Method::DELETE, "/api/session")
        .header("x-csrf-token", &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 204);
    assert!(
        out.headers()[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    let after = with_cookie(reqwest::Method::GET, "/api/me")
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 401);
    // The bearer token that signed in still works.
    assert_eq!(server.get("/api/me").await.0, 200);
    server.stop().await;
}
