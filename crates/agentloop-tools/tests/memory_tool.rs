//! The memory tool: every command, success and error, with the reference
//! texts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agentloop_tools::MemoryTool;
use agentloop_tools::vfs::MemoryVfs;
use agentloop_types::{Tool, ToolResult, Vfs};
use serde_json::{Value, json};

fn setup() -> (Arc<MemoryVfs>, MemoryTool) {
    let vfs = Arc::new(MemoryVfs::new());
    (vfs.clone(), MemoryTool::new(vfs))
}

async fn call(tool: &MemoryTool, input: Value) -> ToolResult {
    tool.run(input).await
}

async fn ok(tool: &MemoryTool, input: Value) -> String {
    let r = call(tool, input.clone()).await;
    assert!(!r.is_error, "{input} failed: {}", r.content);
    r.content
}

async fn err(tool: &MemoryTool, input: Value) -> String {
    let r = call(tool, input.clone()).await;
    assert!(r.is_error, "{input} succeeded: {}", r.content);
    r.content
}

#[tokio::test]
async fn schema_is_a_flat_object() {
    let (_, tool) = setup();
    let schema = tool.input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["command"]));
    let commands = &schema["properties"]["command"]["enum"];
    assert_eq!(
        commands,
        &json!([
            "view",
            "create",
            "str_replace",
            "insert",
            "delete",
            "rename"
        ])
    );
    assert!(schema.get("$schema").is_none());
    assert!(tool.runs_alone());
}

#[tokio::test]
async fn view_directory_and_file() {
    let (vfs, tool) = setup();
    vfs.write("/memories/notes.md", b"one\ntwo\nthree\n")
        .await
        .unwrap();
    vfs.write("/memories/projects/a.md", &[b'x'; 2048])
        .await
        .unwrap();
    vfs.write("/memories/projects/deep/b.md", b"b")
        .await
        .unwrap();
    vfs.write("/memories/.hidden", b"h").await.unwrap();
    vfs.write("/memories/node_modules/x", b"h").await.unwrap();
    let listing = ok(&tool, json!({"command": "view", "path": "/memories"})).await;
    assert_eq!(
        listing,
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n\
         4.0K\t/memories\n14\t/memories/notes.md\n4.0K\t/memories/projects\n2.0K\t/memories/projects/a.md\n4.0K\t/memories/projects/deep\n"
    );
    let file = ok(
        &tool,
        json!({"command": "view", "path": "/memories/notes.md"}),
    )
    .await;
    assert_eq!(
        file,
        "Here's the content of /memories/notes.md with line numbers:\n     1\tone\n     2\ttwo\n     3\tthree\n"
    );
    let ranged = ok(
        &tool,
        json!({"command": "view", "path": "/memories/notes.md", "view_range": [2, -1]}),
    )
    .await;
    assert!(ranged.ends_with("     2\ttwo\n     3\tthree\n"));
    let ranged = ok(
        &tool,
        json!({"command": "view", "path": "/memories/notes.md", "view_range": [2, 2]}),
    )
    .await;
    assert!(ranged.ends_with(":\n     2\ttwo\n"));
}

#[tokio::test]
async fn view_errors() {
    let (vfs, tool) = setup();
    vfs.write("/memories/notes.md", b"one\n").await.unwrap();
    assert_eq!(
        err(
            &tool,
            json!({"command": "view", "path": "/memories/nope.md"})
        )
        .await,
        "The path /memories/nope.md does not exist. Please provide a valid path."
    );
    assert!(
        err(&tool, json!({"command": "view", "path": "/etc/passwd"}))
            .await
            .contains("must be under /memories")
    );
    assert!(
        err(
            &tool,
            json!({"command": "create", "path": "/memories2/x.md", "file_text": "x"})
        )
        .await
        .contains("must be under /memories")
    );
    assert!(vfs.stat("/memories2").await.unwrap().is_none());
    assert!(
        err(
            &tool,
            json!({"command": "view", "path": "/memories/../etc"})
        )
        .await
        .contains("'..'")
    );
    assert!(
        err(
            &tool,
            json!({"command": "view", "path": "/memories/notes.md", "view_range": [5, 6]})
        )
        .await
        .contains("view_range")
    );
    assert!(
        err(
            &tool,
            json!({"command": "view", "path": "/memories/notes.md", "view_range": [1]})
        )
        .await
        .contains("view_range")
    );
    assert_eq!(
        err(&tool, json!({"command": "view"})).await,
        "Error: Missing required parameter `path` for command `view`"
    );
}

