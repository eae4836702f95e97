//! A person in the loop on the command line: `run` and `chat` ask before a
//! call that needs approval when stdin is a terminal (a pty here), answer
//! a question from the next line, and reject such calls without a terminal
//! (plain pipes). The answer alone goes to stdout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::piped;
use rexpect::process::wait::WaitStatus;
use rexpect::session::{PtySession, spawn_command};

/// One turn writing `/notes.txt`, then a closing text.
const WRITE: &str = r#"[
  {"steps": [{"type": "text", "chunks": ["I will write it."]}, {"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/notes.txt\", ", "\"file_text\": \"hello\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Done."]}]}
]"#;

/// `agentloop` with a scripted model, a tool root and a clean environment.
fn command(home: &Path, script: &str, args: &[&str]) -> Command {
    let script_path = home.join("script.json");
    std::fs::write(&script_path, script).unwrap();
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    command
        .args(args)
        .args(["--provider", &format!("scripted:{}", script_path.display())])
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TERM", "xterm")
        .env("NO_COLOR", "1")
        .env_remove("EDITOR")
        .env_remove("VISUAL")
        .env_remove("AGENTLOOP_MODEL");
    command
}

fn run_args(home: &Path) -> Vec<String> {
    let root = home.join("root").display().to_string();
    ["run", "write notes", "--tools", "fs", "--root", &root]
        .map(str::to_owned)
        .to_vec()
}

fn on_a_terminal(command: Command) -> PtySession {
    // Generous: a slow CI machine, not a performance bound.
    spawn_command(command, Some(30_000)).unwrap()
}

fn exit_code(p: &PtySession) -> i32 {
    match p.process.wait().unwrap() {
        WaitStatus::Exited(_, code) => code,
        other => panic!("not exited: {other:?}"),
    }
}

fn args(home: &Path, extra: &[&str]) -> Vec<String> {
    let mut all = run_args(home);
    all.extend(extra.iter().map(|s| (*s).to_owned()));
    all
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn yes_runs_the_write_after_showing_it() {
    let home = tempfile::tempdir().unwrap();
    let all = run_args(home.path());
    let mut p = on_a_terminal(command(home.path(), WRITE, &strs(&all)));
    let shown = p.exp_string("[e]dit arguments: ").unwrap();
    assert!(shown.contains("? fs create"), "{shown:?}");
    assert!(shown.contains("fs calls with command create need approval"));
    assert!(shown.contains("  path: /notes.txt"), "{shown:?}");
    assert!(shown.contains("  file_text: hello"), "{shown:?}");
    assert!(
        !home.path().join("root/notes.txt").exists(),
        "nothing is written before the answer"
    );
    p.send_line("y").unwrap();
    p.exp_string("File created at /notes.txt").unwrap();
    p.exp_string("Done.").unwrap();
    p.exp_eof().unwrap();
    assert_eq!(exit_code(&p), 0);
    let written = std::fs::read_to_string(home.path().join("root/notes.txt")).unwrap();
    assert_eq!(written, "hello");
}

#[test]
fn always_approves_the_rest_of_the_tool_calls() {
    let home = tempfile::tempdir().unwrap();
    let script = r#"[
      {"steps": [
        {"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/a.txt\", \"file_text\": \"a\"}"]},
        {"type": "tool_call", "id": "t2", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/b.txt\", \"file_text\": \"b\"}"]}
      ]},
      {"steps": [{"type": "tool_call", "id": "t3", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/c.txt\", \"file_text\": \"c\"}"]}]},
      {"steps": [{"type": "text", "chunks": ["All three."]}]}
    ]"#;
    let all = run_args(home.path());
    let mut p = on_a_terminal(command(home.path(), script, &strs(&all)));
    p.exp_string("/a.txt").unwrap();
    p.exp_string("[e]dit arguments: ").unwrap();
    p.send_line("a").unwrap();
    let rest = p.exp_string("All three.").unwrap();
    assert!(
        !rest.contains("allow?"),
        "nothing else is asked after `a`: {rest:?}"
    );
    p.exp_eof().unwrap();
    assert_eq!(exit_code(&p), 0);
    for name in ["a", "b", "c"] {
        let written = std::fs::read_to_string(home.path().join(format!("root/{name}.txt")));
        assert_eq!(written.unwrap(), name);
    }
}

