//! Skill prompts are markdown. Anything HTML in them (tags, comments,
//! `<script>` and `<style>` elements with their contents) is removed before
//! the prompt reaches a model; markdown text, including a lone `<` as in
//! `a < b`, is kept.

/// Elements whose contents are dropped along with their tags.
const DROPPED_ELEMENTS: [&str; 2] = ["script", "style"];

/// The markdown of `prompt` with HTML removed, trimmed. Runs of blank lines
/// left where elements were are collapsed to one.
pub fn sanitize_prompt(prompt: &str) -> String {
    let mut out = String::with_capacity(prompt.len());
    let mut rest = prompt;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let tail = &rest[open..];
        match markup_len(tail) {
            Some(len) => rest = &tail[len..],
            None => {
                out.push('<');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    collapse_blank_lines(&out)
}

/// Length of the markup starting at `text` (which starts with `<`), or
/// `None` when the `<` is ordinary text.
fn markup_len(text: &str) -> Option<usize> {
    if let Some(body) = text.strip_prefix("<!--") {
        return Some(body.find("-->").map_or(text.len(), |end| 4 + end + 3));
    }
    let after = &text[1..];
    let name_start = usize::from(after.starts_with('/'));
    let name: String = after[name_start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    if after.starts_with('!') {
        return tag_end(text);
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let tag_end = tag_end(text)?;
    let lower = name.to_ascii_lowercase();
    if name_start == 0 && DROPPED_ELEMENTS.contains(&lower.as_str()) {
        let close = format!("</{lower}");
        let lowered = text.to_ascii_lowercase();
        let Some(close_at) = lowered[tag_end..].find(&close) else {
            return Some(text.len());
        };
        let close_start = tag_end + close_at;
        let close_end = tag_end_from(text, close_start).unwrap_or(text.len());
        return Some(close_end);
    }
    Some(tag_end)
}

/// End (exclusive) of the tag opening at 0, honouring quoted attributes.
fn tag_end(text: &str) -> Option<usize> {
    tag_end_from(text, 0)
}

fn tag_end_from(text: &str, start: usize) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in text[start..].char_indices().skip(1) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '>') => return Some(start + i + 1),
            (None, '<') => return None,
            _ => {}
        }
    }
    None
}

fn collapse_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.trim().lines() {
        if line.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
            out.push('\n');
        } else {
            blank_run = 0;
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::sanitize_prompt;

    #[test]
    fn tags_go_markdown_stays() {
        let prompt = "# Title\n\n<div class=\"x\">Use **bold** and `code`.</div>\n\n- item <b>one</b>\n- a < b and c > d";
        assert_eq!(
            sanitize_prompt(prompt),
            "# Title\n\nUse **bold** and `code`.\n\n- item one\n- a < b and c > d"
        );
    }

    #[test]
    fn script_style_and_comments_go_with_their_contents() {
        let prompt = "Before<script type='text/javascript'>alert('<b>x</b>')</script> after\n<style>p { color: red }</STYLE>\n<!-- hidden -->Shown";
        assert_eq!(sanitize_prompt(prompt), "Before after\n\nShown");
    }

    #[test]
    fn unclosed_script_drops_the_rest() {
        assert_eq!(sanitize_prompt("Keep <script>steal()"), "Keep");
    }

    #[test]
    fn only_markup_is_empty() {
        assert_eq!(sanitize_prompt("<p> </p><script>x()</script>\n<br/>"), "");
    }

    #[test]
    fn angle_brackets_in_text_survive() {
        assert_eq!(
            sanitize_prompt("Use <= and 3<4 and <>"),
            "Use <= and 3<4 and <>"
        );
    }
}
