//! Sizes in bytes as users write them: `10MB`, `512KiB`, `2G`, `1000000`.

use serde::{Deserialize, Serialize};

/// A size from a configuration file: a number of bytes or a string with a unit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum SizeValue {
    Bytes(u64),
    Text(String),
}

impl From<usize> for SizeValue {
    fn from(bytes: usize) -> Self {
        Self::Bytes(u64::try_from(bytes).unwrap_or(u64::MAX))
    }
}

impl SizeValue {
    /// The size in bytes, or why it is not one.
    pub fn bytes(&self) -> Result<usize, String> {
        match self {
            Self::Bytes(0) => Err("0 is not a size of at least one byte".to_owned()),
            Self::Bytes(bytes) => {
                usize::try_from(*bytes).map_err(|_| format!("{bytes} is too large"))
            }
            Self::Text(text) => parse_size(text),
        }
    }
}

/// Parses `N`, `N<unit>` with units B, KB/MB/GB (powers of 1000, also K/M/G) and
/// KiB/MiB/GiB (powers of 1024), case-insensitive; a fraction is allowed (`1.5MB`).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let multiplier: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "`{text}` has an unknown unit `{other}` (use B, KB, MB, GB, KiB, MiB or GiB)"
            ));
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size (e.g. 10MB, 512KiB, 1000000)"))?;
    let bytes = (value * multiplier).round();
    if !(1.0..2f64.powi(53)).contains(&bytes) {
        return Err(format!("`{text}` is not a size of at least one byte"));
    }
    Ok(bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_with_and_without_units() {
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("10MB"), Ok(10_000_000));
        assert_eq!(parse_size(" 1.5 mb "), Ok(1_500_000));
        assert_eq!(parse_size("2KiB"), Ok(2048));
        assert_eq!(parse_size("1G"), Ok(1_000_000_000));
        for bad in ["", "MB", "0", "-1MB", "10 parsecs", "1e9"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(SizeValue::Bytes(5).bytes(), Ok(5));
        assert!(SizeValue::Bytes(0).bytes().is_err());
        assert_eq!(SizeValue::Text("1kb".into()).bytes(), Ok(1000));
    }
}