#[test]
fn edit_changes_the_arguments_before_the_call_runs() {
    let home = tempfile::tempdir().unwrap();
    let all = run_args(home.path());
    let mut p = on_a_terminal(command(home.path(), WRITE, &strs(&all)));
    p.exp_string("[e]dit arguments: ").unwrap();
    p.send_line("e").unwrap();
    p.exp_string("arguments (JSON object): ").unwrap();
    // The line holds the current arguments; Ctrl-U clears it.
    p.send_control('u').unwrap();
    p.send_line("[1, 2]").unwrap();
    p.exp_string("must be a JSON object").unwrap();
    p.exp_string("arguments (JSON object): ").unwrap();
    p.send_control('u').unwrap();
    p.send_line(r#"{"command": "create", "path": "/edited.txt", "file_text": "hello"}"#)
        .unwrap();
    p.exp_string("File created at /edited.txt").unwrap();
    p.exp_eof().unwrap();
    assert_eq!(exit_code(&p), 0);
    assert!(home.path().join("root/edited.txt").exists());
    assert!(!home.path().join("root/notes.txt").exists());
}

const TOOL_USE: &str = "event: message_start
data: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}

event: content_block_start
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"fs\",\"input\":{}}}

event: content_block_delta
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": \\\"delete\\\", \\\"path\\\": \\\"/keep.txt\\\"}\"}}

event: content_block_stop
data: {\"type\":\"content_block_stop\",\"index\":0}

event: message_delta
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":2}}

event: message_stop
data: {\"type\":\"message_stop\"}

";

const TEXT: &str = "event: message_start
data: {\"type\":\"message_start\",\"message\":{\"id\":\"m2\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}

event: content_block_start
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}

event: content_block_delta
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Kept it.\"}}

event: content_block_stop
data: {\"type\":\"content_block_stop\",\"index\":0}

event: message_delta
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}

event: message_stop
data: {\"type\":\"message_stop\"}

";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_with_a_reason_reaches_the_model_in_its_next_request() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    let sse = |body: &str| {
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(body.to_owned())
    };
    Mock::given(method("POST"))
        .respond_with(sse(TOOL_USE))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse(TEXT))
        .mount(&server)
        .await;
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("keep.txt"), "precious").unwrap();
    let base = server.uri();
    let home_path = home.path().to_owned();
    let code = tokio::task::spawn_blocking(move || {
        let root = home_path.join("root").display().to_string();
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
        command
            .args(["run", "tidy up", "--tools", "fs", "--root", &root])
            .args(["--provider", "anthropic", "--base-url", &base])
            .env("ANTHROPIC_API_KEY", "sk-test")
            .env("HOME", &home_path)
            .env("XDG_DATA_HOME", home_path.join("data"))
            .env("XDG_CONFIG_HOME", home_path.join("config"))
            .env("TERM", "xterm")
            .env("NO_COLOR", "1");
        let mut p = on_a_terminal(command);
        p.exp_string("? fs delete").unwrap();
        p.exp_string("[e]dit arguments: ").unwrap();
        p.send_line("n that file holds my thesis").unwrap();
        p.exp_string("Kept it.").unwrap();
        p.exp_eof().unwrap();
        exit_code(&p)
    })
    .await
    .unwrap();
    assert_eq!(code, 0);
    assert_eq!(
        std::fs::read_to_string(root.join("keep.txt")).unwrap(),
        "precious"
    );
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let second: serde_json::Value = serde_json::from_slice(&requests[1].body).unwrap();
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|block| block["type"] == "tool_result")
        .expect("the second request carries the call's result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert_eq!(result["is_error"], true);
    let text = result["content"].to_string();
    assert!(text.contains("that file holds my thesis"), "{result}");
}

#[test]
fn without_a_terminal_the_write_is_rejected_and_the_run_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let all = run_args(home.path());
    let output = piped(command(home.path(), WRITE, &strs(&all)), "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!home.path().join("root/notes.txt").exists());
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Done.\n");
    insta::assert_snapshot!("piped_run_rejects_a_write", stderr);
}

