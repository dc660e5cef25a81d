//! How the server is started (`rlm mcp`'s flags).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

/// Where the server works and how it is reached.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ServerOptions {
    /// The only directory tools may read or write below (paths outside it are refused);
    /// relative paths in tool arguments start here.
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR", default_value = "."))]
    pub root: PathBuf,
    /// Entries per page of `resources/list` (buffers and chunks as rlm:// URIs).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000)))]
    pub page_size: u32,
    /// Serve over MCP streamable HTTP at http://ADDR/mcp instead of stdio. ADDR is a loopback
    /// address with a port (127.0.0.1:8765, [::1]:8765, localhost:8765); port 0 picks a free
    /// one. The URL is printed on stderr.
    #[cfg_attr(feature = "clap", arg(long, value_name = "ADDR", value_parser = loopback_address))]
    pub http: Option<SocketAddr>,
    /// The store every store tool uses, and `run`'s `store: true` (default: `RLM_STORE`, else
    /// `.rlm` in the root) [env: RLM_STORE].
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub store: Option<PathBuf>,
    /// The most one tool result carries, in bytes of its records (at least 1024): their JSON
    /// as structured content and again as text. Past it a result stops and says what it left
    /// out: grep, search and list_buffers give a cursor for the rest, peek the range that
    /// continues.
    #[cfg_attr(feature = "clap", arg(long, value_name = "BYTES", default_value_t = rlm_app::ReplyLimit::DEFAULT.bytes, value_parser = reply_bytes))]
    pub max_reply_bytes: usize,
}

/// `--max-reply-bytes`' value: a whole number of bytes, at least
/// [`rlm_app::ReplyLimit::MIN_BYTES`].
pub fn reply_bytes(value: &str) -> Result<usize, String> {
    let bytes: usize = value
        .trim()
        .parse()
        .map_err(|_| format!("expected a whole number of bytes, not {value:?}"))?;
    let least = rlm_app::ReplyLimit::MIN_BYTES;
    if bytes < least {
        return Err(format!(
            "{bytes} bytes is too small for a reply: at least {least}"
        ));
    }
    Ok(bytes)
}

/// `--http`'s value: an address on this machine only. The tools read the files below the root
/// and spend the server's API keys, and the transport has no authentication, so the server is
/// never reachable from another machine.
pub fn loopback_address(value: &str) -> Result<SocketAddr, String> {
    let address = match value.strip_prefix("localhost:") {
        Some(port) => port
            .parse::<u16>()
            .map(|port| SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .map_err(|err| format!("invalid port {port:?}: {err}"))?,
        None => value.parse::<SocketAddr>().map_err(|_| {
            "expected a loopback address and port, such as 127.0.0.1:8765, [::1]:8765 or \
             localhost:8765"
                .to_owned()
        })?,
    };
    if !address.ip().is_loopback() {
        return Err(format!(
            "{} is not a loopback address: rlm mcp serves HTTP on this machine only (127.0.0.1, \
             [::1] or localhost), because its tools read your files and use your API keys \
             without authentication",
            address.ip()
        ));
    }
    Ok(address)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_addresses_are_accepted_and_others_refused() {
        assert_eq!(
            loopback_address("127.0.0.1:0").unwrap(),
            "127.0.0.1:0".parse().unwrap()
        );
        assert_eq!(
            loopback_address("[::1]:8765").unwrap(),
            "[::1]:8765".parse().unwrap()
        );
        assert_eq!(
            loopback_address("localhost:8765").unwrap(),
            "127.0.0.1:8765".parse().unwrap()
        );
        assert!(loopback_address("127.1.2.3:80").is_ok());
        for outside in [
            "0.0.0.0:8765",
            "192.168.1.10:8765",
            "[::]:8765",
            "8.8.8.8:53",
        ] {
            let refusal = loopback_address(outside).unwrap_err();
            assert!(refusal.contains("not a loopback address"), "{refusal}");
        }
        for malformed in [
            "127.0.0.1",
            "localhost",
            "localhost:http",
            "example.com:80",
            "",
        ] {
            assert!(loopback_address(malformed).is_err(), "{malformed}");
        }
    }
}
