//! The credentials a request presents: `Authorization: Bearer <token>` or the SSO cookie real
//! v2 clients send. Both the write API (which demands them) and the read API (which shows
//! sensitive values to users with the right) read them here.

use axum::http::{header, HeaderMap};

use super::users::{User, Users};

/// Cookie names of SVV's OpenAM in production, test and development.
pub const SSO_COOKIES: [&str; 3] = [
    "iPlanetDirectoryProOAM",
    "iPlanetDirectoryProOAMTP",
    "iPlanetDirectoryProOAMutv",
];

/// The token a request presents (Bearer header or SSO cookie).
pub fn presented_token(headers: &HeaderMap) -> Option<String> {
    // most read requests present nothing: a walk over their few headers says so without the
    // two hashed look-ups
    if !headers
        .keys()
        .any(|name| name == header::AUTHORIZATION || name == header::COOKIE)
    {
        return None;
    }
    if let Some(auth) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        // auth schemes are case-insensitive (RFC 7235 section 2.1): Bearer, bearer, BEARER
        if let Some((scheme, t)) = auth.trim_start().split_once([' ', '\t']) {
            if scheme.eq_ignore_ascii_case("bearer") && !t.trim().is_empty() {
                return Some(t.trim().to_string());
            }
        }
    }
    for cookie in headers.get_all(header::COOKIE) {
        let Ok(text) = cookie.to_str() else { continue };
        for pair in text.split(';') {
            if let Some((k, v)) = pair.trim().split_once('=') {
                if SSO_COOKIES.contains(&k.trim()) {
                    return Some(v.trim().trim_matches('"').to_string());
                }
            }
        }
    }
    None
}

/// The user behind a request, if it presents valid credentials (read requests use this to
/// show sensitive values).
pub fn optional_user(users: &Users, headers: &HeaderMap) -> Option<User> {
    presented_token(headers).and_then(|t| users.authenticate(&t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn bearer_in_any_case_or_an_sso_cookie() {
        for auth in ["Bearer abc", "bearer abc", "BEARER\tabc ", "  Bearer   abc"] {
            let h = headers(&[(header::AUTHORIZATION, auth)]);
            assert_eq!(presented_token(&h).as_deref(), Some("abc"), "{auth}");
        }
        let h = headers(&[(header::AUTHORIZATION, "Basic abc")]);
        assert_eq!(presented_token(&h), None);
        let h = headers(&[(header::COOKIE, "a=1; iPlanetDirectoryProOAMTP=\"tok\"")]);
        assert_eq!(presented_token(&h).as_deref(), Some("tok"));
        assert_eq!(presented_token(&HeaderMap::new()), None);
    }
}
