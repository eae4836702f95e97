//! An OpenAI-compatible model for a chain of agent runs that outlives the
//! workers calling it: it answers each chat completion from where the
//! conversation stands (which agent, which round of the chain, which
//! turn), streams slowly enough to be cut, and records every request and
//! whether its answer was streamed to the end.
//!
//! Each run's agent is read from its first message (`KIND=implementation`
//! or `KIND=review`, set by the test's prompts). Runs of a chain alternate,
//! so a first turn of the other agent is the next round. Every run starts
//! with a slow `shell` call (`start ID`, two seconds, `end ID` into
//! `effects.log`) and then answers slowly; the review of the last round
//! calls `complete_workflow` before its answer.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// One chat completion received.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Turn {
    /// `implementation` or `review`.
    pub kind: String,
    /// The round of the chain, from 1.
    pub round: u32,
    /// Assistant messages already in the conversation.
    pub turn: usize,
}

impl Turn {
    /// The id of the `shell` call this turn makes, if it makes one.
    pub fn call_id(&self) -> String {
        format!("{}{}t{}", &self.kind[..1], self.round, self.turn)
    }
}

/// What the model saw.
#[derive(Default)]
pub struct Seen {
    /// Every request, oldest first, with whether its answer was streamed
    /// whole.
    pub requests: Vec<(Turn, bool)>,
    /// The answer being streamed now, waiting in its slow part.
    pub streaming: Option<Turn>,
    rounds: HashMap<String, u32>,
    last_kind: Option<String>,
}

/// The served model.
pub struct ChainModel {
    /// Base URL, ending in `/v1`.
    pub base_url: String,
    /// What it saw.
    pub seen: Arc<Mutex<Seen>>,
}

impl ChainModel {
    /// Serves a chain of `rounds` implementation → review rounds.
    pub fn start(rounds: u32) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Seen::default()));
        let state = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let state = state.clone();
                std::thread::spawn(move || answer(stream, &state, rounds));
            }
        });
        Self { base_url, seen }
    }
}

fn answer(mut stream: TcpStream, seen: &Mutex<Seen>, rounds: u32) {
    let Some((path, body)) = read_request(&stream) else {
        return;
    };
    if path.ends_with("/models") {
        let body =
            json!({ "object": "list", "data": [{ "id": "mock", "object": "model" }] }).to_string();
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let turn = place(&request, seen);
    let index = {
        let mut seen = seen.lock().unwrap();
        seen.requests.push((turn.clone(), false));
        seen.requests.len() - 1
    };
    let streamed = stream_answer(&mut stream, &turn, rounds, seen).is_ok();
    let mut seen = seen.lock().unwrap();
    seen.requests[index].1 = streamed;
    if seen.streaming.as_ref() == Some(&turn) {
        seen.streaming = None;
    }
}

/// Which agent, round and turn a request is.
fn place(request: &Value, seen: &Mutex<Seen>) -> Turn {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let first_user = messages
        .iter()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    let kind = if first_user.contains("KIND=review") {
        "review"
    } else {
        "implementation"
    };
    let turn = messages.iter().filter(|m| m["role"] == "assistant").count();
    let mut seen = seen.lock().unwrap();
    if turn == 0 && seen.last_kind.as_deref() != Some(kind) {
        *seen.rounds.entry(kind.to_owned()).or_insert(0) += 1;
        seen.last_kind = Some(kind.to_owned());
    }
    let round = seen.rounds.get(kind).copied().unwrap_or(1);
    Turn {
        kind: kind.to_owned(),
        round,
        turn,
    }
}

/// Streams the answer of `turn`; an error when the worker went away.
fn stream_answer(
    stream: &mut TcpStream,
    turn: &Turn,
    rounds: u32,
    seen: &Mutex<Seen>,
) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
    )?;
    let last_review = turn.kind == "review" && turn.round == rounds;
    let call = |id: &str, name: &str, arguments: String| {
        json!({ "tool_calls": [{ "index": 0, "id": id, "type": "function",
                                 "function": { "name": name, "arguments": arguments } }] })
    };
    let finish = if turn.turn == 0 {
        let id = turn.call_id();
        let command =
            format!("echo start {id} >> effects.log; sleep 2; echo end {id} >> effects.log");
        let arguments = json!({ "command": command }).to_string();
        chunk(stream, call(&id, "shell", arguments), None)?;
        "tool_calls"
    } else if turn.turn == 1 && last_review {
        chunk(
            stream,
            call(&turn.call_id(), "complete_workflow", "{}".to_owned()),
            None,
        )?;
        "tool_calls"
    } else {
        chunk(
            stream,
            json!({ "role": "assistant", "content": "Working " }),
            None,
        )?;
        seen.lock().unwrap().streaming = Some(turn.clone());
        std::thread::sleep(Duration::from_millis(1500));
        let text = format!("done {} {}.", turn.kind, turn.round);
        chunk(stream, json!({ "content": text }), None)?;
        "stop"
    };
    chunk(stream, json!({}), Some(finish))?;
    stream.write_all(b"data: [DONE]\n\n")?;
    stream.flush()
}

fn chunk(stream: &mut TcpStream, delta: Value, finish: Option<&str>) -> std::io::Result<()> {
    let chunk = json!({
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "mock",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
    });
    stream.write_all(format!("data: {chunk}\n\n").as_bytes())?;
    stream.flush()
}

/// The path and body of one HTTP/1.1 request.
fn read_request(stream: &TcpStream) -> Option<(String, Vec<u8>)> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((path, body))
}
