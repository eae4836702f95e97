//! Lines a person types on the terminal while a turn runs: read on a
//! thread of their own, which polls stdin (the terminal is in its line
//! mode then, so stdin is readable once a whole line was typed) and stops
//! before the line editor takes the terminal back. Each line is sent to
//! the running turn, which hands it to the run (the session's
//! `send_typed`).

use std::io::Read;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use nix::poll::{PollFd, PollFlags, poll};

/// How long the reader waits for input before it looks whether to stop.
const POLL_MS: u16 = 50;

/// The reader of typed lines, while a turn runs.
pub struct TypedLines {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    lines: UnboundedReceiver<String>,
}

impl TypedLines {
    /// Starts reading lines typed from now on.
    pub fn start() -> Self {
        let (sender, lines) = unbounded();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || read_lines(&flag, &sender));
        Self {
            stop,
            thread: Some(thread),
            lines,
        }
    }

    /// The next line typed (not blank); pending forever once stdin ended.
    pub async fn next(&mut self) -> String {
        match self.lines.next().await {
            Some(line) => line,
            None => std::future::pending().await,
        }
    }

    /// Stops reading, once the reader let go of stdin.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            // A reader that panicked has nothing left to give back.
            let _ = thread.join();
        }
    }
}

impl Drop for TypedLines {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Reads stdin a line at a time until `stop` is set or stdin ends. Reads
/// only what poll says is there, from a duplicate of the descriptor, so
/// nothing is left in a buffer the line editor would not see.
fn read_lines(stop: &AtomicBool, sender: &UnboundedSender<String>) {
    let stdin = std::io::stdin();
    let Ok(owned) = stdin.as_fd().try_clone_to_owned() else {
        return;
    };
    let mut file = std::fs::File::from(owned);
    let mut pending: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 4096];
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, POLL_MS) {
            Ok(ready) if ready > 0 => {}
            Ok(_) => continue,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        }
        let read = match file.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        pending.extend_from_slice(&buffer[..read]);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line).trim().to_owned();
            if !text.is_empty() && sender.unbounded_send(text).is_err() {
                return;
            }
        }
    }
}
