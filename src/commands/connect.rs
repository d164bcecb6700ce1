//! `execguard connect HOST PORT`: a TCP connection to HOST:PORT through the session's proxy,
//! on stdin and stdout. It is the `ProxyCommand` of the session's ssh (the git wrapper names
//! it in `GIT_SSH_COMMAND`, docs/session.md, *Network*): a trusted program the session cannot
//! replace, where a `ProxyCommand` of the session's own would be a program it wrote.

use anyhow::{bail, Context as _, Result};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::ExitCode;

use execguard_wrappers::git::ssh::{proxy_address, PROXY_VARS};

#[derive(clap::Args)]
pub struct Args {
    /// The host to reach (a name, resolved and checked by the proxy, or an address)
    host: String,
    /// Its port
    port: u16,
}

/// The end of the proxy's answer head, and its status code.
fn head_end(buf: &[u8]) -> Option<(usize, Option<u16>)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let status = std::str::from_utf8(&buf[..end])
        .ok()
        .and_then(|h| h.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok());
    Some((end, status))
}

pub fn run(args: Args) -> Result<ExitCode> {
    let dest = format!("{}:{}", args.host, args.port);
    let Some(proxy) = proxy_address(|n| std::env::var(n).ok()) else {
        bail!("connect {dest}: no http:// proxy in {}: execguard connect goes through the session's proxy, which execguard run names there", PROXY_VARS.join(", "));
    };
    let mut up =
        TcpStream::connect(&proxy).with_context(|| format!("connect {dest}: the proxy {proxy}"))?;
    // ssh's small packets go out at once (a relay that waits meets the delayed ACK).
    let _ = up.set_nodelay(true);
    let host = if args.host.contains(':') {
        format!("[{}]", args.host)
    } else {
        args.host.clone()
    };
    write!(
        up,
        "CONNECT {host}:{} HTTP/1.1\r\nHost: {host}:{}\r\n\r\n",
        args.port, args.port
    )?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let (end, status) = loop {
        if let Some(found) = head_end(&buf) {
            break found;
        }
        let n = up.read(&mut chunk)?;
        if n == 0 || buf.len() > 16384 {
            bail!("connect {dest}: the proxy {proxy} closed without an answer");
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    if status != Some(200) {
        let mut body = buf[end..].to_vec();
        let _ = up.take(8192).read_to_end(&mut body);
        let body = String::from_utf8_lossy(&body);
        let body = body.trim().trim_start_matches("execguard: ");
        bail!("connect {dest}: {body}");
    }
    let mut stdout = std::io::stdout().lock();
    // What came with the answer (the server's first bytes, an ssh banner) goes out first.
    stdout.write_all(&buf[end..])?;
    stdout.flush()?;
    let mut to_proxy = up.try_clone()?;
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut to_proxy);
        let _ = to_proxy.shutdown(Shutdown::Write);
    });
    let mut from = up;
    loop {
        let n = match from.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).with_context(|| format!("connect {dest}")),
        };
        stdout.write_all(&chunk[..n])?;
        stdout.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_head_ends_at_its_blank_line() {
        assert_eq!(
            head_end(b"HTTP/1.1 200 Connection established\r\n\r\nSSH-2.0-x"),
            Some((39, Some(200)))
        );
        assert_eq!(head_end(b"HTTP/1.1 403 Forbidden\r\nA: b\r\n"), None);
        assert_eq!(
            head_end(b"HTTP/1.1 403 Forbidden\r\n\r\n").map(|h| h.1),
            Some(Some(403))
        );
    }
}