#[tokio::test]
async fn create() {
    let (vfs, tool) = setup();
    assert_eq!(
        ok(
            &tool,
            json!({"command": "create", "path": "/memories/a/b.md", "file_text": "hi\n"})
        )
        .await,
        "File created successfully at: /memories/a/b.md"
    );
    assert_eq!(
        vfs.read_to_string("/memories/a/b.md").await.unwrap(),
        "hi\n"
    );
    assert_eq!(
        err(
            &tool,
            json!({"command": "create", "path": "/memories/a/b.md", "file_text": "x"})
        )
        .await,
        "Error: File /memories/a/b.md already exists"
    );
    assert!(
        err(
            &tool,
            json!({"command": "create", "path": "/memories/c.md"})
        )
        .await
        .contains("`file_text`")
    );
    assert!(
        err(
            &tool,
            json!({"command": "create", "path": "/notes.md", "file_text": "x"})
        )
        .await
        .contains("/memories")
    );
}

#[tokio::test]
async fn str_replace() {
    let (vfs, tool) = setup();
    vfs.write("/memories/f.md", b"alpha\nbeta\nbeta\ngamma\n")
        .await
        .unwrap();
    let out = ok(&tool, json!({"command": "str_replace", "path": "/memories/f.md", "old_str": "alpha", "new_str": "ALPHA"})).await;
    assert!(
        out.starts_with("The memory file has been edited.\n"),
        "{out}"
    );
    assert!(out.contains("     1\tALPHA"));
    assert_eq!(
        vfs.read_to_string("/memories/f.md").await.unwrap(),
        "ALPHA\nbeta\nbeta\ngamma\n"
    );
    assert_eq!(
        err(&tool, json!({"command": "str_replace", "path": "/memories/f.md", "old_str": "beta", "new_str": "x"})).await,
        "No replacement was performed. Multiple occurrences of old_str `beta` in lines: 2, 3. Please ensure it is unique"
    );
    assert_eq!(
        err(&tool, json!({"command": "str_replace", "path": "/memories/f.md", "old_str": "delta", "new_str": "x"})).await,
        "No replacement was performed, old_str `delta` did not appear verbatim in /memories/f.md."
    );
    assert_eq!(
        err(&tool, json!({"command": "str_replace", "path": "/memories/g.md", "old_str": "a", "new_str": "b"})).await,
        "Error: The path /memories/g.md does not exist. Please provide a valid path."
    );
    assert!(
        err(
            &tool,
            json!({"command": "str_replace", "path": "/memories/f.md"})
        )
        .await
        .contains("`old_str`")
    );
}

#[tokio::test]
async fn insert_accepts_insert_text_and_new_str() {
    let (vfs, tool) = setup();
    vfs.write("/memories/f.md", b"a\nb\n").await.unwrap();
    assert_eq!(
        ok(&tool, json!({"command": "insert", "path": "/memories/f.md", "insert_line": 1, "insert_text": "x"})).await,
        "The file /memories/f.md has been edited."
    );
    ok(
        &tool,
        json!({"command": "insert", "path": "/memories/f.md", "insert_line": 0, "new_str": "top"}),
    )
    .await;
    assert_eq!(
        vfs.read_to_string("/memories/f.md").await.unwrap(),
        "top\na\nx\nb\n"
    );
    assert_eq!(
        err(&tool, json!({"command": "insert", "path": "/memories/f.md", "insert_line": 9, "insert_text": "x"})).await,
        "Error: Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 4]"
    );
    assert!(err(&tool, json!({"command": "insert", "path": "/memories/f.md", "insert_line": -1, "insert_text": "x"})).await.contains("[0, 4]"));
    assert_eq!(
        err(&tool, json!({"command": "insert", "path": "/memories/nope.md", "insert_line": 0, "insert_text": "x"})).await,
        "Error: The file /memories/nope.md does not exist"
    );
    assert!(
        err(
            &tool,
            json!({"command": "insert", "path": "/memories/f.md", "insert_line": 0})
        )
        .await
        .contains("`insert_text`")
    );
}

