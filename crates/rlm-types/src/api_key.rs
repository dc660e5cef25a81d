//! An API key: printed as `<redacted>`, never serialized, registered for masking when made.

use std::fmt;

use serde::Deserialize;

/// An API key. `Debug` and `Display` print `<redacted>` so a key cannot leak through logs; it
/// can be read from configuration but deliberately does not implement `Serialize`. Making one
/// registers its value with [`crate::secrets`], so every text this process writes has it (and
/// any part of it of 8 characters or more) masked.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key and registers it with [`crate::secrets::register`].
    pub fn new(key: impl Into<String>) -> Self {
        let key = key.into();
        crate::secrets::register(&key);
        Self(key)
    }

    /// The key itself, for the one place that puts it in a header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl<'de> Deserialize<'de> for ApiKey {
    /// A key read from a file is registered as one made with [`ApiKey::new`].
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::new)
    }
}