#[test]
fn approve_lets_the_write_run_without_asking() {
    let home = tempfile::tempdir().unwrap();
    let all = args(home.path(), &["--approve", "fs"]);
    let output = piped(command(home.path(), WRITE, &strs(&all)), "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("needs approval"), "{stderr}");
    let written = std::fs::read_to_string(home.path().join("root/notes.txt")).unwrap();
    assert_eq!(written, "hello");
}

#[test]
fn the_configuration_sets_the_default_approve() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config/agentloop");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "approve = \"all\"\n").unwrap();
    let all = run_args(home.path());
    let output = piped(command(home.path(), WRITE, &strs(&all)), "");
    assert_eq!(output.status.code(), Some(0));
    assert!(home.path().join("root/notes.txt").exists());
    // The flag wins over the file.
    std::fs::remove_file(home.path().join("root/notes.txt")).unwrap();
    let all = args(home.path(), &["--approve", "none"]);
    let output = piped(command(home.path(), WRITE, &strs(&all)), "");
    assert_eq!(output.status.code(), Some(0));
    assert!(!home.path().join("root/notes.txt").exists());
}

#[test]
fn a_redirected_stdout_holds_only_the_answer_even_on_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let answer = home.path().join("answer.txt");
    let all = args(home.path(), &["--approve", "all"]);
    let mut inner = command(home.path(), WRITE, &strs(&all));
    inner.stdout(std::fs::File::create(&answer).unwrap());
    let mut p = on_a_terminal(inner);
    let shown = p.exp_eof().unwrap();
    assert!(shown.contains("File created"), "{shown:?}");
    assert!(shown.contains("complete"), "{shown:?}");
    assert_eq!(exit_code(&p), 0);
    assert_eq!(std::fs::read_to_string(&answer).unwrap(), "Done.\n");
}

const QUESTION: &str = r#"[
  {"steps": [{"type": "tool_call", "id": "q1", "name": "ask_user", "fragments": ["{\"question\": \"Which colour?\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Blue it is."]}]},
  {"steps": [{"type": "text", "chunks": ["Still blue."]}]}
]"#;

fn chat_args<'a>(db: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["chat", "--db", db, "--tools", "ask_user"];
    all.extend_from_slice(extra);
    all
}

/// The stored history of a chat, one compact line a message.
fn history(db: &str, chat: &str) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = agentloop_storage::open_store(db).await.unwrap();
        let messages = store.list_messages(chat).await.unwrap();
        messages
            .iter()
            .map(|m| {
                // `role id: blocks`, without the (random) message id.
                let line = agentloop_types::transcript::render_message(&m.message);
                let (head, blocks) = line.split_once(": ").unwrap();
                format!("{}: {blocks}", head.split(' ').next().unwrap())
            })
            .collect()
    })
}

#[test]
fn chat_answers_a_question_from_the_next_line_and_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("chats.db").display().to_string();
    let mut p = on_a_terminal(command(
        home.path(),
        QUESTION,
        &chat_args(&db, &["--chat", "colours"]),
    ));
    p.exp_string("> ").unwrap();
    p.send_line("paint the shed").unwrap();
    p.exp_string("? Which colour?").unwrap();
    p.exp_string("answer> ").unwrap();
    p.send_line("blue").unwrap();
    p.exp_string("Blue it is.").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("and the door?").unwrap();
    p.exp_string("Still blue.").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("/exit").unwrap();
    p.exp_eof().unwrap();
    assert_eq!(exit_code(&p), 0);
    insta::assert_snapshot!(
        "chat_answered_question_history",
        history(&db, "colours").join("\n")
    );
}

#[test]
fn a_chat_left_waiting_is_continued_with_its_question_asked_again() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("chats.db").display().to_string();
    // Piped: the question has no line left to answer it.
    let output = piped(
        command(home.path(), QUESTION, &chat_args(&db, &["--chat", "later"])),
        "paint the shed\n",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("? Which colour?"));
    assert!(stderr.contains("continue it with --continue"), "{stderr}");

    // On a terminal, `--continue` asks it again first; the answer resumes
    // the run in place (the script's first turn is not played again).
    let resumed = r#"[{"steps": [{"type": "text", "chunks": ["Green, then."]}]}]"#;
    let mut p = on_a_terminal(command(
        home.path(),
        resumed,
        &chat_args(&db, &["--continue"]),
    ));
    p.exp_string("? Which colour?").unwrap();
    p.exp_string("answer> ").unwrap();
    p.send_line("green").unwrap();
    p.exp_string("Green, then.").unwrap();
    p.exp_string("> ").unwrap();
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
    assert_eq!(exit_code(&p), 0);
    let lines = history(&db, "later");
    assert!(lines.iter().any(|l| l.contains("green")), "{lines:#?}");
}

