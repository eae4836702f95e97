//! The js tool: results, console, errors, library loading, kept state, and
//! the sandbox holding against hostile code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_tools::JsTool;
use agentloop_tools::js::{JsError, JsLimits, JsOutcome};
use agentloop_tools::vfs::MemoryVfs;
use agentloop_types::{CancellationToken, Tool, ToolContext, ToolOutput, ToolResult};
use futures::StreamExt;
use serde_json::{Map, Value, json};

fn limits() -> JsLimits {
    JsLimits {
        time: Duration::from_millis(300),
        memory: 16 * 1024 * 1024,
        ..JsLimits::default()
    }
}

fn tool() -> JsTool {
    JsTool::without_library().with_limits(limits())
}

fn context(options: Value, chat: &str) -> ToolContext {
    ToolContext {
        run_id: "run".into(),
        project_id: "p".into(),
        chat_id: Some(chat.into()),
        tool_use_id: "call".into(),
        path: Default::default(),
        options: options.as_object().cloned().unwrap_or_default(),
        cancel: CancellationToken::new(),
        resume: None,
        budget: None,
    }
}

async fn outcome(tool: &JsTool, code: &str) -> JsOutcome {
    tool.run_code(code.into(), false, true, "k", CancellationToken::new())
        .await
}

async fn value(tool: &JsTool, code: &str) -> Option<String> {
    let out = outcome(tool, code).await;
    out.result.unwrap_or_else(|e| panic!("{code}: {e}"))
}

async fn error(tool: &JsTool, code: &str) -> JsError {
    match outcome(tool, code).await.result {
        Err(e) => e,
        Ok(v) => panic!("{code} returned {v:?}"),
    }
}

async fn call(tool: &JsTool, input: Value, options: Value) -> ToolResult {
    tool.run(input, &context(options, "chat")).await
}

