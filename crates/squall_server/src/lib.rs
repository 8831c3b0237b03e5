//! The squall UI server: a token-checked JSON API over a [`RecordingSource`] (a recording file,
//! or a live recording in a running program) and the web UI embedded from `ui/`.
//!
//! Every `/api/*` request must carry the access token (header `x-squall-token` or query
//! `token=`), checked before anything else: without it the answer is 401. Bad requests are 4xx
//! with `{"error": "..."}`.

pub mod api;
pub mod changes;
pub mod code_view;
pub mod outputs;
pub mod power;
pub mod search;
pub mod source;
pub mod values;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

pub use source::{with_view, FileSource, RecordingSource, TlInfo, View};

use api::{ApiError, ApiResult, Q};

pub struct AppState {
    pub src: Arc<dyn RecordingSource>,
    pub token: String,
    searches: Mutex<HashMap<u64, Arc<search::Search>>>,
    next_search: AtomicU64,
}

/// A fresh random access token (128 bits, hex).
pub fn new_token() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS random source failed");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn token_ok(req: &Request, token: &str) -> bool {
    let given = req.headers().get("x-squall-token").and_then(|h| h.to_str().ok()).map(str::to_string).or_else(|| {
        req.uri().query().and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("token=").map(str::to_string)))
    });
    match given {
        // Compare every byte (no early exit on the first difference).
        Some(g) => g.len() == token.len() && g.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0,
        None => false,
    }
}

async fn check_token(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if !token_ok(&req, &st.token) {
        return ApiError(StatusCode::UNAUTHORIZED, "missing or wrong access token: open the URL squall printed".into())
            .into_response();
    }
    next.run(req).await
}

/// Runs a query off the async workers (a live source may wait for the GIL).
async fn run_view(st: Arc<AppState>, f: impl FnOnce(&dyn View, bool) -> ApiResult + Send + 'static) -> Response {
    let res = tokio::task::spawn_blocking(move || {
        let live = st.src.live();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| with_view(&*st.src, |v| f(v, live))))
    })
    .await;
    match res {
        Ok(Ok(Ok(v))) => Json(v).into_response(),
        Ok(Ok(Err(e))) => e.into_response(),
        _ => ApiError(StatusCode::INTERNAL_SERVER_ERROR, "the query failed inside the server".into()).into_response(),
    }
}

macro_rules! q_route {
    ($f:path) => {
        get(|State(st): State<Arc<AppState>>, Query(q): Query<Q>| async move { run_view(st, move |v, _| $f(v, &q)).await })
    };
}

/// `POST /api/control/{action}`: hands the action to the source (a live program acts on it).
async fn control(State(st): State<Arc<AppState>>, Path(action): Path<String>, body: axum::body::Bytes) -> Response {
    let arg: serde_json::Value = if body.iter().all(u8::is_ascii_whitespace) {
        serde_json::Value::Null
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => return ApiError::bad(format!("bad control request body (JSON expected): {e}")).into_response(),
        }
    };
    if !st.src.live() {
        let msg = st.src.control(&action, &arg).err().unwrap_or_default();
        return ApiError(StatusCode::CONFLICT, msg).into_response();
    }
    let res = tokio::task::spawn_blocking(move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| st.src.control(&action, &arg)))
    })
    .await;
    match res {
        Ok(Ok(Ok(v))) => Json(v).into_response(),
        Ok(Ok(Err(e))) => ApiError::bad(e).into_response(),
        _ => ApiError(StatusCode::INTERNAL_SERVER_ERROR, "the control action failed inside the server".into())
            .into_response(),
    }
}

async fn search_start(State(st): State<Arc<AppState>>, body: axum::body::Bytes) -> Response {
    let r: search::SearchReq = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return ApiError::bad(format!("bad search request: {e}")).into_response(),
    };
    let src = st.src.clone();
    if let Err(e) = with_view(&*src, |v| search::validate(v, &r)) {
        return ApiError::bad(e).into_response();
    }
    let id = st.next_search.fetch_add(1, Ordering::Relaxed);
    let s = Arc::new(search::Search::default());
    {
        let mut all = st.searches.lock().unwrap_or_else(|e| e.into_inner());
        // Keep the last few searches only.
        if all.len() >= 16 {
            if let Some(&old) = all.keys().min() {
                if let Some(o) = all.remove(&old) {
                    o.cancel.store(true, Ordering::Relaxed);
                }
            }
        }
        all.insert(id, s.clone());
    }
    search::spawn(src, r, s);
    Json(json!({"id": id})).into_response()
}

