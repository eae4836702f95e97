//! `agentloop config`, `info`, `completions` and `models`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn agentloop(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    command
        .args(args)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"));
    for name in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "AGENTLOOP_MODEL",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied()).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write_config(home: &Path, body: &str) {
    let dir = home.join("config/agentloop");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), body).unwrap();
}

#[test]
fn config_path_and_show_follow_xdg_config_home() {
    let home = tempfile::tempdir().unwrap();
    let output = agentloop(home.path(), &["config", "path"], &[]);
    assert_eq!(
        text(&output.stdout).trim(),
        home.path()
            .join("config/agentloop/config.toml")
            .display()
            .to_string()
    );
    let output = agentloop(home.path(), &["config", "show"], &[]);
    assert!(output.status.success());
    assert!(text(&output.stderr).contains("no configuration file"));
    write_config(home.path(), "provider = \"gemini\"\ntools = [\"fs\"]\n");
    let output = agentloop(home.path(), &["config", "show"], &[]);
    assert_eq!(
        text(&output.stdout),
        "provider = \"gemini\"\ntools = [\"fs\"]\n"
    );
    write_config(home.path(), "provider = \"gemini\"\nmodle = \"x\"\n");
    let output = agentloop(home.path(), &["config", "show"], &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("(line 2)") && stderr.contains("unknown field `modle`"),
        "{stderr}"
    );
}

#[test]
fn the_config_file_sets_the_default_provider_and_tools() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"[{"steps": [{"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"view\", \"path\": \"/\"}"]}]},
            {"steps": [{"type": "text", "chunks": ["from the configured script"]}]}]"#,
    )
    .unwrap();
    write_config(
        home.path(),
        &format!(
            "provider = \"scripted:{}\"\ntools = [\"fs\"]\n",
            script.display()
        ),
    );
    let root = home.path().display().to_string();
    let output = agentloop(home.path(), &["run", "hi", "--root", &root], &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("✓ fs"), "{stderr}");
    let stdout = text(&output.stdout);
    assert!(stdout.contains("from the configured script"), "{stdout}");
    assert!(!text(&output.stderr).contains("demo"));
}

#[test]
fn info_names_the_version_and_the_paths() {
    let home = tempfile::tempdir().unwrap();
    let output = agentloop(home.path(), &["info"], &[]);
    assert!(output.status.success());
    let stdout = text(&output.stdout);
    assert!(stdout.starts_with(&format!("agentloop {}", env!("CARGO_PKG_VERSION"))));
    assert!(
        stdout.contains(
            &home
                .path()
                .join("config/agentloop/config.toml")
                .display()
                .to_string()
        )
    );
    assert!(
        stdout.contains(
            &home
                .path()
                .join("data/agentloop/agentloop.db")
                .display()
                .to_string()
        )
    );
    assert!(!home.path().join("data").exists(), "info creates nothing");
}

#[test]
fn completions_are_printed_for_each_shell() {
    let home = tempfile::tempdir().unwrap();
    for (shell, marker) in [
        ("bash", "_agentloop()"),
        ("zsh", "#compdef agentloop"),
        ("fish", "complete -c agentloop"),
    ] {
        let output = agentloop(home.path(), &["completions", shell], &[]);
        assert!(output.status.success());
        assert!(text(&output.stdout).contains(marker), "{shell}");
    }
    let output = agentloop(home.path(), &["completions", "tcsh"], &[]);
    assert_eq!(output.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_lists_openai_compatible_and_anthropic_models() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .and(header("authorization", "Bearer sk-test"))
        .respond_with(ResponseTemplate::new(200).set_body_string(
            r#"{"object": "list", "data": [{"id": "llama3.2", "object": "model"}, {"id": "qwen3", "object": "model"}]}"#,
        ))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/anthropic/v1/models"))
        .and(header("x-api-key", "ak-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(200).set_body_string(
            r#"{"data": [{"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5"}], "has_more": false}"#,
        ))
        .mount(&server)
        .await;
    let home = tempfile::tempdir().unwrap();
    let openai = format!("{}/v1", server.uri());
    let output = agentloop(
        home.path(),
        &["models"],
        &[("OPENAI_BASE_URL", &openai), ("OPENAI_API_KEY", "sk-test")],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "llama3.2\nqwen3\n");
    let anthropic = format!("{}/anthropic/v1", server.uri());
    let output = agentloop(
        home.path(),
        &[
            "models",
            "--provider",
            "anthropic",
            "--base-url",
            &anthropic,
        ],
        &[("ANTHROPIC_API_KEY", "ak-test")],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "claude-sonnet-4-5\n");
    // A refused key is one line naming the address and the status.
    let output = agentloop(
        home.path(),
        &[
            "models",
            "--provider",
            "anthropic",
            "--base-url",
            &anthropic,
        ],
        &[("ANTHROPIC_API_KEY", "wrong")],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("/anthropic/v1/models answered 404"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_come_from_a_private_key_file_and_never_from_a_readable_one() {
    use std::os::unix::fs::PermissionsExt;
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .and(header("authorization", "Bearer sk-from-file"))
        .respond_with(ResponseTemplate::new(200).set_body_string(
            r#"{"object": "list", "data": [{"id": "from-the-key-file", "object": "model"}]}"#,
        ))
        .mount(&server)
        .await;
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("config/agentloop");
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("keys.env");
    std::fs::write(
        &keys,
        format!(
            "# keys for agentloop\nOPENAI_API_KEY=sk-from-file\nOPENAI_BASE_URL={}/v1\n",
            server.uri()
        ),
    )
    .unwrap();

    // Readable by others: refused, saying how to fix it, key not shown.
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = agentloop(home.path(), &["models"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("chmod 600"), "{stderr}");
    assert!(!stderr.contains("sk-from-file"), "{stderr}");
    // `info` still works, names the file, and says why it is not used
    // with the fix `run` gives.
    let output = agentloop(home.path(), &["info"], &[]);
    assert!(output.status.success());
    let shown = text(&output.stdout);
    assert!(shown.contains("keys.env"));
    let provider = shown.lines().find(|l| l.starts_with("provider:")).unwrap();
    assert!(
        provider.contains("none usable: the key file")
            && provider.contains("can be read by others (mode 644); run: chmod 600"),
        "{provider}"
    );

    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
    let output = agentloop(home.path(), &["info"], &[]);
    assert!(
        text(&output.stdout)
            .contains("provider: from OPENAI_API_KEY (key file), OPENAI_BASE_URL (key file)"),
        "{}",
        text(&output.stdout)
    );
    let output = agentloop(home.path(), &["models"], &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "from-the-key-file\n");
    // The environment wins over the file.
    let output = agentloop(home.path(), &["models"], &[("OPENAI_API_KEY", "sk-env")]);
    assert!(
        !output.status.success(),
        "the mock only knows the file's key"
    );
}

#[test]
fn models_with_no_key_suggests_what_models_accepts() {
    let home = tempfile::tempdir().unwrap();
    let output = agentloop(home.path(), &["models"], &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("no model provider is configured") && stderr.contains("--base-url"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("scripted"),
        "models takes no script: {stderr}"
    );
    // What it suggests is what it takes.
    let output = agentloop(
        home.path(),
        &["models", "--provider", "scripted:x.json"],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
}
