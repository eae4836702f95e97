//! The fs tool: every command, success and error, limits and options.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agentloop_tools::FsTool;
use agentloop_tools::fs::FsLimits;
use agentloop_tools::vfs::MemoryVfs;
use agentloop_types::{Tool, ToolResult, Vfs};
use serde_json::{Map, Value, json};

fn setup() -> (Arc<MemoryVfs>, FsTool) {
    let vfs = Arc::new(
        MemoryVfs::with_files([
            ("/README.md", "# Title\nhello world\n"),
            ("/src/main.js", "const a = 1;\nconsole.log(a);\n"),
            ("/src/lib/util.ts", "export const Hello = 2;\n"),
            ("/notes/todo.md", "one\ntwo\ntwo\nthree\n"),
        ])
        .unwrap(),
    );
    (vfs.clone(), FsTool::new(vfs))
}

async fn run(tool: &FsTool, input: Value) -> ToolResult {
    tool.run(input, &Map::new()).await
}

async fn ok(tool: &FsTool, input: Value) -> String {
    let r = run(tool, input.clone()).await;
    assert!(!r.is_error, "{input} failed: {}", r.content);
    r.content
}

async fn err(tool: &FsTool, input: Value) -> String {
    let r = run(tool, input.clone()).await;
    assert!(r.is_error, "{input} succeeded: {}", r.content);
    r.content
}

#[tokio::test]
async fn view_file_range_and_directory() {
    let (_, tool) = setup();
    assert_eq!(
        ok(&tool, json!({"command": "view", "path": "/notes/todo.md"})).await,
        "/notes/todo.md (lines 1-4 of 4):\n     1\tone\n     2\ttwo\n     3\ttwo\n     4\tthree\n"
    );
    assert_eq!(
        ok(
            &tool,
            json!({"command": "view", "path": "notes/todo.md", "view_range": [2, 3]})
        )
        .await,
        "/notes/todo.md (lines 2-3 of 4):\n     2\ttwo\n     3\ttwo\n"
    );
    assert_eq!(
        ok(&tool, json!({"command": "view", "path": "/"})).await,
        "Directory / (3 entries):\nREADME.md\t20\nnotes/\nsrc/\n"
    );
}

#[tokio::test]
async fn view_errors_and_cut_output() {
    let (vfs, tool) = setup();
    assert_eq!(
        err(&tool, json!({"command": "view", "path": "/nope"})).await,
        "Error: The path /nope does not exist."
    );
    assert!(
        err(
            &tool,
            json!({"command": "view", "path": "/notes/todo.md", "view_range": [3, 9]})
        )
        .await
        .contains("view_range")
    );
    assert!(
        err(&tool, json!({"command": "view", "path": "../x"}))
            .await
            .contains("'..'")
    );
    assert!(
        err(&tool, json!({"command": "view"}))
            .await
            .contains("`path`")
    );
    let big: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
    vfs.write("/big.txt", big.as_bytes()).await.unwrap();
    let small = FsTool::new(vfs.clone()).with_limits(FsLimits {
        max_view_bytes: 200,
        ..FsLimits::default()
    });
    let out = ok(&small, json!({"command": "view", "path": "/big.txt"})).await;
    assert!(
        out.contains("[Output cut at 200 bytes: showed lines 1-"),
        "{out}"
    );
    assert!(out.contains("of 1000. Use view_range to see more.]"));
    assert!(out.len() < 400);
}

#[tokio::test]
async fn create_and_overwrite() {
    let (vfs, tool) = setup();
    assert_eq!(
        ok(
            &tool,
            json!({"command": "create", "path": "/new/dir/a.txt", "file_text": "a\nb\n"})
        )
        .await,
        "File created at /new/dir/a.txt (2 lines)."
    );
    assert_eq!(
        ok(
            &tool,
            json!({"command": "create", "path": "/new/dir/a.txt", "file_text": "c"})
        )
        .await,
        "File overwritten at /new/dir/a.txt (1 line)."
    );
    assert_eq!(vfs.read_to_string("/new/dir/a.txt").await.unwrap(), "c");
    assert!(
        err(
            &tool,
            json!({"command": "create", "path": "/src", "file_text": "x"})
        )
        .await
        .contains("is a directory")
    );
    assert!(
        err(&tool, json!({"command": "create", "path": "/x"}))
            .await
            .contains("`file_text`")
    );
}