#[test]
fn piped_chat_answers_a_question_with_the_next_line_and_rejects_approvals() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("chats.db").display().to_string();
    let root = home.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.display().to_string();
    let script = r#"[
      {"steps": [{"type": "tool_call", "id": "q1", "name": "ask_user", "fragments": ["{\"question\": \"Which file?\"}"]}]},
      {"steps": [{"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/x.txt\", \"file_text\": \"x\"}"]}]},
      {"steps": [{"type": "text", "chunks": ["Could not write it."]}]}
    ]"#;
    let output = piped(
        command(
            home.path(),
            script,
            &[
                "chat",
                "--db",
                &db,
                "--chat",
                "p",
                "--tools",
                "ask_user,fs",
                "--root",
                &root,
            ],
        ),
        "write a file\nx.txt\n",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("fs create needs approval; rerun with --approve fs or in a terminal"),
        "{stderr}"
    );
    assert!(!home.path().join("root/x.txt").exists());
    insta::assert_snapshot!("piped_chat_history", history(&db, "p").join("\n"));
}

#[test]
fn edit_uses_the_editor_when_one_is_set() {
    let home = tempfile::tempdir().unwrap();
    // An "editor" that renames the file the call writes.
    let editor = home.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/notes.txt/from-editor.txt/' \"$1\"\n",
    )
    .unwrap();
    let all = run_args(home.path());
    let mut inner = command(home.path(), WRITE, &strs(&all));
    inner.env("EDITOR", format!("sh {}", editor.display()));
    let mut p = on_a_terminal(inner);
    p.exp_string("[e]dit arguments: ").unwrap();
    p.send_line("e").unwrap();
    p.exp_string("File created at /from-editor.txt").unwrap();
    p.exp_eof().unwrap();
    assert_eq!(exit_code(&p), 0);
    assert!(home.path().join("root/from-editor.txt").exists());
    assert!(!home.path().join("root/notes.txt").exists());
}

#[test]
fn ctrl_d_at_the_prompt_leaves_the_run_waiting_and_ctrl_c_cancels_it() {
    let home = tempfile::tempdir().unwrap();
    let all = run_args(home.path());
    let mut p = on_a_terminal(command(home.path(), WRITE, &strs(&all)));
    p.exp_string("[e]dit arguments: ").unwrap();
    p.send_control('d').unwrap();
    p.exp_string("waiting for approval of fs").unwrap();
    p.exp_eof().unwrap();
    assert_eq!(exit_code(&p), 4);

    let mut p = on_a_terminal(command(home.path(), WRITE, &strs(&all)));
    p.exp_string("[e]dit arguments: ").unwrap();
    p.send_control('c').unwrap();
    p.exp_string("cancelled").unwrap();
    p.exp_eof().unwrap();
    assert_eq!(exit_code(&p), 130);
    assert!(!home.path().join("root/notes.txt").exists());
}

#[test]
fn the_chat_repl_asks_inline_and_always_holds_for_the_session() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("chats.db").display().to_string();
    let root = home.path().join("root").display().to_string();
    let script = r#"[
      {"steps": [{"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/one.txt\", \"file_text\": \"1\"}"]}]},
      {"steps": [{"type": "text", "chunks": ["Wrote one."]}]},
      {"steps": [{"type": "tool_call", "id": "t2", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/two.txt\", \"file_text\": \"2\"}"]}]},
      {"steps": [{"type": "text", "chunks": ["Wrote two."]}]}
    ]"#;
    let mut p = on_a_terminal(command(
        home.path(),
        script,
        &["chat", "--db", &db, "--tools", "fs", "--root", &root],
    ));
    p.exp_string("> ").unwrap();
    p.send_line("write one").unwrap();
    p.exp_string("? fs create").unwrap();
    p.exp_string("[e]dit arguments: ").unwrap();
    p.send_line("a").unwrap();
    p.exp_string("Wrote one.").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("write two").unwrap();
    let shown = p.exp_string("Wrote two.").unwrap();
    assert!(!shown.contains("allow?"), "asked again: {shown:?}");
    assert!(shown.contains("approved: always for fs"), "{shown:?}");
    p.exp_string("> ").unwrap();
    p.send_line("/exit").unwrap();
    p.exp_eof().unwrap();
    assert_eq!(exit_code(&p), 0);
    assert!(home.path().join("root/one.txt").exists());
    assert!(home.path().join("root/two.txt").exists());
}