fn find_search(st: &AppState, id: u64) -> Result<Arc<search::Search>, ApiError> {
    st.searches
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("no search {id}")))
}

async fn search_poll(State(st): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    let Ok(id) = id.parse::<u64>() else { return ApiError::bad(format!("bad search id `{id}`")).into_response() };
    match find_search(&st, id) {
        Ok(s) => Json(s.json(id)).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn search_cancel(State(st): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    let Ok(id) = id.parse::<u64>() else { return ApiError::bad(format!("bad search id `{id}`")).into_response() };
    match find_search(&st, id) {
        Ok(s) => {
            s.cancel.store(true, Ordering::Relaxed);
            Json(json!({"id": id, "cancelling": true})).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// The OpenAPI description of `/api` (`GET /api/openapi.json`), kept by hand: a test checks its
/// paths against the routes below, and a property test (schemathesis) checks the server against it.
pub const OPENAPI_JSON: &str = include_str!("../openapi.json");

/// The UI's files, embedded: (URL path, content type, text). A new file under `ui/` is one line.
const ASSETS: &[(&str, &str, &str)] = &[
    ("/", "text/html; charset=utf-8", include_str!("../../../ui/index.html")),
    ("/app.css", "text/css; charset=utf-8", include_str!("../../../ui/app.css")),
    ("/app.js", "text/javascript; charset=utf-8", include_str!("../../../ui/app.js")),
    ("/nav.js", "text/javascript; charset=utf-8", include_str!("../../../ui/nav.js")),
    ("/code.js", "text/javascript; charset=utf-8", include_str!("../../../ui/code.js")),
    ("/tools.js", "text/javascript; charset=utf-8", include_str!("../../../ui/tools.js")),
    ("/vendor/highlight.min.js", "text/javascript; charset=utf-8", include_str!("../../../ui/vendor/highlight.min.js")),
    ("/outputs.js", "text/javascript; charset=utf-8", include_str!("../../../ui/outputs.js")),
];

fn asset(body: &'static str, ctype: &'static str) -> Response {
    let mut r = body.into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r.headers_mut().insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    r
}

/// The whole app: `/api/*` (token-checked) and the UI's files.
pub fn router(src: Arc<dyn RecordingSource>, token: String) -> Router {
    let st = Arc::new(AppState { src, token, searches: Mutex::new(HashMap::new()), next_search: AtomicU64::new(1) });
    let api = Router::new()
        .route("/openapi.json", get(|| async { asset(OPENAPI_JSON, "application/json") }))
        .route(
            "/flows",
            get(|State(st): State<Arc<AppState>>| async move { run_view(st, |v, live| api::flows(v, live)).await }),
        )
        .route("/forms", get(|State(st): State<Arc<AppState>>| async move { run_view(st, |v, _| api::forms(v)).await }))
        .route("/entry", q_route!(api::entry))
        .route("/entries", q_route!(api::entries))
        .route("/frame", q_route!(api::frame))
        .route("/children", q_route!(api::children))
        .route("/fn_stats", q_route!(api::fn_stats))
        .route("/fn_calls", q_route!(api::fn_calls))
        .route("/bookmarks", q_route!(api::code_bookmarks))
        .route("/exceptions", q_route!(api::exceptions))
        .route("/value", q_route!(api::value))
        .route("/source", q_route!(api::source))
        .route("/find", q_route!(api::find))
        .route("/loop", q_route!(api::loops))
        .route("/goto", q_route!(api::goto))
        .route("/order", q_route!(api::order))
        .route("/history", q_route!(api::history))
        .route("/lines", q_route!(code_view::line_hits))
        .route("/frame_lines", q_route!(code_view::frame_lines))
        .route("/site_hits", q_route!(code_view::site_hits))
        .route("/site_entries", q_route!(code_view::site_entries))
        .route("/changes", q_route!(changes::changes))
        .route("/power_step", q_route!(power::power_step))
        .route("/outputs", q_route!(outputs::outputs))
        .route("/control/{action}", axum::routing::post(control))
        .route("/search", axum::routing::post(search_start))
        .route("/search/{id}", get(search_poll).delete(search_cancel))
        .fallback(|| async { ApiError::not_found("no such API route").into_response() })
        .layer(middleware::from_fn_with_state(st.clone(), check_token))
        .with_state(st);
    let mut app = Router::new().nest("/api", api);
    for &(path, ctype, body) in ASSETS {
        app = app.route(path, get(move || async move { asset(body, ctype) }));
    }
    app
}

/// How the server listens. `Default`: loopback, any free port, a random token, the timeouts and
/// connection cap below.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub host: String,
    pub port: u16,
    /// The access token; `None`: a fresh random one ([`new_token`]). Checked by [`check_token_text`].
    pub token: Option<String>,
    /// A client must send a request's whole header within this time, or its connection is closed.
    pub header_timeout: Duration,
    /// A request (reading its body and answering it) must finish within this time: 408 otherwise.
    pub request_timeout: Duration,
    /// Connections served at once; more are closed as soon as they are accepted.
    pub max_connections: usize,
}

impl Default for ServeOptions {
    fn default() -> ServeOptions {
        ServeOptions {
            host: "127.0.0.1".into(),
            port: 0,
            token: None,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(120),
            max_connections: 64,
        }
    }
}

/// Why a user's own token is refused (`None`: usable). It travels in URLs and headers, so it is
/// URL-safe text, and long enough not to be guessed.
pub fn check_token_text(token: &str) -> Option<String> {
    if token.len() < 16 {
        return Some(format!("the access token must be at least 16 characters long (this one has {})", token.len()));
    }
    if token.len() > 256 {
        return Some(format!("the access token must be at most 256 characters long (this one has {})", token.len()));
    }
    if let Some(c) = token.chars().find(|c| !(c.is_ascii_alphanumeric() || "-._~".contains(*c))) {
        return Some(format!(
            "the access token may hold only letters, digits and - . _ ~ (it has {c:?}); e.g. `python -c 'import secrets; print(secrets.token_hex(16))'`"
        ));
    }
    None
}

/// True for an address only this machine can reach (127.0.0.0/8, ::1, `localhost`).
pub fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost") || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The host names a request may be addressed to (its `Host`, and `Origin` if it has one): the
/// loopback names, the bound host and, for a wildcard bind, this machine's name and the address
/// the connection came in on. Anything else (a DNS-rebinding page, a stray proxy) is refused
/// before the token is looked at.
#[derive(Clone, Debug)]
pub struct HostAllow {
    names: Vec<String>,
    any_local: bool,
}

impl HostAllow {
    pub fn new(bound: &str, extra: &[String]) -> HostAllow {
        let bound = bound.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        let any_local = bound.is_empty() || bound.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_unspecified());
        let mut names: Vec<String> = ["localhost", "127.0.0.1", "::1"].iter().map(|s| s.to_string()).collect();
        names.push(bound);
        names.extend(extra.iter().map(|s| s.to_ascii_lowercase()));
        HostAllow { names, any_local }
    }

    /// Loopback names only.
    pub fn loopback() -> HostAllow {
        HostAllow::new("127.0.0.1", &[])
    }

    fn allows(&self, host: &str, local: Option<std::net::IpAddr>) -> bool {
        let h = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        if self.names.contains(&h) || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()) {
            return true;
        }
        self.any_local && local.is_some_and(|l| h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip == l))
    }
}

/// The host part of a `Host` header value or an origin's authority (port cut off).
fn host_part(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(h, p)| if p.bytes().all(|b| b.is_ascii_digit()) { h } else { authority })
}