#[tokio::test]
async fn returns_the_last_expression_as_json() {
    let t = tool();
    assert_eq!(value(&t, "1 + 2").await.as_deref(), Some("3"));
    assert_eq!(
        value(&t, "({a: [1, 'x'], b: null})").await.as_deref(),
        Some(r#"{"a":[1,"x"],"b":null}"#)
    );
    assert_eq!(
        value(&t, "let s = 'a'; s + 'b'").await.as_deref(),
        Some(r#""ab""#)
    );
    assert_eq!(value(&t, "undefined").await, None);
    assert_eq!(value(&t, "(() => 1)").await, None);
    assert_eq!(
        value(&t, "({big: 10n ** 20n})").await.as_deref(),
        Some(r#"{"big":"100000000000000000000"}"#)
    );
    assert_eq!(value(&t, "'\\uD800'").await.as_deref(), Some(r#""\ud800""#));
    assert!(
        matches!(error(&t, "let o = {}; o.self = o; o").await, JsError::Thrown { name, .. } if name == "TypeError")
    );
}

#[tokio::test]
async fn awaits_promises_and_top_level_await() {
    let t = tool();
    assert_eq!(
        value(&t, "Promise.resolve({ok: true})").await.as_deref(),
        Some(r#"{"ok":true}"#)
    );
    assert_eq!(
        value(&t, "async function f() { return 7 } f()")
            .await
            .as_deref(),
        Some("7")
    );
    assert_eq!(
        value(&t, "const x = await Promise.resolve(5);\nx * 2")
            .await
            .as_deref(),
        Some("10")
    );
    assert_eq!(
        error(&t, "Promise.reject(new RangeError('nope'))")
            .await
            .to_string(),
        "RangeError: nope (line 1)"
    );
    assert_eq!(
        error(&t, "new Promise(() => {})").await,
        JsError::NeverSettled
    );
}

#[tokio::test]
async fn captures_console() {
    let t = tool();
    let out = outcome(
        &t,
        "console.log('a', 1, {b: 2}); console.error('bad'); console.warn('w'); 'done'",
    )
    .await;
    let text = out.render();
    assert_eq!(
        text,
        "Result: \"done\"\nConsole:\na 1 {\"b\":2}\n[error] bad\n[error] w\n"
    );
    let out = outcome(
        &t,
        "console.log('\\uD800', 10n, [1, , 3], () => 1); console = null; 1",
    )
    .await;
    assert_eq!(out.result, Ok(Some("1".into())));
    assert_eq!(
        out.console[0].text,
        "\u{FFFD} 10n [1,null,3] [Function anonymous]"
    );
    let small = JsTool::without_library().with_limits(JsLimits {
        max_output: 20,
        ..limits()
    });
    let out = outcome(
        &small,
        "for (let i = 0; i < 100; i++) console.log('line ' + i); 1",
    )
    .await;
    assert!(out.console_truncated);
    assert!(
        out.render()
            .contains("[Console output cut at the output limit.]")
    );
    let out = outcome(&small, "'x'.repeat(100)").await;
    assert!(
        out.result
            .unwrap()
            .unwrap()
            .contains("[result cut at 20 of 102 bytes]")
    );
}

#[tokio::test]
async fn thrown_errors_have_name_message_and_line() {
    let t = tool();
    assert_eq!(
        error(&t, "let a = 1;\nlet b = 2;\nnull.foo")
            .await
            .to_string(),
        "TypeError: cannot read property 'foo' of null (line 3)"
    );
    assert_eq!(
        error(&t, "function f() {\n  throw new Error('boom');\n}\nf()")
            .await
            .to_string(),
        "Error: boom (line 2)"
    );
    assert_eq!(
        error(&t, "throw 'plain'").await.to_string(),
        "Uncaught: plain"
    );
    assert_eq!(
        error(&t, "throw {code: 1}").await.to_string(),
        r#"Uncaught: {"code":1}"#
    );
    assert!(
        matches!(error(&t, "function (").await, JsError::Thrown { name, .. } if name == "SyntaxError")
    );
}

#[tokio::test]
async fn infinite_loops_stop_at_the_time_limit() {
    let t = tool();
    for code in [
        "while (true) {}",
        "while (true) { try { while (true) {} } catch (e) {} }",
        "for (;;) { try { throw 1 } finally { continue } }",
        "/(a+)+$/.test('a'.repeat(40) + 'b')",
        "async function f() { while (true) await null } f()",
    ] {
        let started = Instant::now();
        let err = error(&t, code).await;
        assert_eq!(err, JsError::Timeout(Duration::from_millis(300)), "{code}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{code} took {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn memory_bombs_stop_at_the_limit() {
    let t = tool();
    for code in [
        "let a = []; while (true) a.push(new Array(100000).fill(1))",
        "let s = 'x'; while (true) s += s",
        "new ArrayBuffer(1024 * 1024 * 1024)",
    ] {
        let err = error(&t, code).await;
        assert!(
            matches!(err, JsError::MemoryLimit(_))
                || matches!(&err, JsError::Thrown { name, .. } if name == "RangeError"),
            "{code}: {err:?}"
        );
    }
    // Bombs that grow slowly may meet the time limit first; either way they stop.
    for code in [
        "let o = {}; for (let i = 0; ; i++) o['k' + i] = [i, i, i, i]",
        "let p = Promise.resolve(); for (;;) p = p.then(() => {})",
        "let m = new Map(); for (let i = 0; ; i++) m.set(i, 'v' + i)",
    ] {
        let err = error(&t, code).await;
        assert!(
            matches!(err, JsError::MemoryLimit(_) | JsError::Timeout(_)),
            "{code}: {err:?}"
        );
    }
    assert_eq!(
        error(&t, "let s = 'x'; while (true) s += s")
            .await
            .to_string(),
        "Memory limit exceeded: the script tried to use more than 16 MiB"
    );
}

#[tokio::test]
async fn huge_array_lengths_cannot_stall_built_ins() {
    let t = tool();
    for code in [
        "Array.prototype.indexOf.call({length: 2**53 - 1}, 1)",
        "Array.prototype.includes.call({length: 2**53 - 1}, 1)",
        "Array.prototype.sort.call({length: 2**32 - 1})",
        "Array.prototype.join.call({length: 2**32 - 1})",
        "Array.prototype.fill.call({length: 2**53 - 1}, 1)",
        "Array.prototype.forEach.call({length: 2**53 - 1}, x => x)",
        "Array.prototype.unshift.call({length: 2**32}, 1)",
        "const a = []; a.length = 2**32 - 1; a.lastIndexOf(1)",
        "const a = []; a.length = 2**32 - 1; a.reverse()",
        "const a = []; a.length = 2**32 - 1; String(a)",
        "const a = []; a.length = 2**32 - 1; a.flat()",
        "[].concat({length: 2**53 - 1, [Symbol.isConcatSpreadable]: true})",
    ] {
        let err = error(&t, code).await;
        assert!(
            matches!(&err, JsError::Thrown { name, message, line: Some(1), .. } if name == "RangeError" && message.contains("sandbox limit")),
            "{code}: {err:?}"
        );
    }
    assert_eq!(
        value(
            &t,
            "[3, 1, 2].sort().concat([4], 5).map(x => x * 2).filter(x => x > 2).join('-')"
        )
        .await
        .as_deref(),
        Some(r#""4-6-8-10""#)
    );
    assert_eq!(
        value(&t, "[Array.prototype.map.name, Array.prototype.map.length]")
            .await
            .as_deref(),
        Some(r#"["map",1]"#)
    );
    let err = error(
        &t,
        "Atomics.wait(new Int32Array(new SharedArrayBuffer(16)), 0, 0)",
    )
    .await;
    assert!(matches!(err, JsError::Thrown { .. }), "{err:?}");
}

#[tokio::test]
async fn deep_recursion_is_caught() {
    // What is checked here is the stack guard, not the clock: a loaded
    // machine must not turn a RangeError into a timeout.
    let t = JsTool::without_library().with_limits(JsLimits {
        time: Duration::from_secs(20),
        ..limits()
    });
    let err = error(&t, "function f(n) { return f(n + 1) + 1 } f(0)").await;
    assert!(
        matches!(&err, JsError::Thrown { name, message, .. } if name == "RangeError" && message.contains("stack")),
        "{err:?}"
    );
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let err = error(&t, &deep).await;
    assert!(matches!(err, JsError::Thrown { .. }), "{err:?}");
    let err = error(&t, "let o = {}; let c = o; for (let i = 0; i < 1e5; i++) { c.n = {}; c = c.n } JSON.stringify(o)").await;
    assert!(matches!(err, JsError::Thrown { .. }), "{err:?}");
    assert_eq!(
        value(&t, "function g(n) { return n ? g(n - 1) + 1 : 0 } g(100)")
            .await
            .as_deref(),
        Some("100")
    );
}

#[tokio::test]
async fn host_access_is_unavailable() {
    let t = tool();
    for name in [
        "require",
        "fetch",
        "process",
        "Deno",
        "Bun",
        "std",
        "os",
        "module",
        "exports",
        "setTimeout",
        "XMLHttpRequest",
        "WebSocket",
        "print",
        "scriptArgs",
    ] {
        assert_eq!(
            value(&t, &format!("typeof {name}")).await.as_deref(),
            Some("\"undefined\""),
            "{name}"
        );
    }
    for code in [
        "require('fs')",
        "fetch('http://example.com')",
        "process.env",
        "Deno.readFileSync('/etc/passwd')",
        "std.loadFile('/etc/passwd')",
        "os.exec(['ls'])",
    ] {
        assert!(
            matches!(error(&t, code).await, JsError::Thrown { name, .. } if name == "ReferenceError"),
            "{code}"
        );
    }
    for code in [
        "import('fs')",
        "await import('os')",
        "import('/etc/passwd')",
    ] {
        let err = error(&t, code).await;
        assert!(
            err.to_string().contains("could not load module"),
            "{code}: {err}"
        );
    }
    assert!(
        matches!(error(&t, "import fs from 'fs'").await, JsError::Thrown { name, .. } if name == "SyntaxError")
    );
    for code in [
        "eval('typeof require')",
        "(0, eval)('typeof process')",
        "Function('return typeof fetch')()",
        "Function('return this')().Deno === undefined ? 'undefined' : 'found'",
        "(async () => {}).constructor('return typeof require')() instanceof Promise ? 'undefined' : 'x'",
        "[].constructor.constructor('return typeof process')()",
        "new Proxy({}, {}).constructor.constructor('return typeof os')()",
    ] {
        assert_eq!(
            value(&t, code).await.as_deref(),
            Some("\"undefined\""),
            "{code}"
        );
    }
}

#[tokio::test]
async fn fresh_context_per_call_unless_state_is_kept() {
    let t = tool();
    assert_eq!(
        value(&t, "globalThis.counter = 1; counter")
            .await
            .as_deref(),
        Some("1")
    );
    assert_eq!(
        value(&t, "typeof counter").await.as_deref(),
        Some("\"undefined\"")
    );

    let keep = json!({"keep_state": true});
    let r = call(&t, json!({"code": "var total = 40; total"}), keep.clone()).await;
    assert_eq!(r.content, "Result: 40\n");
    let r = call(&t, json!({"code": "total += 2; total"}), keep.clone()).await;
    assert_eq!(r.content, "Result: 42\n");
    assert_eq!(t.session_count(), 1);
    let other = t
        .run(
            json!({"code": "typeof total"}),
            &context(keep.clone(), "other chat"),
        )
        .await;
    assert_eq!(other.content, "Result: \"undefined\"\n");
    let timed_out = call(&t, json!({"code": "while (true) {}"}), keep.clone()).await;
    assert!(timed_out.is_error);
    let r = call(&t, json!({"code": "total"}), keep.clone()).await;
    assert_eq!(r.content, "Result: 42\n", "state survives a timed-out call");
    t.reset_session("chat");
    let r = call(&t, json!({"code": "typeof total"}), keep).await;
    assert_eq!(r.content, "Result: \"undefined\"\n");
}

#[tokio::test]
async fn library_files_load_first() {
    let vfs = Arc::new(
        MemoryVfs::with_files([
            ("/lib/a_math.js", "function double(x) { return x * 2 }"),
            ("/lib/b_text.js", "const greet = (n) => `hi ${double(n)}`;"),
            ("/lib/readme.md", "not code"),
        ])
        .unwrap(),
    );
    let t = JsTool::new(vfs.clone()).with_limits(limits());
    assert_eq!(value(&t, "greet(21)").await.as_deref(), Some("\"hi 42\""));
    let r = call(
        &t,
        json!({"code": "typeof double"}),
        json!({"load_library": false}),
    )
    .await;
    assert_eq!(r.content, "Result: \"undefined\"\n");

    vfs.write_text("/lib/c_bad.js", "\n\nundefinedThing()")
        .await;
    let err = error(&t, "1").await;
    assert_eq!(
        err.to_string(),
        "ReferenceError: undefinedThing is not defined (line 3 of library /lib/c_bad.js)"
    );
    vfs.write_text("/lib/c_bad.js", "while (true) {}").await;
    assert_eq!(
        error(&t, "1").await,
        JsError::Timeout(Duration::from_millis(300))
    );
}

trait WriteText {
    async fn write_text(&self, path: &str, text: &str);
}

impl WriteText for MemoryVfs {
    async fn write_text(&self, path: &str, text: &str) {
        agentloop_types::Vfs::write(self, path, text.as_bytes())
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_token_stops_a_running_script() {
    let t = Arc::new(JsTool::without_library().with_limits(JsLimits {
        time: Duration::from_secs(60),
        ..limits()
    }));
    let ctx = context(json!({}), "chat");
    let cancel = ctx.cancel.clone();
    let task = tokio::spawn({
        let t = t.clone();
        async move { t.run(json!({"code": "while (true) {}"}), &ctx).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    cancel.cancel();
    let r = tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .unwrap()
        .unwrap();
    assert!(r.is_error);
    assert_eq!(r.content, "Error: Cancelled: the run was cancelled\n");
}

#[tokio::test]
async fn invalid_input_and_options() {
    let t = tool();
    let r = call(&t, json!({"source": "1"}), json!({})).await;
    assert!(r.is_error);
    assert!(r.content.contains("missing field `code`"), "{}", r.content);
    let r = call(&t, json!({"code": 5}), json!({})).await;
    assert!(r.content.contains("invalid type"), "{}", r.content);
    let r = call(&t, json!({"code": "1"}), json!({"keep_state": "yes"})).await;
    assert_eq!(
        r.content,
        "Invalid options: option `keep_state` must be a boolean, got a string"
    );
    let r = call(&t, json!({"code": "1"}), json!({"turbo": true})).await;
    assert_eq!(r.content, "Invalid options: unknown option `turbo`");
    assert_eq!(t.input_schema()["required"], json!(["code"]));
    let keys: Vec<_> = t
        .options()
        .into_iter()
        .map(|o| (o.key, o.default))
        .collect();
    assert_eq!(
        keys,
        [
            ("keep_state".to_owned(), json!(false)),
            ("load_library".to_owned(), json!(true))
        ]
    );
}

#[tokio::test]
async fn runs_through_the_tool_port_and_survives_everything() {
    let t = Arc::new(tool());
    for code in [
        "while(true){}",
        "let s='x'; while(true) s+=s",
        "function f(){f()} f()",
        "1 + 1",
    ] {
        let out: Vec<ToolOutput> = t
            .clone()
            .execute(json!({"code": code}), context(json!({}), "c"))
            .collect()
            .await;
        assert_eq!(out.len(), 1);
    }
    let out: Vec<ToolOutput> = t
        .clone()
        .execute(json!({"code": "6 * 7"}), context(json!({}), "c"))
        .collect()
        .await;
    match &out[..] {
        [ToolOutput::Done(r)] => {
            assert!(!r.is_error);
            assert_eq!(r.content, "Result: 42\n");
        }
        other => panic!("{other:?}"),
    }
    let _ = Map::<String, Value>::new();
}
