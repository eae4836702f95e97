//! `agentloop chat` on a terminal: a line editor (rustyline) with a prompt,
//! history kept in the data folder, multi-line input (end a line with `\`)
//! and slash commands. Ctrl-C while a turn runs cancels that turn (its run
//! is stored `cancelled`) and returns to the prompt; Ctrl-C at the prompt
//! clears the line; Ctrl-D or `/exit` leaves.
//!
//! Questions a tool asks and approvals are answered in a later version of
//! this loop: a turn that suspends shows `waiting for input` and the next
//! line is sent as a new message.

use std::process::ExitCode;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::chat::Session;
use crate::out::{Failure, Outcome, Stdout, note};
use crate::{db, render};

/// The prompt of a new message.
const PROMPT: &str = "> ";
/// The prompt of a continued line.
const MORE: &str = ". ";

const HELP: &str = "\
/help          this list
/model [NAME]  show the chat's model, or use NAME from the next turn on
/tools         the tools the model may call
/cost          tokens and cost of this chat so far
/clear         start a new chat (the old one stays stored)
/exit          leave (also Ctrl-D)
End a line with \\ to continue on the next one. Ctrl-C stops the running turn.";

/// What a line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Input<'a> {
    Message(&'a str),
    Help,
    Model(Option<&'a str>),
    Tools,
    Cost,
    Clear,
    Exit,
    Unknown(&'a str),
}

fn parse(line: &str) -> Input<'_> {
    let trimmed = line.trim();
    let Some(command) = trimmed.strip_prefix('/') else {
        return Input::Message(trimmed);
    };
    let (name, rest) = command
        .split_once(char::is_whitespace)
        .map_or((command, ""), |(n, r)| (n, r.trim()));
    match name {
        "help" | "?" => Input::Help,
        "model" => Input::Model(Some(rest).filter(|r| !r.is_empty())),
        "tools" => Input::Tools,
        "cost" => Input::Cost,
        "clear" | "new" => Input::Clear,
        "exit" | "quit" => Input::Exit,
        _ => Input::Unknown(name),
    }
}

/// Runs the REPL until Ctrl-D or `/exit`.
pub async fn run(session: &mut Session) -> Outcome {
    let mut editor =
        DefaultEditor::new().map_err(|e| format!("cannot start the line editor: {e}"))?;
    let history = db::data_dir().ok().map(|dir| dir.join("history.txt"));
    if let Some(path) = &history {
        // No history yet is the usual first run.
        let _ = editor.load_history(path);
    }
    let mut out = Stdout::new();
    out.line("Type a message, /help for commands, Ctrl-D to leave.")?;
    while let Some(text) = read_message(&mut editor)? {
        match parse(&text) {
            Input::Message("") => {}
            Input::Message(message) => {
                let _ = editor.add_history_entry(message);
                // Ctrl-C cancels the turn and the prompt comes back.
                session.send(message.to_owned()).await?;
            }
            Input::Help => out.line(HELP)?,
            Input::Model(None) => {
                let model = session
                    .model()
                    .await?
                    .unwrap_or_else(|| "default".to_owned());
                out.line(format!("model: {model}"))?;
            }
            Input::Model(Some(name)) => {
                session.set_model(name).await?;
                out.line(format!("model: {name} (from the next turn on)"))?;
            }
            Input::Tools => {
                if session.tools.is_empty() {
                    out.line("no tools (start with --tools fs,javascript,...)")?;
                }
                for tool in &session.tools {
                    let first = tool.description().lines().next().unwrap_or_default();
                    out.line(format!("{:<10} {first}", tool.name()))?;
                }
            }
            Input::Cost => {
                let totals = session.totals().await?;
                out.line(format!(
                    "chat {}: {}",
                    session.chat_id,
                    render::tokens(&totals)
                ))?;
            }
            Input::Clear => {
                let id = session.new_chat().await?;
                out.line(format!("new chat {id}"))?;
            }
            Input::Exit => break,
            Input::Unknown(name) => {
                out.line(format!("unknown command /{name}; /help lists them"))?
            }
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    note(format!(
        "chat {} is stored; continue it with --continue",
        session.chat_id
    ));
    Ok(ExitCode::SUCCESS)
}

/// Reads one message, joining lines that end with `\`. `None` on Ctrl-D.
fn read_message(editor: &mut DefaultEditor) -> Result<Option<String>, Failure> {
    let mut text = String::new();
    loop {
        let prompt = if text.is_empty() { PROMPT } else { MORE };
        match editor.readline(prompt) {
            Ok(line) => match line.strip_suffix('\\') {
                Some(start) => {
                    text.push_str(start);
                    text.push('\n');
                }
                None => {
                    text.push_str(&line);
                    return Ok(Some(text));
                }
            },
            // Ctrl-C at the prompt drops what was typed.
            Err(ReadlineError::Interrupted) => text.clear(),
            Err(ReadlineError::Eof) => return Ok(None),
            Err(e) => return Err(Failure::Runtime(format!("cannot read the terminal: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_messages_or_commands() {
        assert_eq!(parse("  hello "), Input::Message("hello"));
        assert_eq!(parse("/model"), Input::Model(None));
        assert_eq!(parse("/model gpt-4.1"), Input::Model(Some("gpt-4.1")));
        assert_eq!(parse("/cost"), Input::Cost);
        assert_eq!(parse("/nope x"), Input::Unknown("nope"));
    }
}
