//! `agentloop chat` on a terminal: a line editor (rustyline) with a prompt,
//! history kept in the data folder, multi-line input (end a line with `\`)
//! and slash commands. Ctrl-C while a turn runs cancels that turn (its run
//! is stored `cancelled`) and returns to the prompt; Ctrl-C at the prompt
//! clears the line; Ctrl-D or `/exit` leaves. A line typed while a turn
//! runs is stored for its run, which takes it at its next step (before its
//! next model call); one the run ended before taking starts one more turn.
//!
//! A turn that waits for a person is settled inline before the prompt
//! comes back: each call that needs approval is asked (see
//! [`crate::approve`]), a question takes the next line as its answer. A
//! chat continued (`--continue`, `--chat ID`) while it waits is settled
//! first. Ctrl-C at such a prompt cancels the waiting run; Ctrl-D leaves
//! the chat waiting (exit code 4) to be continued later.

use std::process::ExitCode;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use agentloop_types::PendingCall;

use crate::approve::{Asker, Reply};
use crate::out::{Failure, Outcome, Stdout, Style, note};
use crate::session::{Session, waiting_on};
use crate::typed::TypedLines;
use crate::{db, render};

/// The prompt of a new message.
const PROMPT: &str = "> ";
/// The prompt of a continued line.
const MORE: &str = ". ";

const HELP: &str = "\
/help          this list
/model [NAME]  show the chat's model, or use NAME from the next turn on
/tools         the tools the model may call
/prompts       the prompts of the chat's MCP servers
/prompt SERVER:PROMPT [NAME=VALUE ...]
               send one of them, filled in, as your message
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
    Prompts,
    Prompt(&'a str),
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
        "prompts" => Input::Prompts,
        "prompt" => Input::Prompt(rest),
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
    let mut asker = Asker::new(Style::stdout());
    out.line("Type a message, /help for commands, Ctrl-D to leave.")?;
    let waiting = session.pending().await?;
    if settle(session, &mut editor, &mut asker, waiting).await? == Settled::Left {
        return Ok(left_waiting(session, &mut editor, history.as_deref()));
    }
    while let Some(text) = read_message(&mut editor)? {
        let prompted;
        let message = match parse(&text) {
            Input::Prompt(named) => match mcp_prompt(session, named).await {
                Ok(filled) => {
                    let _ = editor.add_history_entry(&text);
                    prompted = filled;
                    Input::Message(&prompted)
                }
                Err(problem) => {
                    out.line(problem)?;
                    continue;
                }
            },
            other => other,
        };
        match message {
            Input::Message("") => {}
            Input::Message(message) => {
                let _ = editor.add_history_entry(message);
                // Ctrl-C cancels the turn and the prompt comes back; a
                // line typed meanwhile goes to the run, which takes it at
                // its next step.
                let mut typed = TypedLines::start();
                let sent = session.send_typed(message.to_owned(), &mut typed).await;
                typed.stop();
                let status = sent?;
                let waiting = waiting_on(&status);
                if settle(session, &mut editor, &mut asker, waiting).await? == Settled::Left {
                    return Ok(left_waiting(session, &mut editor, history.as_deref()));
                }
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
            Input::Prompts => match session.mcp.prompts().await {
                Ok(prompts) if prompts.is_empty() => {
                    out.line("no MCP prompts (start with --mcp or --mcp-stdio)")?;
                }
                Ok(prompts) => {
                    for prompt in &prompts {
                        out.line(crate::mcp_prompts::line(prompt))?;
                    }
                }
                Err(problem) => out.line(problem)?,
            },
            // Filled in and sent above.
            Input::Prompt(_) => {}
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

/// `/prompt SERVER:PROMPT NAME=VALUE ...`: the prompt filled in, as the
/// text of one message (an assistant turn it holds is marked as such).
async fn mcp_prompt(session: &Session, named: &str) -> Result<String, String> {
    let mut words = named.split_whitespace();
    let Some(name) = words.next() else {
        return Err("/prompt needs a prompt: /prompt SERVER:PROMPT [NAME=VALUE ...]".to_owned());
    };
    let arguments = words
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
            _ => Err(format!("{pair:?}: write each argument as NAME=VALUE")),
        })
        .collect::<Result<std::collections::BTreeMap<_, _>, _>>()?;
    let messages = session.mcp.prompt(name, &arguments).await?;
    Ok(messages
        .iter()
        .map(|message| match message.role {
            agentloop_types::Role::Assistant => format!("(assistant) {}", message.text()),
            _ => message.text(),
        })
        .collect::<Vec<_>>()
        .join("\n\n"))
}

/// How settling a waiting turn ended.
#[derive(PartialEq, Eq)]
enum Settled {
    /// Nothing waits any more.
    Done,
    /// The person left (Ctrl-D) with the run waiting.
    Left,
}

/// Asks the person about what the chat's run waits for, resumes it with
/// the decisions, and again while it waits.
async fn settle(
    session: &mut Session,
    editor: &mut DefaultEditor,
    asker: &mut Asker,
    mut waiting: Vec<PendingCall>,
) -> Result<Settled, Failure> {
    while !waiting.is_empty() {
        let status = match asker.ask(editor, &waiting)? {
            Reply::Decided(decisions) => session.resume(decisions).await?,
            Reply::Cancel => session.cancel_waiting().await?,
            Reply::Leave => return Ok(Settled::Left),
        };
        waiting = waiting_on(&status);
    }
    Ok(Settled::Done)
}

/// Leaves the REPL with the chat's run waiting: exit code 4.
fn left_waiting(
    session: &Session,
    editor: &mut DefaultEditor,
    history: Option<&std::path::Path>,
) -> ExitCode {
    if let Some(path) = history {
        let _ = editor.save_history(path);
    }
    note(format!(
        "chat {} waits for your answer; continue it with --continue",
        session.chat_id
    ));
    ExitCode::from(4)
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
        assert_eq!(parse("/prompts"), Input::Prompts);
        assert_eq!(
            parse("/prompt  everything:args-prompt city=Paris"),
            Input::Prompt("everything:args-prompt city=Paris")
        );
        assert_eq!(parse("/nope x"), Input::Unknown("nope"));
    }
}
