//! Where output goes and how a command fails.
//!
//! Every line meant for stdout goes through [`Stdout`], which turns a closed
//! pipe (`agentloop chats list | head -1`) into [`Failure::Closed`]: the
//! process then ends quietly with code 0 instead of panicking as `println!`
//! does. Notes for a person go to stderr through [`note`], which never fails.
//! [`Style`] holds the escape codes of the terminal view, empty when colour
//! is off (`--color`, `NO_COLOR`, or not a terminal).

use std::fmt;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::ValueEnum;

/// Exit code of a runtime failure (a database that cannot be opened, a
/// provider that fails before the run starts, ...).
pub const EXIT_FAILURE: u8 = 1;
/// Exit code of a usage error: bad flags, unknown names, malformed input
/// given on the command line.
pub const EXIT_USAGE: u8 = 2;

/// Why a command stopped early.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// Something went wrong while working (exit 1).
    #[error("{0}")]
    Runtime(String),
    /// The command was asked for something it cannot do (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Stdout was closed by its reader: not an error for the user.
    #[error("stdout closed")]
    Closed,
}

impl Failure {
    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self::Usage(message.into())
    }

    /// The process exit code of this failure.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Self::Runtime(_) => ExitCode::from(EXIT_FAILURE),
            Self::Usage(_) => ExitCode::from(EXIT_USAGE),
            Self::Closed => ExitCode::SUCCESS,
        }
    }

    /// Maps a write error: a closed pipe is [`Failure::Closed`].
    pub fn from_io(error: std::io::Error) -> Self {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            Self::Closed
        } else {
            Self::Runtime(format!("cannot write the output: {error}"))
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self::Runtime(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Self::Runtime(message.to_owned())
    }
}

/// What a command returns.
pub type Outcome = Result<ExitCode, Failure>;

/// Writes lines to stdout; a closed pipe becomes [`Failure::Closed`].
pub struct Stdout {
    inner: std::io::Stdout,
}

impl Stdout {
    /// The process's stdout.
    pub fn new() -> Self {
        Self {
            inner: std::io::stdout(),
        }
    }

    /// Writes one line.
    pub fn line(&mut self, text: impl fmt::Display) -> Result<(), Failure> {
        writeln!(self.inner, "{text}").map_err(Failure::from_io)
    }
}

impl Default for Stdout {
    fn default() -> Self {
        Self::new()
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes a note for a person to stderr; a closed stderr is ignored.
pub fn note(text: impl fmt::Display) {
    let _ = writeln!(std::io::stderr(), "agentloop: {text}");
}

/// `1 chat`, `3 chats`: a count with its noun in the right number.
pub fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// When to colour the output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// When the output is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always, even into a pipe.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// Whether a stream that is (or is not) a terminal gets colour.
    pub fn enabled(self, is_terminal: bool) -> bool {
        match self {
            Self::Always => true,
            Self::Never => false,
            Self::Auto => is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }
}

/// The colour choice the process was started with (`--color`), set once in
/// `main`.
static COLOR: std::sync::OnceLock<ColorChoice> = std::sync::OnceLock::new();

/// Records `--color` for [`Style::stdout`] and [`stderr_is_live`].
pub fn set_color(choice: ColorChoice) {
    let _ = COLOR.set(choice);
}

fn color() -> ColorChoice {
    COLOR.get().copied().unwrap_or_default()
}

/// Whether stderr may show live progress (a spinner): a terminal, and
/// colour not turned off.
pub fn stderr_is_live() -> bool {
    let terminal = std::io::stderr().is_terminal();
    terminal && color().enabled(terminal)
}

/// Escape codes of the terminal view; all empty when colour is off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// Faint text (thinking, notes).
    pub dim: &'static str,
    /// Tool names.
    pub cyan: &'static str,
    /// Errors.
    pub red: &'static str,
    /// Back to plain text.
    pub reset: &'static str,
}

impl Style {
    /// ANSI colours.
    pub const COLOR: Self = Self {
        dim: "\x1b[2m",
        cyan: "\x1b[36m",
        red: "\x1b[31m",
        reset: "\x1b[0m",
    };
    /// No escape codes at all.
    pub const PLAIN: Self = Self {
        dim: "",
        cyan: "",
        red: "",
        reset: "",
    };

    /// The style for stderr under the process's `--color` and `NO_COLOR`.
    pub fn stderr() -> Self {
        if color().enabled(std::io::stderr().is_terminal()) {
            Self::COLOR
        } else {
            Self::PLAIN
        }
    }

    /// The style for stdout under the process's `--color` and `NO_COLOR`.
    pub fn stdout() -> Self {
        if color().enabled(std::io::stdout().is_terminal()) {
            Self::COLOR
        } else {
            Self::PLAIN
        }
    }
}

/// `text` with every control character that could move the cursor, change
/// colours or retitle the terminal made visible: model text, tool arguments
/// and tool results are untrusted. Newlines and tabs stay.
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut clean = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            // `\u{1b}` shows as `^[`, like a terminal's own caret notation.
            match c as u32 {
                code @ 0..=0x1f => {
                    clean.push('^');
                    clean.push(char::from(b'@' + code as u8));
                }
                0x7f => clean.push_str("^?"),
                code => clean.push_str(&format!("\\u{{{code:x}}}")),
            }
        } else {
            clean.push(c);
        }
    }
    std::borrow::Cow::Owned(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_makes_escapes_visible_and_keeps_layout() {
        assert_eq!(sanitize("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            sanitize("a\x1b]0;pwned\x07b\x1b[2J\r"),
            "a^[]0;pwned^Gb^[[2J^M"
        );
        assert_eq!(sanitize("\u{9b}31m\x7f"), "\\u{9b}31m^?");
    }

    #[test]
    fn closed_pipe_is_quiet_and_other_write_errors_fail() {
        let closed = Failure::from_io(std::io::ErrorKind::BrokenPipe.into());
        assert!(matches!(closed, Failure::Closed));
        assert_eq!(closed.exit_code(), ExitCode::SUCCESS);
        let full = Failure::from_io(std::io::Error::other("disk full"));
        assert_eq!(full.exit_code(), ExitCode::from(EXIT_FAILURE));
        assert_eq!(
            Failure::usage("bad flag").exit_code(),
            ExitCode::from(EXIT_USAGE)
        );
    }

    #[test]
    fn color_choice_follows_the_flag_and_the_terminal() {
        assert!(ColorChoice::Always.enabled(false));
        assert!(!ColorChoice::Never.enabled(true));
        assert!(!ColorChoice::Auto.enabled(false));
    }
}