#[tokio::test]
async fn str_replace_needs_exactly_one_match() {
    let (vfs, tool) = setup();
    let out = ok(&tool, json!({"command": "str_replace", "path": "/notes/todo.md", "old_str": "one", "new_str": "ONE"})).await;
    assert!(out.starts_with("Edited /notes/todo.md."), "{out}");
    assert_eq!(
        vfs.read_to_string("/notes/todo.md").await.unwrap(),
        "ONE\ntwo\ntwo\nthree\n"
    );
    assert_eq!(
        err(&tool, json!({"command": "str_replace", "path": "/notes/todo.md", "old_str": "two", "new_str": "x"})).await,
        "Error: No replacement was performed: old_str was found 2 times in /notes/todo.md (lines 2, 3); it must occur exactly once. Include more surrounding text to make it unique."
    );
    assert!(err(&tool, json!({"command": "str_replace", "path": "/notes/todo.md", "old_str": "zzz", "new_str": "x"})).await.contains("found 0 times"));
    assert!(err(&tool, json!({"command": "str_replace", "path": "/notes/todo.md", "old_str": "", "new_str": "x"})).await.contains("must not be empty"));
    assert!(
        err(
            &tool,
            json!({"command": "str_replace", "path": "/nope", "old_str": "a"})
        )
        .await
        .contains("does not exist")
    );
    assert!(
        err(
            &tool,
            json!({"command": "str_replace", "path": "/src", "old_str": "a"})
        )
        .await
        .contains("is a directory")
    );
}

#[tokio::test]
async fn insert_at_a_line() {
    let (vfs, tool) = setup();
    assert_eq!(
        ok(&tool, json!({"command": "insert", "path": "/README.md", "insert_line": 1, "insert_text": "inserted"})).await,
        "Inserted 1 line after line 1 of /README.md."
    );
    ok(
        &tool,
        json!({"command": "insert", "path": "/README.md", "insert_line": 3, "new_str": "end"}),
    )
    .await;
    assert_eq!(
        vfs.read_to_string("/README.md").await.unwrap(),
        "# Title\ninserted\nhello world\nend\n"
    );
    assert_eq!(
        err(
            &tool,
            json!({"command": "insert", "path": "/README.md", "insert_line": 7, "insert_text": "x"})
        )
        .await,
        "Error: Invalid `insert_line` 7: it must be within [0, 4] for /README.md."
    );
    assert!(
        err(
            &tool,
            json!({"command": "insert", "path": "/nope", "insert_line": 0, "insert_text": "x"})
        )
        .await
        .contains("does not exist")
    );
    assert!(
        err(
            &tool,
            json!({"command": "insert", "path": "/README.md", "insert_text": "x"})
        )
        .await
        .contains("`insert_line`")
    );
}

#[tokio::test]
async fn delete_and_rename() {
    let (vfs, tool) = setup();
    assert_eq!(
        ok(&tool, json!({"command": "delete", "path": "/src/lib"})).await,
        "Deleted directory /src/lib."
    );
    assert!(vfs.stat("/src/lib/util.ts").await.unwrap().is_none());
    assert_eq!(
        err(&tool, json!({"command": "delete", "path": "/src/lib"})).await,
        "Error: The path /src/lib does not exist."
    );
    assert!(
        err(&tool, json!({"command": "delete", "path": "/"}))
            .await
            .contains("root")
    );
    assert_eq!(
        ok(
            &tool,
            json!({"command": "rename", "path": "/README.md", "new_path": "/docs/README.md"})
        )
        .await,
        "Renamed /README.md to /docs/README.md."
    );
    ok(
        &tool,
        json!({"command": "rename", "old_path": "/docs", "new_path": "/documents"}),
    )
    .await;
    assert!(vfs.stat("/documents/README.md").await.unwrap().is_some());
    assert_eq!(
        err(
            &tool,
            json!({"command": "rename", "path": "/src", "new_path": "/documents"})
        )
        .await,
        "Error: The destination /documents already exists."
    );
    assert!(
        err(
            &tool,
            json!({"command": "rename", "path": "/gone", "new_path": "/x"})
        )
        .await
        .contains("does not exist")
    );
    assert!(
        err(&tool, json!({"command": "rename", "path": "/src"}))
            .await
            .contains("`new_path`")
    );
}

#[tokio::test]
async fn glob() {
    let (_, tool) = setup();
    assert_eq!(
        ok(&tool, json!({"command": "glob", "pattern": "**/*.md"})).await,
        "2 files under / match `**/*.md`:\n/README.md\n/notes/todo.md\n"
    );
    assert_eq!(
        ok(
            &tool,
            json!({"command": "glob", "pattern": "*.{js,ts}", "path": "/src"})
        )
        .await,
        "1 file under /src matches `*.{js,ts}`:\n/src/main.js\n"
    );
    assert!(
        ok(
            &tool,
            json!({"command": "glob", "pattern": "/src/**/*.ts", "path": "/src"})
        )
        .await
        .contains("/src/lib/util.ts")
    );
    assert_eq!(
        ok(&tool, json!({"command": "glob", "pattern": "*.rs"})).await,
        "No files under / match `*.rs`."
    );
    assert!(
        err(&tool, json!({"command": "glob", "pattern": "[a"}))
            .await
            .contains("Invalid glob")
    );
    assert!(
        err(&tool, json!({"command": "glob"}))
            .await
            .contains("`pattern`")
    );
    assert!(
        err(
            &tool,
            json!({"command": "glob", "pattern": "*", "path": "/nope"})
        )
        .await
        .contains("does not exist")
    );
}

