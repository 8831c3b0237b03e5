//! The squall UI server: a token-checked JSON API over a [`RecordingSource`] (a recording file,
//! or a live recording in a running program) and the web UI embedded from `ui/`.
//!
//! Every `/api/*` request must carry the access token (header `x-squall-token` or query
//! `token=`), checked before anything else: without it the answer is 401. Bad requests are 4xx
//! with `{"error": "..."}`.

pub mod api;
pub mod search;
pub mod source;
pub mod values;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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

const INDEX_HTML: &str = include_str!("../../../ui/index.html");
const APP_JS: &str = include_str!("../../../ui/app.js");
const APP_CSS: &str = include_str!("../../../ui/app.css");

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
        .route("/control/{action}", axum::routing::post(control))
        .route("/search", axum::routing::post(search_start))
        .route("/search/{id}", get(search_poll).delete(search_cancel))
        .fallback(|| async { ApiError::not_found("no such API route").into_response() })
        .layer(middleware::from_fn_with_state(st.clone(), check_token))
        .with_state(st);
    Router::new()
        .nest("/api", api)
        .route("/", get(|| async { asset(INDEX_HTML, "text/html; charset=utf-8") }))
        .route("/app.js", get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }))
        .route("/app.css", get(|| async { asset(APP_CSS, "text/css; charset=utf-8") }))
}

/// A running server.
pub struct Server {
    pub url: String,
    pub port: u16,
    pub token: String,
}

/// Binds `host:port` (port 0: any free one) now, serves `src` on a background thread, and
/// returns the URL to open (it carries the token).
pub fn spawn(src: Arc<dyn RecordingSource>, host: &str, port: u16) -> Result<Server, String> {
    let listener =
        std::net::TcpListener::bind((host, port)).map_err(|e| format!("cannot listen on {host}:{port}: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let token = new_token();
    let app = router(src, token.clone());
    std::thread::Builder::new()
        .name("squall-ui".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("squall: the UI server could not start: {e}");
                    return;
                }
            };
            rt.block_on(async move {
                match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => {
                        if let Err(e) = axum::serve(l, app).await {
                            eprintln!("squall: the UI server stopped: {e}");
                        }
                    }
                    Err(e) => eprintln!("squall: the UI server could not listen: {e}"),
                }
            });
        })
        .map_err(|e| e.to_string())?;
    let shown = if host == "0.0.0.0" || host.is_empty() { "127.0.0.1" } else { host };
    Ok(Server { url: format!("http://{shown}:{port}/?token={token}"), port, token })
}
