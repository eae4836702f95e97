//! Reverse proxies the server believes about where a request comes from.
//!
//! Behind a proxy every connection's peer is the proxy, so counting
//! unauthenticated requests by peer would put every user in one bucket.
//! A proxy appends the address it was reached from to `X-Forwarded-For`;
//! any client can write that header too, so only entries added by a
//! trusted proxy are believed. The list is read from its right end
//! (the entry the nearest proxy added) leftwards while the address in hand
//! is a trusted proxy's: the first address that is not, is the client.
//! An entry that is not an address (`unknown`, an obfuscated name) stops
//! the walk at the proxy that wrote it, so a malformed header never gives
//! a client another bucket.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use axum::http::HeaderMap;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// The header proxies append the addresses they were reached from to.
pub const FORWARDED_FOR: &str = "x-forwarded-for";

/// One trusted proxy: an address, or a network of them (`10.0.0.0/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrustedProxy(IpNet);

/// Text that is neither an address nor a network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an address or a network (such as 10.0.0.1 or 10.0.0.0/8)")]
pub struct NotAProxyAddress(String);

impl FromStr for TrustedProxy {
    type Err = NotAProxyAddress;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if let Ok(network) = text.parse::<IpNet>() {
            return Ok(Self(network.trunc()));
        }
        text.parse::<IpAddr>()
            .map(|address| Self(IpNet::from(address.to_canonical())))
            .map_err(|_| NotAProxyAddress(text.to_owned()))
    }
}

impl std::fmt::Display for TrustedProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A single address is shown as written, without `/32` or `/128`.
        if self.0.prefix_len() == self.0.max_prefix_len() {
            self.0.addr().fmt(f)
        } else {
            self.0.fmt(f)
        }
    }
}

impl Serialize for TrustedProxy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TrustedProxy {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl TrustedProxy {
    fn holds(&self, address: IpAddr) -> bool {
        self.0.contains(&address.to_canonical())
    }
}

/// The proxies whose `X-Forwarded-For` entries are believed; none by
/// default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<TrustedProxy>);

impl TrustedProxies {
    /// These proxies.
    pub fn new(proxies: impl IntoIterator<Item = TrustedProxy>) -> Self {
        Self(proxies.into_iter().collect())
    }

    /// Whether no proxy is trusted (the header is then never read).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The proxies, as configured.
    pub fn iter(&self) -> impl Iterator<Item = &TrustedProxy> {
        self.0.iter()
    }

    fn trust(&self, address: IpAddr) -> bool {
        self.0.iter().any(|proxy| proxy.holds(address))
    }

    /// The address a request from `peer` with `headers` comes from: the
    /// peer, unless it is a trusted proxy (see the module documentation).
    pub fn client_address(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let mut client = peer;
        if !self.trust(client) {
            return client;
        }
        // Several header lines are one list, in order (RFC 9110, 5.3).
        let lines: Vec<&str> = headers
            .get_all(FORWARDED_FOR)
            .iter()
            .filter_map(|line| line.to_str().ok())
            .collect();
        for entry in lines.iter().rev().flat_map(|line| line.rsplit(',')) {
            let Some(address) = entry_address(entry) else {
                break;
            };
            client = address;
            if !self.trust(client) {
                break;
            }
        }
        client
    }
}

/// The address of one `X-Forwarded-For` entry: `192.0.2.1`, `2001:db8::1`,
/// or either with a port (`192.0.2.1:4711`, `[2001:db8::1]:4711`).
fn entry_address(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    entry
        .parse::<IpAddr>()
        .or_else(|_| entry.parse::<SocketAddr>().map(|socket| socket.ip()))
        .ok()
        .map(|address| address.to_canonical())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use axum::http::HeaderValue;

    use super::*;

    fn proxies(list: &[&str]) -> TrustedProxies {
        TrustedProxies::new(list.iter().map(|text| text.parse().unwrap()))
    }

    fn headers(lines: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(FORWARDED_FOR, HeaderValue::from_str(line).unwrap());
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn addresses_and_networks_are_read_and_shown_as_written() {
        for (written, shown) in [
            ("10.0.0.7", "10.0.0.7"),
            (" 10.1.2.3/8 ", "10.0.0.0/8"),
            ("2001:db8::1", "2001:db8::1"),
            ("2001:db8::/32", "2001:db8::/32"),
            ("::ffff:192.0.2.1", "192.0.2.1"),
        ] {
            let proxy: TrustedProxy = written.parse().unwrap();
            assert_eq!(proxy.to_string(), shown, "{written}");
        }
        for wrong in ["", "localhost", "10.0.0.0/33", "10.0.0.1:80", "*"] {
            let error = wrong.parse::<TrustedProxy>().unwrap_err();
            assert!(error.to_string().contains("not an address"), "{wrong}");
        }
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let trusted = proxies(&["10.0.0.1"]);
        let forged = headers(&["203.0.113.9"]);
        assert_eq!(
            trusted.client_address(ip("198.51.100.4"), &forged),
            ip("198.51.100.4")
        );
        assert_eq!(
            TrustedProxies::default().client_address(ip("10.0.0.1"), &forged),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn the_nearest_untrusted_entry_is_the_client() {
        let trusted = proxies(&["10.0.0.0/8", "2001:db8::/32"]);
        // The client put a forged entry first; the proxies appended theirs.
        let chain = headers(&["192.0.2.66, 203.0.113.9, 10.1.1.1"]);
        assert_eq!(
            trusted.client_address(ip("10.0.0.1"), &chain),
            ip("203.0.113.9")
        );
        // Several lines are one list; ports and brackets are read.
        let lines = headers(&[
            "192.0.2.66",
            "[2001:db8::5]:443,203.0.113.9:5000",
            "10.2.2.2",
        ]);
        assert_eq!(
            trusted.client_address(ip("::ffff:10.0.0.1"), &lines),
            ip("203.0.113.9")
        );
        // Only proxies in the chain: the farthest one is the client.
        let proxies_only = headers(&["10.9.9.9, 10.1.1.1"]);
        assert_eq!(
            trusted.client_address(ip("10.0.0.1"), &proxies_only),
            ip("10.9.9.9")
        );
    }

    #[test]
    fn a_missing_or_malformed_entry_leaves_the_proxy_as_the_client() {
        let trusted = proxies(&["10.0.0.0/8"]);
        assert_eq!(
            trusted.client_address(ip("10.0.0.1"), &HeaderMap::new()),
            ip("10.0.0.1")
        );
        for line in ["unknown", "203.0.113.9, _hidden", "", "203.0.113.9,"] {
            assert_eq!(
                trusted.client_address(ip("10.0.0.1"), &headers(&[line])),
                ip("10.0.0.1"),
                "{line:?}"
            );
        }
        // The walk stops at the malformed entry, after a trusted hop.
        let after_hop = headers(&["203.0.113.9, unknown, 10.3.3.3"]);
        assert_eq!(
            trusted.client_address(ip("10.0.0.1"), &after_hop),
            ip("10.3.3.3")
        );
    }
}
