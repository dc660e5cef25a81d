//! Access tokens for the gateway: issue, check and refresh.

use std::time::{Duration, SystemTime};

pub const ACCESS_TTL: Duration = Duration::from_secs(15 * 60);
pub const REFRESH_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// Refresh tokens within this margin of expiry are refused, so a slow client cannot race one.
pub const REFRESH_GRACE: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub enum AuthError {
    Expired,
    Revoked,
    Reused { family: u64 },
    Store(String),
}

pub struct RefreshToken {
    pub family: u64,
    pub generation: u32,
    pub expires_at: SystemTime,
}

/// Exchanges a refresh token for a new pair. The old token's generation must be the latest of
/// its family: presenting an older one means it was copied, and the whole family is revoked.
pub fn refresh(store: &mut TokenStore, presented: &RefreshToken) -> Result<(String, RefreshToken), AuthError> {
    let now = SystemTime::now();
    if presented.expires_at <= now + REFRESH_GRACE {
        return Err(AuthError::Expired);
    }
    let latest = store.latest_generation(presented.family).map_err(AuthError::Store)?;
    if presented.generation < latest {
        store.revoke_family(presented.family).map_err(AuthError::Store)?;
        return Err(AuthError::Reused { family: presented.family });
    }
    if store.is_revoked(presented.family) {
        return Err(AuthError::Revoked);
    }
    let next = RefreshToken {
        family: presented.family,
        generation: presented.generation + 1,
        expires_at: now + REFRESH_TTL,
    };
    store.save(&next).map_err(AuthError::Store)?;
    Ok((issue_access(presented.family, now + ACCESS_TTL), next))
}

pub struct TokenStore;

impl TokenStore {
    pub fn latest_generation(&self, _family: u64) -> Result<u32, String> { Ok(0) }
    pub fn revoke_family(&mut self, _family: u64) -> Result<(), String> { Ok(()) }
    pub fn is_revoked(&self, _family: u64) -> bool { false }
    pub fn save(&mut self, _token: &RefreshToken) -> Result<(), String> { Ok(()) }
}

fn issue_access(family: u64, _expires: SystemTime) -> String {
    format!("at-{family}")
}
