//! HTTP handler for POST /auth/refresh.

use crate::token::{refresh, AuthError, RefreshToken, TokenStore};

pub struct Response {
    pub status: u16,
    pub body: String,
}

pub fn post_refresh(store: &mut TokenStore, presented: &RefreshToken) -> Response {
    match refresh(store, presented) {
        Ok((access, _next)) => Response { status: 200, body: access },
        // Expired and revoked tokens send the client back to the login page.
        Err(AuthError::Expired) | Err(AuthError::Revoked) => Response {
            status: 401,
            body: "login required".into(),
        },
        // A reused token is a theft signal: log it loudly, answer like a revoked token.
        Err(AuthError::Reused { family }) => {
            eprintln!("SECURITY refresh token reuse, family {family} revoked");
            Response { status: 401, body: "login required".into() }
        }
        // The token store being down is our fault, not the client's: retryable.
        Err(AuthError::Store(reason)) => {
            eprintln!("ERROR token store unavailable: {reason}");
            Response { status: 503, body: "try again".into() }
        }
    }
}
