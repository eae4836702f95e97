//! Every endpoint's success and error answers, on SQLite.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use common::start;
use serde_json::json;

fn hanging(n: usize) -> Arc<ScriptedProvider> {
    ScriptedProvider::new((0..n).map(|_| ScriptedTurn::new().hang()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_is_required_and_checked() {
    let (_dir, store) = common::sqlite().await;
    let server = start(store, hanging(1)).await;
    let response = server
        .client
        .get(server.url("/api/projects"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let response = server
        .client
        .get(server.url("/api/projects"))
        .bearer_auth("al_wrong")
        .send()
        .await
        .unwrap();
    let (status, body) = common::decode(response).await;
    assert_eq!(status, 401);
    assert!(body["error"].is_string());
    let (status, me) = server.get("/api/me").await;
    assert_eq!((status, me["name"].as_str()), (200, Some("ada")));
    let response = server
        .client
        .get(server.url("/api/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let (status, _) = server.get("/api/nope").await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn projects_and_tasks_crud_with_ownership() {
    let (_dir, store) = common::sqlite().await;
    let server = start(store.clone(), hanging(1)).await;
    let (project_id, task_id) = server.project_and_task().await;

    let (status, projects) = server.get("/api/projects").await;
    assert_eq!(status, 200);
    assert_eq!(projects.as_array().unwrap().len(), 1);
    let (status, project) = server.get(&format!("/api/projects/{project_id}")).await;
    assert_eq!((status, project["name"].as_str()), (200, Some("demo")));

    let doc = server
        .repo
        .path()
        .join(format!(".agentloop/tasks/task-{task_id}.md"));
    assert_eq!(
        std::fs::read_to_string(&doc).unwrap(),
        "# Add a README\n\nWrite it.\n"
    );
    let (status, task) = server.get(&format!("/api/tasks/{task_id}")).await;
    assert_eq!(
        (status, task["workflow_complete"].as_bool()),
        (200, Some(false))
    );
    let (status, tasks) = server
        .get(&format!("/api/projects/{project_id}/tasks"))
        .await;
    assert_eq!((status, tasks.as_array().unwrap().len()), (200, 1));
    let (status, document) = server
        .send(
            "PUT",
            &format!("/api/tasks/{task_id}/document"),
            json!({ "content": "# New\n" }),
        )
        .await;
    assert_eq!(status, 200, "{document}");
    let (status, document) = server.get(&format!("/api/tasks/{task_id}/document")).await;
    assert_eq!(
        (status, document["content"].as_str()),
        (200, Some("# New\n"))
    );

    // Bad bodies.
    let (status, body) = server.raw("POST", "/api/projects", "{not json").await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("malformed JSON"));
    let (status, _) = server
        .send("POST", "/api/projects", json!({ "name": 3 }))
        .await;
    assert_eq!(status, 400);
    let (status, _) = server.send("POST", "/api/projects", json!([1])).await;
    assert_eq!(status, 400);
    let (status, _) = server
        .send(
            "POST",
            "/api/projects",
            json!({ "name": "x", "repoFolder": "relative" }),
        )
        .await;
    assert_eq!(status, 400);
    let big = format!("{{\"name\": \"{}\"}}", "x".repeat(100 * 1024));
    let (status, body) = server.raw("POST", "/api/projects", &big).await;
    assert_eq!(status, 413);
    assert!(body["error"].is_string());
    let (status, _) = server
        .send(
            "POST",
            &format!("/api/projects/{project_id}/tasks"),
            json!({}),
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = server.get("/api/tasks/bad.id").await;
    assert_eq!(status, 400);
    let (status, _) = server.get("/api/tasks/unknown").await;
    assert_eq!(status, 404);

    // Another user sees none of it.
    let (_, other_token) = agentloop_server::users::create_user(&*store, "bob")
        .await
        .unwrap();
    let other = |path: &str| {
        server
            .client
            .get(server.url(path))
            .bearer_auth(&other_token)
            .send()
    };
    for path in [
        format!("/api/projects/{project_id}"),
        format!("/api/projects/{project_id}/tasks"),
        format!("/api/tasks/{task_id}"),
        format!("/api/tasks/{task_id}/agent-runs"),
    ] {
        assert_eq!(other(&path).await.unwrap().status().as_u16(), 404, "{path}");
    }
    let response = other("/api/projects").await.unwrap();
    let (_, list) = common::decode(response).await;
    assert_eq!(list, json!([]));

    let (status, _) = server
        .send("DELETE", &format!("/api/projects/{project_id}"), json!({}))
        .await;
    assert_eq!(status, 204);
    let (status, _) = server.get(&format!("/api/tasks/{task_id}")).await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_runs_start_conflict_list_and_recover() {
    let (_dir, store) = common::sqlite().await;
    let server = start(store.clone(), hanging(4)).await;
    let (_, task_id) = server.project_and_task().await;
    let runs = format!("/api/tasks/{task_id}/agent-runs");

    let (status, body) = server
        .send("POST", &runs, json!({ "agentType": "bogus" }))
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid agent type")
    );
    let (status, _) = server.send("POST", &runs, json!({})).await;
    assert_eq!(status, 400);
    let (status, body) = server
        .send(
            "POST",
            "/api/tasks/bad.id/agent-runs",
            json!({ "agentType": "review" }),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("Invalid task ID"))
    );
    let (status, body) = server
        .send(
            "POST",
            "/api/tasks/nope/agent-runs",
            json!({ "agentType": "review" }),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("Task not found"))
    );

    let (status, run) = server
        .send("POST", &runs, json!({ "agentType": "implementation" }))
        .await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "running");
    assert_eq!(run["agent_type"], "implementation");
    assert_eq!(run["task_id"], task_id.as_str());
    assert!(run["conversation_id"].is_string());
    assert!(run["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(run["completed_at"].is_null());

    let (status, conflict) = server
        .send("POST", &runs, json!({ "agentType": "review" }))
        .await;
    assert_eq!(status, 409);
    assert_eq!(
        conflict["error"],
        "An agent is already running for this task"
    );
    assert_eq!(conflict["runningAgent"]["id"], run["id"]);

    let (status, list) = server.get(&runs).await;
    assert_eq!((status, list.as_array().unwrap().len()), (200, 1));
    let run_id = run["id"].as_str().unwrap();
    let (status, one) = server.get(&format!("/api/agent-runs/{run_id}")).await;
    assert_eq!((status, &one["id"]), (200, &run["id"]));
    let (status, messages) = server
        .get(&format!("/api/agent-runs/{run_id}/messages"))
        .await;
    assert_eq!(status, 200);
    assert!(
        messages[0]["message"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(&format!(".agentloop/tasks/task-{task_id}.md"))
    );

    // workflow-complete: validation, then force-complete.
    let wc = format!("/api/tasks/{task_id}/workflow-complete");
    let (status, body) = server.send("PUT", &wc, json!({ "complete": "yes" })).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("complete must be a boolean"))
    );
    let (status, _) = server
        .send(
            "PUT",
            "/api/tasks/nope/workflow-complete",
            json!({ "complete": true }),
        )
        .await;
    assert_eq!(status, 404);
    let (status, body) = server.send("PUT", &wc, json!({ "complete": true })).await;
    assert_eq!(
        (status, body),
        (200, json!({ "success": true, "workflow_complete": true }))
    );
    let settled = server.settle(&task_id, 1).await;
    assert_eq!(settled.len(), 1);
    // Marking the task done stops its running agent: it is force-completed
    // and says why.
    assert_eq!(settled[0]["status"], "completed");
    assert_eq!(settled[0]["stopped_by"], "workflow_complete");
    assert_eq!(
        settled[0]["stop_message"],
        "stopped because its task was marked done"
    );
    assert!(settled[0]["completed_at"].is_string());
    let (status, body) = server.send("PUT", &wc, json!({ "complete": false })).await;
    assert_eq!(
        (status, body["workflow_complete"].as_bool()),
        (200, Some(false))
    );

    // Cancel: the run ends cancelled and nothing chains.
    let (status, run) = server
        .send("POST", &runs, json!({ "agentType": "implementation" }))
        .await;
    assert_eq!(status, 201);
    let run_id = run["id"].as_str().unwrap();
    let (status, cancelled) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(
        (status, cancelled["status"].as_str()),
        (200, Some("cancelled"))
    );
    let (status, _) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(status, 409);
    let (status, _) = server
        .send("POST", "/api/agent-runs/nope/cancel", json!({}))
        .await;
    assert_eq!(status, 404);
    let settled = server.settle(&task_id, 2).await;
    assert_eq!(settled.len(), 2);
    assert_eq!(settled[1]["status"], "cancelled");
    let mut record = store.get_run(run_id).await.unwrap();
    for _ in 0..400 {
        if record.status != agentloop_storage::model::RunStatus::Running {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        record = store.get_run(run_id).await.unwrap();
    }
    assert_eq!(
        record.status,
        agentloop_storage::model::RunStatus::Cancelled
    );

    let (status, doc) = server.get("/api/openapi.json").await;
    assert_eq!((status, doc["openapi"].as_str()), (200, Some("3.1.0")));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_posts_give_one_run_on_sqlite() {
    let (_dir, store) = common::sqlite().await;
    let server = start(store, hanging(2)).await;
    let (_, task_id) = server.project_and_task().await;
    let statuses = common::concurrent_posts(&server, &task_id, 50).await;
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1);
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 49);
    server.stop().await;
}

/// The router is the route table's: every route of the table (the one
/// the OpenAPI document is generated from) is routed with its method, so
/// a request without a token is refused by authentication, never "no such
/// route" or "method not allowed"; and a method the table does not list
/// for a path is a 405 naming the ones it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_serves_exactly_the_route_table() {
    let (_dir, store) = common::sqlite().await;
    let server = start(store, hanging(1)).await;
    let table = agentloop_server::http::routes::routes();
    let document = server.get("/api/openapi.json").await.1;
    for route in &table {
        let path = route
            .path
            .split('/')
            .map(|segment| {
                if segment.starts_with('{') {
                    "nope"
                } else {
                    segment
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        let response = server
            .client
            .request(route.method.clone(), server.url(&path))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        let (status, body) = common::decode(response).await;
        assert_ne!(status, 405, "{} {}: {body}", route.method, route.path);
        assert!(
            body["error"] != "no such route",
            "{} {} is not routed",
            route.method,
            route.path
        );
        if route.access == agentloop_server::http::route::Access::Bearer {
            assert_eq!(status, 401, "{} {}: {body}", route.method, route.path);
        }
        let method = route.method_name();
        assert!(
            ["paths", "x-websockets", "x-a2a"]
                .iter()
                .any(|section| document[*section][route.path][&method].is_object()),
            "{method} {} is routed but not documented",
            route.path
        );
    }
    let response = server
        .client
        .request(reqwest::Method::PUT, server.url("/api/projects"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 405);
    assert_eq!(
        response.headers()["allow"].to_str().unwrap(),
        "GET, POST",
        "the methods of the table"
    );
    server.stop().await;
}
