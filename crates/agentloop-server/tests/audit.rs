//! The audit log over HTTP: each change made through the API is read back
//! with who made it, on what, in which project and from which address;
//! reads are not recorded, a refused change is not either, and no token
//! or webhook secret ever appears in it. A user reads their own actions,
//! or every action on a project they own, and nothing of another's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use common::start;
use serde_json::{Value, json};

fn actions(log: &Value) -> Vec<(String, Option<String>)> {
    log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_owned(),
                e["target"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_is_read_back_with_who_what_and_where_and_no_secret() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([ScriptedTurn::new().hang()]);
    let server = start(store.clone(), provider).await;
    let (project_id, task_id) = server.project_and_task().await;
    let (status, _) = server
        .send(
            "PATCH",
            &format!("/api/projects/{project_id}"),
            json!({ "chain_limits": { "max_runs": 4 } }),
        )
        .await;
    assert_eq!(status, 200);
    let (status, hooks) = server
        .send(
            "PUT",
            &format!("/api/projects/{project_id}/webhooks"),
            json!({ "urls": ["https://example.com/hook"] }),
        )
        .await;
    assert_eq!(status, 200, "{hooks}");
    let secret = hooks["secret"].as_str().unwrap().to_owned();
    let (status, run) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": "implementation" }),
        )
        .await;
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().unwrap().to_owned();
    // Refused (a run is active): not recorded.
    let (status, _) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": "review" }),
        )
        .await;
    assert_eq!(status, 409);
    let (status, _) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = server
        .send(
            "PUT",
            &format!("/api/tasks/{task_id}/workflow-complete"),
            json!({ "complete": true }),
        )
        .await;
    assert_eq!(status, 200);
    // A browser signs in with the token in its body.
    let signed_in = server
        .client
        .post(server.url("/api/session"))
        .json(&json!({ "token": server.token }))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status().as_u16(), 201);
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();

    let (status, log) = server
        .get(&format!("/api/audit?project_id={project_id}"))
        .await;
    assert_eq!(status, 200, "{log}");
    assert_eq!(
        actions(&log),
        [
            ("project.create".to_owned(), Some(project_id.clone())),
            ("task.create".to_owned(), Some(task_id.clone())),
            ("project.settings".to_owned(), Some(project_id.clone())),
            ("webhooks.change".to_owned(), Some(project_id.clone())),
            ("run.start".to_owned(), Some(run_id.clone())),
            ("run.cancel".to_owned(), Some(run_id.clone())),
            ("task.mark_done".to_owned(), Some(task_id.clone())),
        ],
        "{log}"
    );
    let (_, me) = server.get("/api/me").await;
    for entry in log["entries"].as_array().unwrap() {
        assert_eq!(entry["user_id"], me["id"], "{entry}");
        assert_eq!(entry["address"], "127.0.0.1", "{entry}");
        assert_eq!(entry["project_id"], project_id.as_str(), "{entry}");
    }
    // The user's own log has the sign-in too (no project).
    let (_, own) = server.get("/api/audit").await;
    let own_actions = actions(&own);
    assert_eq!(own_actions.len(), 8, "{own}");
    assert_eq!(own_actions[7].0, "session.sign_in", "{own}");
    let text = own.to_string();
    for secret in [&server.token, &secret, &cookie] {
        assert!(
            !text.contains(secret.as_str()),
            "a secret in the log: {text}"
        );
    }
    // Filters: by time (nothing after now), by limit (the newest).
    let (_, latest) = server.get("/api/audit?limit=1").await;
    assert_eq!(actions(&latest)[0].0, "session.sign_in");
    let after = own["entries"][7]["at_ms"].as_i64().unwrap() + 1;
    let (_, none) = server.get(&format!("/api/audit?since={after}")).await;
    assert!(actions(&none).is_empty(), "{none}");
    let (status, _) = server.get("/api/audit?limit=0").await;
    assert_eq!(status, 400);

    // Another user reads neither the project's log nor ada's actions.
    let (_, bob) = agentloop_server::users::create_user(&*store, "bob")
        .await
        .unwrap();
    let as_bob = |path: String| {
        let request = server.client.get(server.url(&path)).bearer_auth(&bob);
        async move { common::decode(request.send().await.unwrap()).await }
    };
    let (status, _) = as_bob(format!("/api/audit?project_id={project_id}")).await;
    assert_eq!(status, 404);
    let (status, _) = as_bob(format!("/api/audit?user_id={}", me["id"].as_str().unwrap())).await;
    assert_eq!(status, 400);
    let (status, bobs) = as_bob("/api/audit".to_owned()).await;
    assert_eq!(status, 200);
    assert!(actions(&bobs).is_empty(), "{bobs}");
    server.stop().await;
}
