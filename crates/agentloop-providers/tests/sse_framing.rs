//! SSE framing on real recordings: any line ending, a BOM, comments and
//! id/retry fields, and any chunking, give the same turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_providers::sse::{SseParser, parse_all};
use agentloop_providers::{ReplayOutcome, assemble_sse, replay_sse};
use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The body with other line endings, a BOM, a comment and id/retry lines
/// before every event.
fn decorated(body: &str, ending: &str) -> String {
    let mut out = String::from("\u{FEFF}");
    for (n, event) in body.split("\n\n").filter(|e| !e.is_empty()).enumerate() {
        out.push_str(&format!(
            ": keep-alive {n}{ending}id: {n}{ending}retry: 3000{ending}"
        ));
        out.push_str(&event.replace('\n', ending));
        out.push_str(ending);
        out.push_str(ending);
    }
    out
}

#[test]
fn recordings_split_at_every_byte_boundary() {
    for name in [
        "anthropic-json-tool.1.chunks.txt",
        "azure-model-router.1.chunks.txt",
        "openai-error.1.chunks.txt",
    ] {
        let body = fixture_bodies(name).remove(0);
        let expected: Vec<(String, String)> = parse_all(body.as_bytes())
            .into_iter()
            .map(|e| (e.event, e.data))
            .collect();
        for ending in ["\n", "\r\n", "\r"] {
            let text = decorated(&body, ending);
            let bytes = text.as_bytes();
            for cut in 0..=bytes.len() {
                let mut parser = SseParser::new();
                let mut events = Vec::new();
                parser.push(&bytes[..cut], &mut events);
                parser.push(&bytes[cut..], &mut events);
                parser.finish(&mut events);
                let got: Vec<(String, String)> =
                    events.into_iter().map(|e| (e.event, e.data)).collect();
                assert_eq!(got, expected, "{name} ending {ending:?} cut {cut}");
            }
        }
    }
}

#[test]
fn decorated_recordings_decode_to_the_same_turn() {
    for name in [
        "anthropic-web-search-tool.1.chunks.txt",
        "openai-text.chunks.txt",
        "openai-web-search-tool.1.chunks.txt",
    ] {
        let api = fixture_api(name);
        let body = fixture_bodies(name).remove(0);
        let plain = replay_sse(api, body.as_bytes());
        for ending in ["\r\n", "\r"] {
            let other = replay_sse(api, decorated(&body, ending).as_bytes());
            assert_eq!(other, plain, "{name} {ending:?}");
        }
    }
}

#[test]
fn assembling_alone_gives_the_replayed_turn_without_its_chunk_list() {
    for name in [
        "anthropic-web-search-tool.1.chunks.txt",
        "openai-text.chunks.txt",
        "openai-web-search-tool.1.chunks.txt",
        "openai-error.1.chunks.txt",
    ] {
        let api = fixture_api(name);
        let body = fixture_bodies(name).remove(0);
        let replayed = replay_sse(api, body.as_bytes());
        // The error recording fails before any chunk.
        assert!(
            !replayed.chunks.is_empty() || replayed.error.is_some(),
            "{name}"
        );
        let assembled = assemble_sse(api, body.as_bytes());
        assert!(assembled.chunks.is_empty(), "{name}");
        assert_eq!(
            ReplayOutcome {
                chunks: Vec::new(),
                ..replayed
            },
            assembled,
            "{name}"
        );
    }
}

/// Serves `body` over HTTP/1.1 chunked encoding, `piece` bytes per chunk.
async fn serve_in_pieces(body: Vec<u8>, piece: usize) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        // Read headers and the JSON body (small) until the body is complete.
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            request.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&request);
            if let Some(split) = text.find("\r\n\r\n") {
                let length: usize = text
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if request.len() >= split + 4 + length {
                    break;
                }
            }
        }
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        for chunk in body.chunks(piece) {
            socket
                .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .await
                .unwrap();
            socket.write_all(chunk).await.unwrap();
            socket.write_all(b"\r\n").await.unwrap();
            socket.flush().await.unwrap();
        }
        socket.write_all(b"0\r\n\r\n").await.unwrap();
        socket.flush().await.unwrap();
    });
    (format!("http://{addr}"), task)
}

#[tokio::test]
async fn tiny_http_chunks_with_crlf_and_bom() {
    for (name, piece) in [
        ("anthropic-clear-thinking.1.chunks.txt", 1),
        ("anthropic-mcp.1.chunks.txt", 7),
        ("openai-reasoning-encrypted-content.1.chunks.txt", 13),
    ] {
        let api = fixture_api(name);
        let body = fixture_bodies(name).remove(0);
        let expected = replay_sse(api, body.as_bytes());
        let (base, server) = serve_in_pieces(decorated(&body, "\r\n").into_bytes(), piece).await;
        let provider = agentloop_providers::HttpProvider::new(config(api, &base)).unwrap();
        let turn = run(&provider, request("m")).await;
        server.await.unwrap();
        assert!(turn.error.is_none(), "{name}: {:?}", turn.error);
        assert_eq!(turn.chunks, expected.chunks, "{name}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Any number of cuts anywhere, with any line ending, gives the events
    /// of the whole body.
    #[test]
    fn recordings_under_random_chunking(
        cuts in proptest::collection::vec(0usize..5000, 0..40),
        ending in proptest::sample::select(vec!["\n", "\r\n", "\r"]),
    ) {
        let body = fixture_bodies("anthropic-mcp.1.chunks.txt").remove(0);
        let text = decorated(&body, ending);
        let bytes = text.as_bytes();
        let whole = parse_all(bytes);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let mut from = 0;
        for cut in cuts {
            parser.push(&bytes[from..cut], &mut events);
            from = cut;
        }
        parser.push(&bytes[from..], &mut events);
        parser.finish(&mut events);
        proptest::prop_assert_eq!(events, whole);
    }
}
