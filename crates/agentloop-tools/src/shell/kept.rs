//! [`Kept`]: the start and end of a command's output stream, with what
//! was cut from the middle.

use std::collections::VecDeque;

/// The start and end of one output stream.
pub(super) struct Kept {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    half: usize,
    total: u64,
}

impl Kept {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            half: limit / 2,
            total: 0,
        }
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.half.saturating_sub(self.head.len());
        let (front, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(front);
        self.tail.extend(rest.iter());
        let excess = self.tail.len().saturating_sub(self.half);
        self.tail.drain(..excess);
    }

    pub(super) fn render(&self, name: &str) -> String {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let cut = self.total - kept;
        let mut out = if cut > 0 {
            format!(
                "{name} ({} bytes, {cut} cut from the middle):\n",
                self.total
            )
        } else {
            format!("{name} ({} bytes):\n", self.total)
        };
        out.push_str(&String::from_utf8_lossy(&self.head));
        if cut > 0 {
            out.push_str(&format!("\n[... {cut} bytes cut ...]\n"));
        }
        let (front, back) = self.tail.as_slices();
        let mut tail = front.to_vec();
        tail.extend_from_slice(back);
        out.push_str(&String::from_utf8_lossy(&tail));
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out
    }
}
