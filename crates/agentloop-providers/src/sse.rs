//! Server-sent events framing.
//!
//! A small incremental parser of our own instead of `eventsource-stream`:
//! the same parser must run both over an HTTP body (chunks of any size) and
//! over a whole recorded body held in memory (`replay_sse`), with no async
//! runtime and no extra dependencies, and it is about a hundred lines.
//!
//! It follows the WHATWG event-stream rules: lines end with CRLF, LF or a
//! lone CR (also when the CR and LF arrive in different chunks); a leading
//! UTF-8 BOM is dropped; lines starting with `:` are comments; one space
//! after the colon is removed; `data` lines join with `\n`; `id` and
//! `retry` are recorded; a blank line dispatches the event. One deliberate
//! leniency: at the end of the body an event whose lines were all
//! terminated but that lacks the final blank line is still dispatched
//! (some servers end with `data: [DONE]\n`). A line cut off by the end of
//! the body is dropped, so a truncated JSON payload is never parsed.

/// One dispatched server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field, or `message` when none was given.
    pub event: String,
    /// The `data` lines joined with `\n`.
    pub data: String,
    /// The last event id seen so far, if any.
    pub id: Option<String>,
    /// The last `retry` value seen so far, in milliseconds.
    pub retry: Option<u64>,
}

/// Incremental event-stream parser: feed bytes, collect events.
///
/// [`push_each`](Self::push_each) hands each event out by reference from
/// buffers the parser reuses, so a stream costs no allocation per event;
/// [`push`](Self::push) collects owned copies.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    skip_lf: bool,
    seen_first_line: bool,
    /// The event being read; its `data` keeps a line end after each line.
    pending: SseEvent,
    has_data: bool,
}

