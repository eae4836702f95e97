//! Tool argument parsing: streamed argument fragments through the
//! assembler, `parse_tool_input`, every tool's input type, and the fs and
//! memory tools run on what parsed (over an in-memory VFS).
#![no_main]

use std::sync::Arc;

use agentloop_tools::ask_user::AskUserInput;
use agentloop_tools::fs::FsInput;
use agentloop_tools::js::JsInput;
use agentloop_tools::memory::MemoryInput;
use agentloop_tools::minion::MinionInput;
use agentloop_tools::return_tool::ReturnInput;
use agentloop_tools::schema::parse;
use agentloop_tools::vfs::MemoryVfs;
use agentloop_tools::{FsTool, MemoryTool};
use agentloop_types::stream::parse_tool_input;
use agentloop_types::{
    BlockStart, CancellationToken, ContentBlock, RunPath, StreamAssembler, StreamDelta, Tool,
    ToolContext, ToolOutput, Vfs,
};
use arbitrary::Arbitrary;
use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[derive(Arbitrary, Debug)]
enum Op {
    Text(u8),
    Thinking(u8),
    ToolUse(u8, String),
    ToolInput(u8, String),
    TextDelta(u8, String),
    Stop(u8),
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// Streamed deltas; argument fragments come from `ToolInput`.
    ops: Vec<Op>,
    /// A whole argument string, as a provider's final tool call carries it.
    arguments: String,
    /// Which tool runs the parsed arguments.
    tool: bool,
}

fn delta(op: &Op) -> StreamDelta {
    match op {
        Op::Text(i) => StreamDelta::BlockStart {
            index: u32::from(*i % 4),
            block: BlockStart::Text,
        },
        Op::Thinking(i) => StreamDelta::BlockStart {
            index: u32::from(*i % 4),
            block: BlockStart::Thinking,
        },
        Op::ToolUse(i, name) => StreamDelta::BlockStart {
            index: u32::from(*i % 4),
            block: BlockStart::ToolUse {
                id: format!("call_{i}"),
                name: name.clone(),
            },
        },
        Op::ToolInput(i, partial_json) => StreamDelta::ToolInput {
            index: u32::from(*i % 4),
            partial_json: partial_json.clone(),
        },
        Op::TextDelta(i, text) => StreamDelta::Text {
            index: u32::from(*i % 4),
            text: text.clone(),
        },
        Op::Stop(i) => StreamDelta::BlockStop {
            index: u32::from(*i % 4),
        },
    }
}

/// Every input type either parses or gives an error result; never panics.
fn parse_all_types(value: &Value) {
    fn one<T: serde::de::DeserializeOwned>(value: &Value) {
        if let Err(result) = parse::<T>(value.clone()) {
            assert!(result.is_error, "a parse failure must be an error result");
        }
    }
    one::<FsInput>(value);
    one::<MemoryInput>(value);
    one::<AskUserInput>(value);
    one::<ReturnInput>(value);
    one::<MinionInput>(value);
    one::<JsInput>(value);
}

fn context() -> ToolContext {
    ToolContext {
        run_id: "run".into(),
        project_id: "project".into(),
        chat_id: None,
        tool_use_id: "call".into(),
        path: RunPath::root(),
        options: Default::default(),
        cancel: CancellationToken::new(),
        resume: None,
        budget: None,
    }
}

/// Runs a tool to its result over a small in-memory project.
fn run_tool(tool_is_fs: bool, input: Value) {
    futures::executor::block_on(async {
        let vfs = Arc::new(MemoryVfs::new());
        let _ = vfs.write("/notes/a.md", b"alpha\nbeta\n").await;
        let _ = vfs.write("/src/main.rs", b"fn main() {}\n").await;
        let tool: Arc<dyn Tool> = if tool_is_fs {
            Arc::new(FsTool::new(vfs))
        } else {
            Arc::new(MemoryTool::new(vfs))
        };
        let mut stream = tool.execute(input, context());
        let mut done = false;
        while let Some(output) = stream.next().await {
            if let ToolOutput::Done(_) = output {
                done = true;
                break;
            }
        }
        assert!(done, "a tool call ended without a result");
    });
}

fuzz_target!(|input: Input| {
    let mut assembler = StreamAssembler::new();
    for op in &input.ops {
        // Protocol violations are typed errors; the assembler stays usable.
        let _ = assembler.apply(&delta(op));
    }
    for block in assembler.finish() {
        if let ContentBlock::ToolUse(tool_use) = block {
            parse_all_types(&tool_use.input.value());
        }
    }

    let value = parse_tool_input(&input.arguments);
    // Valid JSON arguments are kept as they are; anything else is kept as text.
    if let Ok(parsed) = serde_json::from_str::<Value>(&input.arguments) {
        assert_eq!(value, parsed);
    } else if input.arguments.trim().is_empty() {
        assert_eq!(value, Value::Object(Default::default()));
    } else {
        assert_eq!(value, Value::String(input.arguments.clone()));
    }
    parse_all_types(&value);
    run_tool(input.tool, value);
});
