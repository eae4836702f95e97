//! Text from a dataset or a model, made safe to print on a terminal.

/// `text` with control characters (escapes that would drive the terminal)
/// shown as `?`.
pub(crate) fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}
