//! The prompt of `agentloop run`: the PROMPT argument, standard input, or
//! both. Stdin is read only when it is not a terminal (a terminal is the
//! person, who answers approvals there): piped text alone is the prompt,
//! `-` asks for it explicitly, and piped text after a PROMPT argument is
//! added to it past a blank line, so `cat notes.md | agentloop run
//! "summarise"` sends the instruction, then the notes.

use std::io::{IsTerminal, Read};

use crate::out::Failure;

/// The most stdin `run` reads: far more than any model's context holds,
/// so a mistaken pipe (`cat /dev/urandom`) fails instead of filling memory.
const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// The prompt from the argument and, when it is not a terminal, stdin.
/// `None`: no argument and nothing piped (an empty pipe or `/dev/null`).
pub fn read(argument: Option<&str>) -> Result<Option<String>, Failure> {
    let stdin = std::io::stdin();
    let piped = !stdin.is_terminal();
    match argument {
        Some("-") if !piped => Err(Failure::usage(
            "the prompt - means \"read it from stdin\", but stdin is a terminal; \
             pipe the prompt in (echo question | agentloop run -) or give it as an argument",
        )),
        Some("-") => match read_all(stdin)? {
            Some(text) => Ok(Some(text)),
            None => Err(Failure::usage(
                "the prompt - means \"read it from stdin\", and stdin was empty",
            )),
        },
        Some(text) if piped => Ok(Some(match read_all(stdin)? {
            Some(added) => join(text, &added),
            None => text.to_owned(),
        })),
        Some(text) => Ok(Some(text.to_owned())),
        None if piped => read_all(stdin),
        None => Ok(None),
    }
}

/// The argument, a blank line, then the piped text.
fn join(argument: &str, piped: &str) -> String {
    format!("{}\n\n{piped}", argument.trim_end())
}

/// All of stdin without its trailing whitespace; `None` when that leaves
/// nothing.
fn read_all(stdin: std::io::Stdin) -> Result<Option<String>, Failure> {
    let mut bytes = Vec::new();
    stdin
        .lock()
        .take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::Runtime(format!("cannot read the prompt from stdin: {e}")))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(Failure::usage(format!(
            "stdin holds more than {} MiB, more than a prompt can be; pipe in less",
            MAX_BYTES / (1024 * 1024)
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Failure::usage("stdin is not UTF-8 text, so it cannot be the prompt"))?;
    let text = text.trim_end();
    Ok((!text.trim().is_empty()).then(|| text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piped_text_follows_the_argument_past_a_blank_line() {
        assert_eq!(
            join("summarise\n", "# Notes\none"),
            "summarise\n\n# Notes\none"
        );
    }
}