const BOM: char = '\u{FEFF}';

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes, appending any completed events to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        self.push_each(bytes, |event| out.push(event.clone()));
    }

    /// Ends the stream: dispatches a pending event whose lines were all
    /// terminated, and drops an unterminated last line.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        self.finish_each(|event| out.push(event.clone()));
    }

    /// Feeds the next bytes, calling `on_event` with each completed event.
    pub fn push_each(&mut self, mut bytes: &[u8], mut on_event: impl FnMut(&SseEvent)) {
        if self.skip_lf && !bytes.is_empty() {
            self.skip_lf = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        if self.line.is_empty()
            && let Some(last) = memchr::memrchr2(b'\n', b'\r', bytes)
            // The lines wholly inside this chunk are checked as text in one
            // pass, not line by line: a prefix that ends at a line end never
            // cuts a character in two.
            && let Ok(text) = simdutf8::basic::from_utf8(&bytes[..=last])
        {
            let mut rest = text;
            while let Some(pos) = memchr::memchr2(b'\n', b'\r', rest.as_bytes()) {
                let (line, end) = rest.split_at(pos);
                rest = match end.strip_prefix("\r\n") {
                    Some(after) => after,
                    None => &end[1..],
                };
                self.handle_line(line, &mut on_event);
            }
            // A CR that ends the chunk may be the first half of a CRLF.
            self.skip_lf = last + 1 == bytes.len() && bytes[last] == b'\r';
            bytes = &bytes[last + 1..];
        }
        // What is left: lines that began in an earlier chunk, or a chunk
        // that is not valid UTF-8.
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', bytes) {
            let line = &bytes[..pos];
            let was_cr = bytes[pos] == b'\r';
            bytes = &bytes[pos + 1..];
            if was_cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            if self.line.is_empty() {
                // The whole line is in this chunk: read in place, not copied.
                self.handle_raw_line(line, &mut on_event);
            } else {
                self.line.extend_from_slice(line);
                // Taken out and put back so the buffer's capacity is reused.
                let mut raw = std::mem::take(&mut self.line);
                self.handle_raw_line(&raw, &mut on_event);
                raw.clear();
                self.line = raw;
            }
        }
        self.line.extend_from_slice(bytes);
    }

    /// [`finish`](Self::finish), calling `on_event` with the last event.
    pub fn finish_each(&mut self, mut on_event: impl FnMut(&SseEvent)) {
        self.line.clear();
        self.dispatch(&mut on_event);
    }

    /// A line as bytes: invalid UTF-8 is replaced, not refused.
    fn handle_raw_line(&mut self, raw: &[u8], on_event: &mut impl FnMut(&SseEvent)) {
        match simdutf8::basic::from_utf8(raw) {
            Ok(line) => self.handle_line(line, on_event),
            Err(_) => self.handle_line(&String::from_utf8_lossy(raw), on_event),
        }
    }

    fn handle_line(&mut self, mut line: &str, on_event: &mut impl FnMut(&SseEvent)) {
        if !self.seen_first_line {
            self.seen_first_line = true;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        let pending = &mut self.pending;
        match field {
            "event" => {
                pending.event.clear();
                pending.event.push_str(value);
            }
            "data" => {
                pending.data.push_str(value);
                pending.data.push('\n');
                self.has_data = true;
            }
            "id" if !value.contains('\0') => pending.id = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    pending.retry = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(&SseEvent)) {
        let pending = &mut self.pending;
        if self.has_data {
            self.has_data = false;
            pending.data.pop();
            if pending.event.is_empty() {
                pending.event.push_str("message");
            }
            on_event(pending);
        }
        // The id and retry carry over to later events; the rest does not.
        pending.event.clear();
        pending.data.clear();
    }
}

/// Parses a whole body at once.
pub fn parse_all(body: &[u8]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    parser.push(body, &mut out);
    parser.finish(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: None,
            retry: None,
        }
    }

    const SAMPLE: &str = "\u{FEFF}: comment line\nevent: ping\ndata: {}\n\nid: 7\nretry: 1500\ndata: line one\ndata:line two\ndata\n\n:another comment\ndata: {\"a\": 1}\n\n";

    fn expected() -> Vec<SseEvent> {
        vec![
            ev("ping", "{}"),
            SseEvent {
                event: "message".into(),
                data: "line one\nline two\n".into(),
                id: Some("7".into()),
                retry: Some(1500),
            },
            SseEvent {
                event: "message".into(),
                data: "{\"a\": 1}".into(),
                id: Some("7".into()),
                retry: Some(1500),
            },
        ]
    }

    /// The events of `body` fed as two chunks, cut at `cut`.
    fn parse_in_two(body: &[u8], cut: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser.push(&body[..cut], &mut out);
        parser.push(&body[cut..], &mut out);
        parser.finish(&mut out);
        out
    }

    fn with_line_ends(ending: &str) -> String {
        SAMPLE.replace('\n', ending)
    }

    #[test]
    fn parses_lf_crlf_and_cr_with_bom_comments_id_retry_multiline() {
        for ending in ["\n", "\r\n", "\r"] {
            let body = with_line_ends(ending);
            assert_eq!(parse_all(body.as_bytes()), expected(), "ending {ending:?}");
        }
    }

    #[test]
    fn split_at_every_byte_boundary() {
        for ending in ["\n", "\r\n", "\r"] {
            let body = with_line_ends(ending);
            let bytes = body.as_bytes();
            for cut in 0..=bytes.len() {
                let out = parse_in_two(bytes, cut);
                assert_eq!(out, expected(), "ending {ending:?} cut {cut}");
            }
            // And one byte at a time.
            let mut parser = SseParser::new();
            let mut out = Vec::new();
            for b in bytes {
                parser.push(std::slice::from_ref(b), &mut out);
            }
            parser.finish(&mut out);
            assert_eq!(out, expected(), "ending {ending:?} bytewise");
        }
    }

    #[test]
    fn multibyte_text_split_inside_a_character() {
        let body = "data: ÷ 5 → 185\n\n".as_bytes();
        for cut in 0..=body.len() {
            let out = parse_in_two(body, cut);
            assert_eq!(out, vec![ev("message", "÷ 5 → 185")]);
        }
    }

    #[test]
    fn invalid_utf8_is_replaced_in_any_chunking() {
        let body = b"data: a\xFFb\r\n\r\nevent: e\xC3\ndata: ok\n\n";
        let expected = vec![ev("message", "a\u{FFFD}b"), ev("e\u{FFFD}", "ok")];
        assert_eq!(parse_all(body), expected);
        for cut in 0..=body.len() {
            assert_eq!(parse_in_two(body, cut), expected, "cut {cut}");
        }
    }

    #[test]
    fn end_of_body_rules() {
        // Terminated lines without the final blank line still dispatch.
        assert_eq!(parse_all(b"data: [DONE]\n"), vec![ev("message", "[DONE]")]);
        // A line cut by the end of the body is dropped.
        assert_eq!(
            parse_all(b"data: {\"a\":1}\n\ndata: {\"b\""),
            vec![ev("message", "{\"a\":1}")]
        );
        // An event with no data is not dispatched.
        assert_eq!(parse_all(b"event: ping\n\n"), vec![]);
        // Empty data dispatches an empty payload; unknown fields are ignored.
        assert_eq!(parse_all(b"foo: bar\ndata:\n\n"), vec![ev("message", "")]);
    }

    #[test]
    fn bom_only_stripped_at_stream_start() {
        let body = "data: a\n\n\u{FEFF}data: b\n\n";
        let events = parse_all(body.as_bytes());
        assert_eq!(events[0], ev("message", "a"));
        // A BOM later in the stream is part of the field name, so the line
        // is an unknown field and ignored.
        assert_eq!(events.len(), 1);
    }
}