#[tokio::test]
async fn grep() {
    let (_, tool) = setup();
    assert_eq!(
        ok(
            &tool,
            json!({"command": "grep", "pattern": "hello", "case_insensitive": true})
        )
        .await,
        "2 match(es) for `hello` under /:\n/README.md:2: hello world\n/src/lib/util.ts:1: export const Hello = 2;\n"
    );
    assert_eq!(
        ok(
            &tool,
            json!({"command": "grep", "pattern": "const \\w+", "include": "*.js"})
        )
        .await,
        "1 match(es) for `const \\w+` under /:\n/src/main.js:1: const a = 1;\n"
    );
    assert!(
        ok(
            &tool,
            json!({"command": "grep", "pattern": "two", "path": "/notes/todo.md"})
        )
        .await
        .starts_with("2 match(es)")
    );
    assert_eq!(
        ok(&tool, json!({"command": "grep", "pattern": "nothing"})).await,
        "No matches for `nothing` under /."
    );
    assert!(
        err(&tool, json!({"command": "grep", "pattern": "("}))
            .await
            .contains("Invalid regular expression")
    );
    assert!(
        err(&tool, json!({"command": "grep"}))
            .await
            .contains("`pattern`")
    );
}

#[tokio::test]
async fn grep_output_is_cut() {
    let (vfs, _) = setup();
    let text: String = (0..50).map(|i| format!("match {i}\n")).collect();
    vfs.write("/many.txt", text.as_bytes()).await.unwrap();
    let tool = FsTool::new(vfs).with_limits(FsLimits {
        max_results: 5,
        ..FsLimits::default()
    });
    let out = ok(&tool, json!({"command": "grep", "pattern": "^match"})).await;
    assert!(
        out.contains("[Output cut: showed 5 of 50 matches."),
        "{out}"
    );
}

#[tokio::test]
async fn a_walk_stopped_early_still_lists_its_files_in_path_order() {
    let (vfs, _) = setup();
    vfs.write("/a/deep/x.md", b"x").await.unwrap();
    // Breadth first, the walk meets /a/deep/x.md after /src/main.js and
    // stops before /src/lib/util.ts.
    let tool = FsTool::new(vfs).with_limits(FsLimits {
        max_walk: 9,
        ..FsLimits::default()
    });
    assert_eq!(
        ok(&tool, json!({"command": "glob", "pattern": "**/*"})).await,
        "4 files under / match `**/*`:\n/README.md\n/a/deep/x.md\n/notes/todo.md\n/src/main.js\n\
         [Search stopped early: too many files; search a smaller directory.]\n"
    );
}

#[tokio::test]
async fn no_matches_still_says_what_was_not_searched() {
    let (vfs, _) = setup();
    let tool = FsTool::new(vfs).with_limits(FsLimits {
        max_grep_file_bytes: 5,
        max_walk: 1,
        ..FsLimits::default()
    });
    assert_eq!(
        ok(
            &tool,
            json!({"command": "grep", "pattern": "two", "path": "/notes/todo.md"})
        )
        .await,
        "No matches for `two` under /notes/todo.md.\n[1 file too large to search was skipped.]\n"
    );
    assert_eq!(
        ok(&tool, json!({"command": "glob", "pattern": "**/*.ts"})).await,
        "No files under / match `**/*.ts`.\n\
         [Search stopped early: too many files; search a smaller directory.]\n"
    );
}

#[tokio::test]
async fn read_only_option_and_validation() {
    let (_, tool) = setup();
    let mut options = Map::new();
    options.insert("read_only".into(), json!(true));
    let r = tool
        .run(json!({"command": "delete", "path": "/README.md"}), &options)
        .await;
    assert!(r.is_error);
    assert_eq!(
        r.content,
        "Error: `delete` is not allowed: the fs tool is read-only"
    );
    let r = tool
        .run(json!({"command": "view", "path": "/README.md"}), &options)
        .await;
    assert!(!r.is_error);
    options.insert("read_only".into(), json!("yes"));
    let r = tool
        .run(json!({"command": "view", "path": "/README.md"}), &options)
        .await;
    assert_eq!(
        r.content,
        "Invalid options: option `read_only` must be a boolean, got a string"
    );
    let specs = tool.options();
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].default, json!(false));
}

#[tokio::test]
async fn invalid_input() {
    let (_, tool) = setup();
    assert!(
        err(&tool, json!({"command": "chmod"}))
            .await
            .contains("unknown variant `chmod`")
    );
    assert!(
        err(&tool, json!([]))
            .await
            .contains("expected a JSON object")
    );
    let schema = tool.input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(
        schema["properties"]["command"]["enum"]
            .as_array()
            .unwrap()
            .len(),
        8
    );
}

/// Every fs tool offers one schema: a server holding thousands of runs
/// keeps one copy, not one per run.
#[test]
fn definitions_share_one_schema() {
    let (_, first) = setup();
    let (_, second) = setup();
    let (a, b) = (first.definition(), second.definition());
    assert!(Arc::ptr_eq(&a.input_schema, &b.input_schema));
    assert_eq!(*a.input_schema, first.input_schema());
}
