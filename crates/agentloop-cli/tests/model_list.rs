//! An OpenAI-compatible server (`OPENAI_BASE_URL` or `--base-url`) with no
//! model named: `run` asks its model list and uses its only model; several
//! models, none, or no list stop the run before any request, naming the
//! models and `--model`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Output, Stdio};

/// `agentloop run hi` with `args` and `env`, nothing on stdin.
async fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = common::agentloop();
    let home = tempfile::tempdir().unwrap();
    command
        .arg("run")
        .arg("hi")
        .args(args)
        .envs(env.iter().copied())
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    tokio::task::spawn_blocking(move || {
        let output = command.output().unwrap();
        drop(home);
        output
    })
    .await
    .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_only_model_of_the_server_is_used() {
    let server = common::openai::start(Some(&["llama-only"]), "from llama").await;
    let from_env = run(&[], &[("OPENAI_BASE_URL", &server.base_url)]).await;
    assert!(from_env.status.success(), "{}", stderr(&from_env));
    assert_eq!(String::from_utf8_lossy(&from_env.stdout), "from llama\n");
    assert!(
        stderr(&from_env).contains("using the model llama-only (the only one"),
        "{}",
        stderr(&from_env)
    );
    let from_flag = run(&["--base-url", &server.base_url], &[]).await;
    assert!(from_flag.status.success(), "{}", stderr(&from_flag));
    let models: Vec<String> = server
        .completions()
        .await
        .iter()
        .map(|request| request["model"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(models, ["llama-only", "llama-only"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_models_none_or_no_list_name_the_model_flag() {
    let several = common::openai::start(Some(&["llama3.2", "qwen3", "mistral"]), "x").await;
    let none = common::openai::start(Some(&[]), "x").await;
    let no_list = common::openai::start(None, "x").await;
    // (server, exit code, what the error must say)
    let cases = [
        (
            &several,
            2,
            vec!["lists 3 models: llama3.2, qwen3, mistral", "--model"],
        ),
        (&none, 2, vec!["lists none", "--model"]),
        (
            &no_list,
            1,
            vec!["model list could not be read", "404", "--model"],
        ),
    ];
    for (server, code, needles) in cases {
        let output = run(&[], &[("OPENAI_BASE_URL", &server.base_url)]).await;
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(code), "{text}");
        assert_eq!(text.lines().count(), 1, "{text}");
        for needle in needles {
            assert!(text.contains(needle), "{needle:?} not in {text}");
        }
        assert!(server.completions().await.is_empty(), "nothing was sent");
    }
    // A named model is used as given, without asking the list.
    let output = run(
        &["--model", "qwen3"],
        &[("OPENAI_BASE_URL", &several.base_url)],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(several.completions().await[0]["model"], "qwen3");
}
