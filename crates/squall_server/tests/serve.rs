//! The server as it listens (real sockets through `spawn`): the Host/Origin allow-list, the
//! header-read and request timeouts, the connection cap, the user's own token and what a
//! wildcard bind prints.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use squall_server::{spawn, RecordingSource, ServeOptions, Server, View};

/// An empty recording; `slow` makes every query take that long.
struct Empty {
    slow: Duration,
}

struct EmptyView(squall_trace::Forms);

impl View for EmptyView {
    fn forms(&self) -> &squall_trace::Forms {
        &self.0
    }
    fn timelines(&self) -> Vec<squall_server::TlInfo<'_>> {
        vec![]
    }
    fn values(&self, _tl: usize) -> Option<&squall_trace::ValueStore> {
        None
    }
    fn info(&self) -> Value {
        json!({"program": "empty"})
    }
}

impl RecordingSource for Empty {
    fn with_view(&self, f: &mut dyn FnMut(&dyn View)) {
        std::thread::sleep(self.slow);
        f(&EmptyView(squall_trace::Forms::new()))
    }
}

fn serve(opts: ServeOptions) -> Server {
    spawn(Arc::new(Empty { slow: Duration::ZERO }), &opts).unwrap()
}

/// Sends `req` raw and returns the status line's code and the whole answer (EOF or timeout).
fn raw(port: u16, req: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(req.as_bytes()); // a connection past the cap may be closed already
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let code = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, out)
}

fn get(srv: &Server, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut req = format!("GET {path} HTTP/1.1\r\nconnection: close\r\nx-squall-token: {}\r\n", srv.token);
    for (k, v) in headers {
        req += &format!("{k}: {v}\r\n");
    }
    raw(srv.port, &(req + "\r\n"))
}

#[test]
fn only_this_servers_host_names_are_served() {
    let srv = serve(ServeOptions::default());
    let here = format!("127.0.0.1:{}", srv.port);
    for host in [here.as_str(), "localhost", "[::1]:80", "127.0.0.2"] {
        assert_eq!(get(&srv, "/api/flows", &[("host", host)]).0, 200, "{host}");
    }
    // A DNS-rebinding page reaches 127.0.0.1 under its own name: refused before the token.
    let (code, body) = get(&srv, "/api/flows", &[("host", "attacker.example:8080")]);
    assert_eq!(code, 403);
    assert!(body.contains("refused: Host `attacker.example:8080` is not this server"), "{body}");
    assert_eq!(get(&srv, "/", &[("host", "attacker.example")]).0, 403);
    // Origin, when sent, must be this server too.
    let ok_origin = format!("http://127.0.0.1:{}", srv.port);
    assert_eq!(get(&srv, "/api/flows", &[("host", &here), ("origin", &ok_origin)]).0, 200);
    for origin in ["http://attacker.example", "null", "file://", "http://127.0.0.1.attacker.example"] {
        let (code, body) = get(&srv, "/api/flows", &[("host", &here), ("origin", origin)]);
        assert_eq!(code, 403, "{origin}: {body}");
    }
}

#[test]
fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let srv = serve(ServeOptions { header_timeout: Duration::from_millis(300), ..Default::default() });
    let mut conns: Vec<TcpStream> = (0..30)
        .map(|i| {
            let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
            // half a request (no blank line), nothing at all, or a request and then silence
            let sent: &[u8] = match i % 3 {
                0 => b"GET /api/flows HTTP/1.1\r\nhost: localhost\r\n",
                1 => b"",
                _ => b"GET / HTTP/1.1\r\nhost: localhost\r\n\r\n",
            };
            s.write_all(sent).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s
        })
        .collect();
    let t = Instant::now();
    for s in &mut conns {
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf); // returns at EOF: the server closed it
    }
    assert!(t.elapsed() < Duration::from_secs(5), "half-open connections held for {:?}", t.elapsed());
    // and the server still serves
    assert_eq!(get(&srv, "/api/flows", &[]).0, 200);
}

#[test]
fn connections_beyond_the_cap_are_closed_until_a_slot_frees() {
    let srv = serve(ServeOptions { max_connections: 2, header_timeout: Duration::from_secs(30), ..Default::default() });
    let idle: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\n").unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // A third is accepted and closed without an answer (not left hanging in the backlog).
    let (code, out) = raw(srv.port, "GET / HTTP/1.1\r\nconnection: close\r\n\r\n");
    assert_eq!((code, out.as_str()), (0, ""));
    drop(idle);
    std::thread::sleep(Duration::from_millis(200));
    let (code, out) = raw(srv.port, "GET / HTTP/1.1\r\nconnection: close\r\n\r\n");
    assert_eq!(code, 200, "{out}");
}

#[test]
fn a_request_past_the_request_timeout_is_a_408() {
    let opts = ServeOptions { request_timeout: Duration::from_millis(300), ..Default::default() };
    let srv = spawn(Arc::new(Empty { slow: Duration::from_secs(3) }), &opts).unwrap();
    let t = Instant::now();
    let (code, _) = get(&srv, "/api/flows", &[]);
    assert_eq!(code, 408);
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn the_users_own_token_is_used_if_it_is_a_good_one() {
    let token = "my-own-token_0123456789";
    let srv = serve(ServeOptions { token: Some(token.into()), ..Default::default() });
    assert_eq!(srv.token, token);
    assert!(srv.url.ends_with(&format!("/?token={token}")));
    assert!(!srv.base_url.contains(token));
    for (bad, why) in [("short", "at least 16 characters"), ("a token with spaces in it", "only letters, digits")] {
        let e = spawn(
            Arc::new(Empty { slow: Duration::ZERO }),
            &ServeOptions { token: Some(bad.into()), ..Default::default() },
        )
        .err()
        .unwrap();
        assert!(e.contains(why), "{e}");
        assert!(!e.contains(bad), "the refused token is not echoed: {e}");
    }
}

#[test]
fn loopback_bind_is_local_and_a_wildcard_bind_says_where_to_reach_it() {
    let srv = serve(ServeOptions::default());
    assert!(!srv.remote);
    assert!(srv.url.starts_with("http://127.0.0.1:"));
    let wild = serve(ServeOptions { host: "0.0.0.0".into(), ..Default::default() });
    assert!(wild.remote);
    assert!(!wild.url.starts_with("http://127.0.0.1:") && !wild.url.starts_with("http://0.0.0.0:"), "{}", wild.url);
    // reachable by loopback and by the name it printed
    let name = wild.base_url.trim_start_matches("http://").split(':').next().unwrap().to_string();
    assert_eq!(get(&wild, "/api/flows", &[("host", "127.0.0.1")]).0, 200);
    assert_eq!(get(&wild, "/api/flows", &[("host", &name)]).0, 200);
    assert_eq!(get(&wild, "/api/flows", &[("host", "attacker.example")]).0, 403);
}