#[test]
fn a_piped_run_shows_the_question_it_cannot_ask_line_by_line() {
    let home = tempfile::tempdir().unwrap();
    let script = r#"[
      {"steps": [{"type": "tool_call", "id": "q1", "name": "ask_user", "fragments": ["{\"question\": \"Which colour?\", \"choices\": [\"red\", \"blue\"]}"]}]},
      {"steps": [{"type": "text", "chunks": ["No answer, no colour."]}]}
    ]"#;
    let output = piped(
        command(
            home.path(),
            script,
            &["run", "Paint it", "--tools", "ask_user"],
        ),
        "",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("It asked:\nWhich colour?\nChoices:\n- red\n- blue\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("\\n"), "no escaped line break: {stderr}");
}

/// A question and, after it, a text that quotes the tool's result.
const ASKS_UNNAMED: &str = r#"[
  {"steps": [{"type": "tool_call", "id": "q1", "name": "ask_user", "fragments": ["{\"question\": \"Which colour?\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Blue it is."]}]}
]"#;

#[test]
fn on_a_terminal_the_model_may_ask_without_tools_naming_ask_user() {
    let home = tempfile::tempdir().unwrap();
    let mut p = on_a_terminal(command(home.path(), ASKS_UNNAMED, &["run", "Paint it"]));
    p.exp_string("? Which colour?").unwrap();
    p.exp_string("answer> ").unwrap();
    p.send_line("blue").unwrap();
    let shown = p.exp_eof().unwrap();
    assert!(shown.contains("Blue it is."), "{shown:?}");
    assert!(!shown.contains("Unknown tool"), "{shown:?}");
    assert_eq!(exit_code(&p), 0);
}

#[test]
fn on_a_terminal_no_ask_user_leaves_the_question_unoffered() {
    let home = tempfile::tempdir().unwrap();
    let mut p = on_a_terminal(command(
        home.path(),
        ASKS_UNNAMED,
        &["run", "Paint it", "--no-ask-user"],
    ));
    let shown = p.exp_eof().unwrap();
    assert!(shown.contains("Unknown tool: ask_user"), "{shown:?}");
    assert!(!shown.contains("answer> "), "{shown:?}");
    assert_eq!(exit_code(&p), 0);
}

#[test]
fn without_a_terminal_ask_user_is_offered_only_when_named() {
    let home = tempfile::tempdir().unwrap();
    let output = piped(command(home.path(), ASKS_UNNAMED, &["run", "Paint it"]), "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Not offered: the engine answers the call as one to an unknown tool,
    // and nothing is shown as a question no one could answer.
    assert!(stderr.contains("Unknown tool: ask_user"), "{stderr}");
    assert!(!stderr.contains("It asked:"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Blue it is.\n");
    // With --json on a terminal neither: JSON lines are for a program.
    let mut p = on_a_terminal(command(
        home.path(),
        ASKS_UNNAMED,
        &["run", "Paint it", "--json"],
    ));
    let shown = p.exp_eof().unwrap();
    assert!(shown.contains("Unknown tool: ask_user"), "{shown:?}");
    assert!(!shown.contains("answer> "), "{shown:?}");
}

#[test]
fn a_chat_on_a_terminal_may_ask_without_tools_naming_ask_user() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("chats.db").display().to_string();
    let mut p = on_a_terminal(command(
        home.path(),
        QUESTION,
        &["chat", "--db", &db, "--chat", "colours"],
    ));
    p.exp_string("> ").unwrap();
    p.send_line("paint the shed").unwrap();
    p.exp_string("? Which colour?").unwrap();
    p.exp_string("answer> ").unwrap();
    p.send_line("blue").unwrap();
    p.exp_string("Blue it is.").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("/exit").unwrap();
    p.exp_eof().unwrap();
    assert_eq!(exit_code(&p), 0);
    assert!(
        history(&db, "colours")
            .iter()
            .any(|line| line.contains("blue")),
        "{:?}",
        history(&db, "colours")
    );
}