/// The local address a connection was accepted on (set by [`spawn`]'s accept loop).
#[derive(Clone, Copy, Debug)]
pub struct LocalAddr(pub std::net::SocketAddr);

async fn check_host(State(allow): State<Arc<HostAllow>>, req: Request, next: Next) -> Response {
    let local = req.extensions().get::<LocalAddr>().map(|l| l.0.ip());
    let refuse = |what: &str, value: &str| {
        let shown: String = value.chars().take(100).collect();
        ApiError(
            StatusCode::FORBIDDEN,
            format!(
                "refused: {what} `{shown}` is not this server (only loopback names and the address it listens on are served; see docs/security.md)"
            ),
        )
        .into_response()
    };
    if let Some(h) = req.headers().get(header::HOST) {
        let Ok(h) = h.to_str() else { return refuse("Host", &String::from_utf8_lossy(h.as_bytes())) };
        if !allow.allows(host_part(h), local) {
            return refuse("Host", h);
        }
    }
    if let Some(o) = req.headers().get(header::ORIGIN) {
        let text = String::from_utf8_lossy(o.as_bytes()).into_owned();
        let authority = text.strip_prefix("http://").or_else(|| text.strip_prefix("https://"));
        if !authority.is_some_and(|a| allow.allows(host_part(a), local)) {
            return refuse("Origin", &text);
        }
    }
    next.run(req).await
}

