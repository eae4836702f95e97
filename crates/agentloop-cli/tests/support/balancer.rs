//! A TCP load balancer for tests: each connection goes to the next
//! backend, round robin, skipping backends that refuse it (a dead worker),
//! its bytes copied both ways until either side closes.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A running balancer.
pub struct Balancer {
    /// Where it listens (`127.0.0.1:PORT`).
    pub address: String,
    /// Connections handed to each backend so far, by backend index.
    pub handed: Arc<Mutex<Vec<usize>>>,
}

impl Balancer {
    /// Starts balancing over `backends` (`host:port` each).
    pub fn start(backends: &[String]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let handed = Arc::new(Mutex::new(vec![0; backends.len()]));
        let backends = backends.to_vec();
        let counts = handed.clone();
        std::thread::spawn(move || {
            let mut next = 0;
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let chosen = (0..backends.len())
                    .map(|i| (next + i) % backends.len())
                    .find_map(|b| TcpStream::connect(&backends[b]).ok().map(|s| (b, s)));
                next = (next + 1) % backends.len();
                let Some((backend, server)) = chosen else {
                    continue;
                };
                counts.lock().unwrap()[backend] += 1;
                pipe(client, server);
            }
        });
        Self { address, handed }
    }
}

/// Copies bytes both ways; when either side ends, both are closed.
fn pipe(client: TcpStream, server: TcpStream) {
    let copy = |mut from: TcpStream, mut to: TcpStream| {
        std::thread::spawn(move || {
            let mut buffer = [0u8; 16 * 1024];
            loop {
                match from.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if std::io::Write::write_all(&mut to, &buffer[..n]).is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        });
    };
    copy(client.try_clone().unwrap(), server.try_clone().unwrap());
    copy(server, client);
}
