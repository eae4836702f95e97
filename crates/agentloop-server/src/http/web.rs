//! The web page: one document, its script modules (`app.js`, which loads
//! the views kept in files of their own) and one stylesheet, embedded in
//! the binary (no Node at run time, nothing fetched from elsewhere) and
//! served with a strict Content-Security-Policy: no inline script or
//! style, every resource from this origin.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::state::AppState;

const INDEX: &str = include_str!("../../web/index.html");
const APP_JS: &str = include_str!("../../web/app.js");
const APP_CSS: &str = include_str!("../../web/app.css");
/// The script modules `app.js` imports, by name under `/assets/`.
const MODULES: &[(&str, &str)] = &[
    ("/assets/steer.js", include_str!("../../web/steer.js")),
    ("/assets/memories.js", include_str!("../../web/memories.js")),
    ("/assets/audit.js", include_str!("../../web/audit.js")),
    (
        "/assets/inspector.js",
        include_str!("../../web/inspector.js"),
    ),
    ("/assets/budgets.js", include_str!("../../web/budgets.js")),
    (
        "/assets/schedules.js",
        include_str!("../../web/schedules.js"),
    ),
    ("/assets/roles.js", include_str!("../../web/roles.js")),
];

/// The policy every page response carries.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The page's routes.
pub(crate) fn routes() -> Router<AppState> {
    let mut router = Router::new();
    for (path, body) in MODULES {
        router = router.route(
            path,
            get(move || async move { page("text/javascript; charset=utf-8", body) }),
        );
    }
    router
        .route(
            "/",
            get(|| async { page("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/assets/app.js",
            get(|| async { page("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/assets/app.css",
            get(|| async { page("text/css; charset=utf-8", APP_CSS) }),
        )
}

fn page(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-cache"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