/// The app as served: [`router`] behind the Host/Origin allow-list and the request timeouts.
pub fn app(src: Arc<dyn RecordingSource>, token: String, allow: HostAllow, request_timeout: Duration) -> Router {
    router(src, token)
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(request_timeout))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, request_timeout))
        .layer(middleware::from_fn_with_state(Arc::new(allow), check_host))
}

/// A running server.
pub struct Server {
    /// The URL to open, with the token.
    pub url: String,
    /// The same without the token (safe to log).
    pub base_url: String,
    pub port: u16,
    pub token: String,
    /// True when other machines may reach it (not bound to a loopback address).
    pub remote: bool,
}

fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for writes of its length, which is what gethostname is told;
    // a name it truncated without a NUL is read up to the buffer's end below.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    std::str::from_utf8(&buf[..end]).ok().filter(|s| !s.is_empty()).map(str::to_string)
}

/// Serves connections from `listener`: HTTP/1 with hyper, the header-read timeout on each
/// connection (hyper's, with tokio's timer), at most `max` connections at once.
async fn serve_connections(listener: tokio::net::TcpListener, app: Router, header_timeout: Duration, max: usize) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let slots = Arc::new(tokio::sync::Semaphore::new(max.max(1)));
    loop {
        let (socket, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors and the like: wait and go on rather than spin.
                eprintln!("squall: the UI server could not accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        // Past the cap a connection is closed at once: accepting keeps the listen backlog from
        // filling (which would leave new clients hanging), closing keeps the server's load bounded.
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            drop(socket);
            continue;
        };
        let local = socket.local_addr().ok();
        let app = app.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                if let Some(l) = local {
                    req.extensions_mut().insert(LocalAddr(l));
                }
                tower::ServiceExt::oneshot(app.clone(), req)
            });
            let mut b = hyper::server::conn::http1::Builder::new();
            b.timer(TokioTimer::new()).header_read_timeout(header_timeout);
            let _ = b.serve_connection(TokioIo::new(socket), svc).await;
            drop(permit);
        });
    }
}

/// Binds `opts.host:opts.port` (port 0: any free one) now, serves `src` on a background thread,
/// and returns the URL to open (it carries the token).
pub fn spawn(src: Arc<dyn RecordingSource>, opts: &ServeOptions) -> Result<Server, String> {
    let host = opts.host.as_str();
    let token = match &opts.token {
        Some(t) => {
            if let Some(why) = check_token_text(t) {
                return Err(why);
            }
            t.clone()
        }
        None => new_token(),
    };
    let bind_host = host.trim_start_matches('[').trim_end_matches(']');
    let listener = std::net::TcpListener::bind((bind_host, opts.port))
        .map_err(|e| format!("cannot listen on {host}:{}: {e}", opts.port))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let port = local.port();
    let remote = !local.ip().is_loopback();
    // The URL names what a browser elsewhere can reach: this machine's name for a wildcard bind.
    let name = if local.ip().is_unspecified() { hostname() } else { None };
    let shown = match (&name, local.ip()) {
        (Some(n), _) => n.clone(),
        (None, ip) if ip.is_unspecified() => "127.0.0.1".to_string(),
        (None, std::net::IpAddr::V6(ip)) => format!("[{ip}]"),
        (None, ip) => ip.to_string(),
    };
    let allow = HostAllow::new(bind_host, name.as_slice());
    let app = app(src, token.clone(), allow, opts.request_timeout);
    let (header_timeout, max) = (opts.header_timeout, opts.max_connections);
    squall_trace::quiet_thread::spawn(std::thread::Builder::new().name("squall-ui".into()), move || {
        let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("squall: the UI server could not start: {e}");
                return;
            }
        };
        rt.block_on(async move {
            match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => serve_connections(l, app, header_timeout, max).await,
                Err(e) => eprintln!("squall: the UI server could not listen: {e}"),
            }
        });
    })
    .map_err(|e| e.to_string())?;
    let base_url = format!("http://{shown}:{port}/");
    Ok(Server { url: format!("{base_url}?token={token}"), base_url, port, token, remote })
}
