//! The answer's markdown, rendered for a colour terminal as it streams:
//! text is held until its block is whole (a blank line outside a code
//! fence, a closing fence, or the end of the text), then the block is
//! parsed with `pulldown-cmark` and written with terminal styles: bold and
//! italic, headings bold and underlined, inline code and code blocks in
//! cyan, list bullets, link targets dimmed after their text.
//!
//! Every piece of text is sanitised before styles are added, so the model
//! cannot send escapes of its own.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};

use crate::out::sanitize;

const BOLD: &str = "\x1b[1m";
const ITALIC: &str = "\x1b[3m";
const UNDERLINE: &str = "\x1b[4m";
const CYAN: &str = "\x1b[36m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Markdown arriving in pieces, written block by block.
#[derive(Default)]
pub struct MarkdownStream {
    /// Text not shown yet; it always starts at the start of a block.
    pending: String,
}

impl MarkdownStream {
    /// Takes a piece of text; returns what is now ready to show.
    pub fn push(&mut self, text: &str) -> String {
        self.pending.push_str(text);
        let mut out = String::new();
        while let Some(end) = self.block_end() {
            let block: String = self.pending.drain(..end).collect();
            out.push_str(&render(&block));
        }
        out
    }

    /// The text ended: shows what is left, without the line end (the view
    /// ends the line).
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        if rest.trim().is_empty() {
            return String::new();
        }
        render(&rest).trim_end_matches('\n').to_owned()
    }

    /// Where the first whole block of `pending` ends (after its last
    /// newline), if one is whole.
    fn block_end(&self) -> Option<usize> {
        let mut start = 0;
        let mut in_fence = false;
        while let Some(offset) = self.pending[start..].find('\n') {
            let line_end = start + offset + 1;
            let line = self.pending[start..line_end].trim();
            if line.starts_with("```") || line.starts_with("~~~") {
                in_fence = !in_fence;
                if !in_fence {
                    return Some(line_end);
                }
            } else if line.is_empty() && !in_fence && start > 0 {
                return Some(line_end);
            }
            start = line_end;
        }
        None
    }
}

/// One or more whole blocks of markdown, styled.
pub fn render(markdown: &str) -> String {
    let mut out = String::new();
    let mut lists: Vec<Option<u64>> = Vec::new();
    let mut link: Option<String> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                let marks = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    _ => "### ",
                };
                out.push_str(&format!("{BOLD}{UNDERLINE}{marks}"));
            }
            Event::End(TagEnd::Heading(_)) => out.push_str(&format!("{RESET}\n\n")),
            Event::Start(Tag::Paragraph) => {}
            Event::End(TagEnd::Paragraph) => {
                out.push('\n');
                if lists.is_empty() {
                    out.push('\n');
                }
            }
            Event::Start(Tag::Strong) => out.push_str(BOLD),
            Event::Start(Tag::Emphasis) => out.push_str(ITALIC),
            Event::End(TagEnd::Strong | TagEnd::Emphasis | TagEnd::Strikethrough) => {
                out.push_str(RESET)
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                if let CodeBlockKind::Fenced(lang) = kind
                    && !lang.is_empty()
                {
                    out.push_str(&format!("{DIM}{}{RESET}\n", sanitize(&lang)));
                }
                out.push_str(CYAN);
            }
            Event::End(TagEnd::CodeBlock) => out.push_str(&format!("{RESET}\n")),
            Event::Start(Tag::List(first)) => lists.push(first),
            Event::End(TagEnd::List(_)) => {
                lists.pop();
                if lists.is_empty() {
                    out.push('\n');
                }
            }
            Event::Start(Tag::Item) => {
                let depth = lists.len().saturating_sub(1);
                out.push_str(&"  ".repeat(depth));
                match lists.last_mut() {
                    Some(Some(n)) => {
                        out.push_str(&format!("{n}. "));
                        *n += 1;
                    }
                    _ => out.push_str("• "),
                }
            }
            Event::End(TagEnd::Item) => {
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                out.push_str(UNDERLINE);
                link = Some(dest_url.into_string());
            }
            Event::End(TagEnd::Link) => {
                out.push_str(RESET);
                if let Some(url) = link.take() {
                    out.push_str(&format!(" {DIM}({}){RESET}", sanitize(&url)));
                }
            }
            Event::Start(Tag::BlockQuote(_)) => out.push_str(&format!("{DIM}│ ")),
            Event::End(TagEnd::BlockQuote(_)) => out.push_str(RESET),
            Event::Text(text) => out.push_str(&sanitize(&text)),
            Event::Code(code) => out.push_str(&format!("{CYAN}{}{RESET}", sanitize(&code))),
            Event::SoftBreak | Event::HardBreak => out.push('\n'),
            Event::Rule => out.push_str(&format!("{DIM}────────{RESET}\n\n")),
            // Raw HTML and anything else the model sends is shown as the
            // text it is.
            Event::Html(raw) | Event::InlineHtml(raw) => out.push_str(&sanitize(&raw)),
            Event::Start(_) | Event::End(_) => {}
            Event::FootnoteReference(r) => out.push_str(&format!("[{}]", sanitize(&r))),
            Event::TaskListMarker(done) => out.push_str(if done { "[x] " } else { "[ ] " }),
            Event::InlineMath(m) | Event::DisplayMath(m) => out.push_str(&sanitize(&m)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rendering with escapes written out, for readable assertions.
    fn visible(text: &str) -> String {
        text.replace(BOLD, "<b>")
            .replace(ITALIC, "<i>")
            .replace(UNDERLINE, "<u>")
            .replace(CYAN, "<c>")
            .replace(DIM, "<d>")
            .replace(RESET, "</>")
    }

    #[test]
    fn blocks_are_styled() {
        let out = visible(&render(
            "# Title\n\nSome **bold**, *italic* and `code`.\n\n- one\n- two\n\n1. first\n2. second\n\n```rust\nlet x = 1;\n```\n\nSee [docs](https://example.com).\n",
        ));
        insta::assert_snapshot!(out);
    }

    #[test]
    fn streamed_text_is_shown_block_by_block() {
        let mut stream = MarkdownStream::default();
        assert_eq!(stream.push("Hello **wor"), "");
        assert_eq!(stream.push("ld**\n"), "", "a paragraph may go on");
        let first = stream.push("\nNext");
        assert_eq!(visible(&first), "Hello <b>world</>\n\n");
        assert_eq!(stream.push("\n```\nfn"), "");
        assert_eq!(
            stream.push("\n\n}\n"),
            "",
            "a blank line inside a fence does not end it"
        );
        let fenced = visible(&stream.push("```\n"));
        assert!(fenced.starts_with("Next\n"), "{fenced}");
        assert!(fenced.contains("<c>fn\n\n}\n</>"), "{fenced}");
        assert_eq!(visible(&stream.finish()), "");
    }

    #[test]
    fn the_model_cannot_send_escapes() {
        let out = render("evil \x1b]0;title\x07 and \x1b[31mred\n");
        assert!(!out.contains('\x07'));
        assert!(!out.contains("\x1b]0"));
        assert!(!out.contains("\x1b[31m"));
    }
}