#[tokio::test]
async fn delete() {
    let (vfs, tool) = setup();
    vfs.write("/memories/d/f.md", b"a").await.unwrap();
    assert_eq!(
        ok(&tool, json!({"command": "delete", "path": "/memories/d"})).await,
        "Successfully deleted /memories/d"
    );
    assert!(vfs.stat("/memories/d/f.md").await.unwrap().is_none());
    assert_eq!(
        err(&tool, json!({"command": "delete", "path": "/memories/d"})).await,
        "Error: The file /memories/d does not exist"
    );
    assert!(
        err(&tool, json!({"command": "delete", "path": "/memories"}))
            .await
            .contains("itself")
    );
}

#[tokio::test]
async fn rename() {
    let (vfs, tool) = setup();
    vfs.write("/memories/a.md", b"a").await.unwrap();
    vfs.write("/memories/b.md", b"b").await.unwrap();
    assert_eq!(
        ok(&tool, json!({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/x/c.md"})).await,
        "Successfully renamed /memories/a.md to /memories/x/c.md"
    );
    assert_eq!(vfs.read_to_string("/memories/x/c.md").await.unwrap(), "a");
    assert_eq!(
        err(&tool, json!({"command": "rename", "old_path": "/memories/b.md", "new_path": "/memories/x/c.md"})).await,
        "Error: The destination /memories/x/c.md already exists"
    );
    assert_eq!(
        err(
            &tool,
            json!({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/z.md"})
        )
        .await,
        "Error: The file /memories/a.md does not exist"
    );
    assert!(
        err(
            &tool,
            json!({"command": "rename", "old_path": "/memories/b.md", "new_path": "/b.md"})
        )
        .await
        .contains("must be under /memories")
    );
    assert_eq!(vfs.read_to_string("/memories/b.md").await.unwrap(), "b");
    assert!(vfs.stat("/b.md").await.unwrap().is_none());
    assert!(
        err(
            &tool,
            json!({"command": "rename", "old_path": "/memories/b.md"})
        )
        .await
        .contains("`new_path`")
    );
}

#[tokio::test]
async fn invalid_input_says_what_is_wrong() {
    let (_, tool) = setup();
    assert!(
        err(&tool, json!({"command": "explode"}))
            .await
            .starts_with("Invalid input: unknown variant `explode`")
    );
    assert!(
        err(&tool, json!({"path": "/memories"}))
            .await
            .contains("missing field `command`")
    );
    assert!(
        err(&tool, json!("view"))
            .await
            .contains("expected a JSON object")
    );
    assert!(
        err(&tool, json!({"command": "insert", "insert_line": "two"}))
            .await
            .contains("invalid type")
    );
}

#[tokio::test]
async fn runs_through_the_tool_port() {
    use futures::StreamExt;
    let (_, tool) = setup();
    let tool = Arc::new(tool);
    let ctx = agentloop_types::ToolContext {
        run_id: "r".into(),
        project_id: "p".into(),
        chat_id: None,
        tool_use_id: "t".into(),
        path: Default::default(),
        options: Default::default(),
        cancel: Default::default(),
        resume: None,
        budget: None,
    };
    let out: Vec<_> = tool
        .execute(json!({"command": "view", "path": "/memories"}), ctx)
        .collect()
        .await;
    assert!(matches!(&out[..], [agentloop_types::ToolOutput::Done(r)] if !r.is_error));
}
