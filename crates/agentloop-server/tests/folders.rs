//! Project folders from outside: inside the projects root, created without
//! following links, never shared between projects or users, and a refused
//! request creates nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use agentloop_engine::scripted::ScriptedProvider;
use agentloop_storage::MemoryStore;
use common::TestServer;
use serde_json::{Value, json};

async fn server_with_root(root: &Path) -> TestServer {
    let mut config = common::config(ScriptedProvider::new([]));
    config.projects_root = Some(root.to_path_buf());
    common::start_with(Arc::new(MemoryStore::new()), config).await
}

async fn create_as(server: &TestServer, token: &str, folder: impl Into<Value>) -> (u16, Value) {
    let response = server
        .client
        .post(server.url("/api/projects"))
        .bearer_auth(token)
        .json(&json!({ "name": "p", "repoFolder": folder.into() }))
        .send()
        .await
        .unwrap();
    common::decode(response).await
}

fn entries(folder: &Path) -> usize {
    std::fs::read_dir(folder).unwrap().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_folders_create_nothing() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
    std::fs::write(root.path().join("file"), "x").unwrap();
    let server = server_with_root(root.path()).await;
    let token = server.token.clone();
    let real_root = root.path().canonicalize().unwrap();
    for folder in [
        json!(real_root.join("link/p4")),
        json!("link/p4/deeper"),
        json!(real_root.join("a/../../escape")),
        json!("../escape"),
        json!(real_root),
        json!("."),
        json!(outside.path().join("p")),
        json!("file/p"),
        json!(""),
        json!(17),
    ] {
        let (status, body) = create_as(&server, &token, folder.clone()).await;
        assert_eq!(status, 400, "{folder}: {body}");
        assert!(body["error"].is_string(), "{body}");
    }
    assert_eq!(
        entries(outside.path()),
        0,
        "nothing appeared outside the root"
    );
    assert_eq!(entries(root.path()), 2, "nothing appeared inside the root");
    let (_, projects) = server.get("/api/projects").await;
    assert_eq!(projects, json!([]));
    server.stop().await;
}

/// What a user is told of a folder another user has, or had, a project in.
const NOT_AVAILABLE: &str = "repoFolder is not available; choose another folder";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_users_never_share_a_folder() {
    let root = tempfile::tempdir().unwrap();
    let server = server_with_root(root.path()).await;
    let ada = server.token.clone();
    let (_, bob) = agentloop_server::users::create_user(&*server.store, "bob")
        .await
        .unwrap();
    let (status, a) = create_as(&server, &ada, "alpha").await;
    assert_eq!(status, 201, "{a}");
    let alpha = a["repo_folder"].as_str().unwrap().to_owned();
    assert!(Path::new(&alpha).is_dir());

    for (token, folder) in [
        (&bob, json!(alpha.clone())),
        (&bob, json!("alpha/inner")),
        (&bob, json!(format!("{alpha}/./inner/deeper"))),
        (&ada, json!("alpha")),
    ] {
        let (status, body) = create_as(&server, token, folder.clone()).await;
        assert_eq!(status, 409, "{folder}: {body}");
        assert!(!Path::new(&alpha).join("inner").exists());
        // Another user learns only that the folder is not available; its
        // owner is told which of their projects holds it.
        let expected = if *token == ada {
            format!(
                "repoFolder is, contains or lies inside the folder of your project {}",
                a["id"].as_str().unwrap()
            )
        } else {
            NOT_AVAILABLE.to_owned()
        };
        assert_eq!(body["error"], expected.as_str(), "{folder}");
    }
    // Bob's project around Ada's folder is refused the same way.
    std::fs::create_dir_all(root.path().join("outer")).unwrap();
    let (status, _) = create_as(&server, &bob, "outer/alpha2").await;
    assert_eq!(status, 201);
    let (status, body) = create_as(&server, &ada, "outer").await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], NOT_AVAILABLE);
    // A sibling whose name merely starts the same is fine.
    let (status, body) = create_as(&server, &bob, "alphabet").await;
    assert_eq!(status, 201, "{body}");

    // Once Ada deletes her project, its folder still holds her files and is
    // not handed to Bob; Ada may take it back.
    let id = a["id"].as_str().unwrap();
    let (status, _) = server
        .send("DELETE", &format!("/api/projects/{id}"), json!({}))
        .await;
    assert_eq!(status, 204);
    let (status, body) = create_as(&server, &bob, alpha.clone()).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], NOT_AVAILABLE);
    let (status, body) = create_as(&server, &ada, alpha.clone()).await;
    assert_eq!(status, 201, "{body}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_names_and_titles_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let server = server_with_root(root.path()).await;
    let (status, body) = server
        .send(
            "POST",
            "/api/projects",
            json!({ "name": "  ", "repoFolder": "x" }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(!root.path().join("x").exists());
    let (status, project) = server
        .send(
            "POST",
            "/api/projects",
            json!({ "name": "x", "repoFolder": "x" }),
        )
        .await;
    assert_eq!(status, 201, "{project}");
    let tasks = format!("/api/projects/{}/tasks", project["id"].as_str().unwrap());
    let (status, body) = server.send("POST", &tasks, json!({ "title": "" })).await;
    assert_eq!(status, 400, "{body}");
    let (_, listed) = server.get(&tasks).await;
    assert_eq!(listed, json!([]));
    server.stop().await;
}
