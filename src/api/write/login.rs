//! Login as SVV's OpenAM answered it, so write clients log in unchanged: LtGlahn's
//! nvdbapi-V2 `skrivnvdb.apiskrivforbindelse.login()` posts to `<site>/openam/json/authenticate`
//! (query `realm=External&authIndexType=module&authIndexValue=LDAP`, no body) with the headers
//! `X-OpenAM-Username` / `X-OpenAM-Password`, reads `tokenId` from the JSON answer and sends it
//! as the `iPlanetDirectoryProOAM` cookie; `loggut()` gets `<site>/openam/UI/Logout`. Its
//! `apiforbindelse.__loginskriv()` sends the same headers and parameters as a GET to the site
//! root (`self.apiurl`); vegdb answers that like the POST (without the headers `/` is 404).
//!
//! - 200 `{"tokenId", "successUrl", "realm"}`: the token is a session of the user (see
//!   [`crate::auth::users::Users::login`]: 8 hours, in memory), accepted by the write API (cookie or
//!   Bearer) and by read requests for sensitive values.
//! - 401 `{"code": 401, "reason": "Unauthorized", "message": "Authentication Failed"}` (OpenAM's
//!   shape) for a missing or unknown name, a user without password or a wrong password alike.
//! - 429 with `Retry-After` (seconds) after 5 failed logins for a name within 15 minutes.
//! - 400 `{"code": 400, "reason": "Bad Request", ...}` at once for a name over 256 bytes
//!   (`MAX_NAME_BYTES`): no user has one, and it is neither verified nor counted.
//!
//! Verifications are slow on purpose (argon2id) and run off the async workers, at most two at
//! a time, so a flood of logins cannot take every core from readers.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Serialize;
use utoipa::ToSchema;

use super::{json_response, presented_token, AppState};
use crate::auth::users::{LoginError, MAX_NAME_BYTES};

/// The OpenAM REST login path (relative to the server root, as the clients build it).
pub const AUTHENTICATE: &str = "/openam/json/authenticate";
/// OpenAM's logout page (skrivnvdb `loggut`).
pub const LOGOUT: &str = "/openam/UI/Logout";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(AUTHENTICATE, post(authenticate))
        .route(LOGOUT, get(logout))
}

/// A header as text: UTF-8, else Latin-1 (Python `requests` encodes `str` header values as
/// Latin-1, so a password with `ø` arrives as one byte 0xF8).
fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    let bytes = headers.get(name)?.as_bytes();
    Some(match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    })
}

/// OpenAM's answer to a failed login (`{"code", "reason", "message"}`).
#[derive(Serialize, ToSchema)]
pub struct LoginFailure {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
}

/// OpenAM's answer to a login: the token `skrivnvdb.login()` reads as `tokenId`.
#[derive(Serialize, ToSchema)]
pub struct LoginSuccess {
    #[serde(rename = "tokenId")]
    pub token_id: String,
    #[serde(rename = "successUrl")]
    pub success_url: &'static str,
    pub realm: &'static str,
}

fn failed() -> Response {
    json_response(
        StatusCode::UNAUTHORIZED,
        &LoginFailure {
            code: 401,
            reason: "Unauthorized",
            message: "Authentication Failed".into(),
        },
    )
}

/// A name longer than any user's: 400 in OpenAM's shape.
fn name_too_long(bytes: usize) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        &LoginFailure {
            code: 400,
            reason: "Bad Request",
            message: format!(
                "X-OpenAM-Username er for langt: {bytes} byte (høyst {MAX_NAME_BYTES})"
            ),
        },
    )
}

/// POST /openam/json/authenticate
pub async fn authenticate(
    axum::extract::State(state): axum::extract::State<AppState>,
    headers: HeaderMap,
) -> Response {
    let name = header_text(&headers, "x-openam-username").unwrap_or_default();
    let password = header_text(&headers, "x-openam-password").unwrap_or_default();
    if name.trim().len() > MAX_NAME_BYTES {
        // before waiting for a verification slot: such a name is never verified
        return name_too_long(name.trim().len());
    }
    let Some(permit) = state.users.verification_slot().await else {
        return failed();
    };
    let users = state.users.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        users.login(name.trim(), &password)
    })
    .await;
    match outcome {
        Ok(Ok(token)) => json_response(
            StatusCode::OK,
            &LoginSuccess {
                token_id: token,
                success_url: "/openam/console",
                realm: "/",
            },
        ),
        Ok(Err(LoginError::Locked(left))) => {
            let seconds = left.as_secs().max(1);
            let mut r = json_response(
                StatusCode::TOO_MANY_REQUESTS,
                &LoginFailure {
                    code: 429,
                    reason: "Too Many Requests",
                    message: format!(
                        "For mange mislykkede innlogginger; prøv igjen om {seconds} sekunder"
                    ),
                },
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            r
        }
        Ok(Err(LoginError::NameTooLong(bytes))) => name_too_long(bytes),
        Ok(Err(LoginError::Invalid)) => failed(),
        Err(e) => {
            tracing::error!(error = %e, "login task failed");
            failed()
        }
    }
}

/// GET / — a login when it carries `X-OpenAM-Username` (apiforbindelse.py), else 404.
pub async fn root(state: axum::extract::State<AppState>, headers: HeaderMap) -> Response {
    if headers.contains_key("x-openam-username") {
        authenticate(state, headers).await
    } else {
        crate::api::error::ApiError::not_found("Ressursen finnes ikke").into_response()
    }
}

/// GET /openam/UI/Logout — ends the session the request presents (cookie or Bearer).
pub async fn logout(
    axum::extract::State(state): axum::extract::State<AppState>,
    headers: HeaderMap,
) -> Response {
    if let Some(token) = presented_token(&headers) {
        state.users.logout(&token);
    }
    StatusCode::NO_CONTENT.into_response()
}
