//! Where a delivery may go. A URL is `http` or `https` with a host; its
//! addresses are resolved at delivery time and every one must be public
//! (not loopback, private, link-local, shared, unspecified, multicast or
//! documentation space) unless the operator allows private addresses. The
//! request then goes to the address checked, so a name that resolves
//! differently a moment later (DNS rebinding) cannot redirect it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why a URL is not delivered to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Not an absolute `http(s)` URL with a host.
    #[error("not an http(s) URL with a host: {0}")]
    Url(String),
    /// The host did not resolve.
    #[error("cannot resolve {host}: {message}")]
    Resolve {
        /// The host.
        host: String,
        /// Why.
        message: String,
    },
    /// It resolved to an address deliveries may not reach.
    #[error(
        "{host} resolves to {address}, a loopback or private address; the operator can allow those (serve --webhooks-allow-private)"
    )]
    Private {
        /// The host.
        host: String,
        /// The address.
        address: IpAddr,
    },
}

/// The parts of a URL a delivery needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `http` or `https`.
    pub https: bool,
    /// The host as written (a name, or an address; IPv6 without brackets).
    pub host: String,
    /// The port (the scheme's default when absent).
    pub port: u16,
}

/// Parses `url`: an absolute `http(s)` URL with a host, no user info.
pub fn parse(url: &str) -> Result<Target, TargetError> {
    let bad = || TargetError::Url(url.to_owned());
    let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        return Err(bad());
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() || authority.contains('@') {
        return Err(bad());
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(bad)?;
        if host.parse::<Ipv6Addr>().is_err() {
            return Err(bad());
        }
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(bad()),
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(bad());
    }
    let port = match port {
        Some(p) => p.parse::<u16>().map_err(|_| bad())?,
        None if https => 443,
        None => 80,
    };
    Ok(Target {
        https,
        host: host.to_owned(),
        port,
    })
}

/// Resolves `target` to one address deliveries may reach.
pub async fn resolve(target: &Target, allow_private: bool) -> Result<SocketAddr, TargetError> {
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((target.host.as_str(), target.port))
        .await
        .map_err(|e| TargetError::Resolve {
            host: target.host.clone(),
            message: e.to_string(),
        })?
        .collect();
    // Every address must pass: a name with one private address among
    // public ones could be steered to it.
    for address in &addresses {
        if !allow_private && !is_public(address.ip()) {
            return Err(TargetError::Private {
                host: target.host.clone(),
                address: address.ip(),
            });
        }
    }
    addresses
        .first()
        .copied()
        .ok_or_else(|| TargetError::Resolve {
            host: target.host.clone(),
            message: "no address".to_owned(),
        })
}

/// Whether `ip` is a public unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        // 100.64.0.0/10, shared address space (carrier-grade NAT).
        || (a == 100 && (64..128).contains(&b))
        // 192.0.0.0/24 protocol assignments, 198.18.0.0/15 benchmarking,
        // 240.0.0.0/4 reserved.
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // fc00::/7 unique local, fe80::/10 link-local, 2001:db8::/32 documentation.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        // 64:ff9b::/96 NAT64 can reach IPv4 private space.
        || (first == 0x0064 && ip.segments()[1] == 0xff9b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_with_their_ports() {
        assert_eq!(
            parse("https://hooks.example.com/x?y=1"),
            Ok(Target {
                https: true,
                host: "hooks.example.com".into(),
                port: 443
            })
        );
        assert_eq!(parse("http://127.0.0.1:8080/h").map(|t| t.port), Ok(8080));
        assert_eq!(parse("http://[::1]:9/").map(|t| t.host), Ok("::1".into()));
        for bad in [
            "ftp://x",
            "http://",
            "http://user@host/",
            "hooks.example.com",
            "http://h:99999/",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn private_addresses_are_not_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[tokio::test]
    async fn loopback_is_refused_unless_allowed() {
        let target = parse("http://127.0.0.1:9/").unwrap();
        assert!(matches!(
            resolve(&target, false).await,
            Err(TargetError::Private { .. })
        ));
        assert!(resolve(&target, true).await.is_ok());
    }
}
