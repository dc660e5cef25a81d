//! Where a store is: a directory on this machine, or a schema in a PostgreSQL database.
//!
//! A location is written as a path (`.rlm`, `/srv/rlm/docs`) or a PostgreSQL URL
//! (`postgres://USER@HOST[:PORT]/DATABASE?schema=NAME`). A URL's password is never part of how
//! a location is shown: it comes from the URL itself, the environment or `~/.pgpass` (the
//! front end reads those and calls [`PostgresLocation::set_password`]), is registered with
//! [`rlm_types::secrets`] so that every error and log line masks it, and is printed nowhere.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The schema a PostgreSQL store uses when its URL names none.
pub const DEFAULT_SCHEMA: &str = "rlm";

/// The PostgreSQL port when a URL names none.
pub const DEFAULT_PORT: u16 = 5432;

/// Where a store is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreLocation {
    /// A store directory (SQLite + tantivy): the default.
    Directory(PathBuf),
    /// A schema in a PostgreSQL database, shared by everyone who can reach it.
    Postgres(PostgresLocation),
}

impl StoreLocation {
    /// A path, or a PostgreSQL URL when `text` starts with `postgres://` or `postgresql://`.
    pub fn parse(text: &str) -> Result<Self> {
        if is_postgres_url(text) {
            return PostgresLocation::parse(text).map(Self::Postgres);
        }
        Ok(Self::Directory(PathBuf::from(text)))
    }

    /// [`StoreLocation::parse`] of a path a command line or the environment gave: a path
    /// that is not UTF-8 is a directory.
    pub fn from_path(path: &Path) -> Result<Self> {
        match path.to_str() {
            Some(text) => Self::parse(text),
            None => Ok(Self::Directory(path.to_owned())),
        }
    }

    /// The store directory, for a local store.
    pub fn directory(&self) -> Option<&Path> {
        match self {
            Self::Directory(dir) => Some(dir),
            Self::Postgres(_) => None,
        }
    }
}

impl fmt::Display for StoreLocation {
    /// The directory, or the URL without its password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Directory(dir) => write!(f, "{}", dir.display()),
            Self::Postgres(location) => location.fmt(f),
        }
    }
}

impl From<PathBuf> for StoreLocation {
    fn from(dir: PathBuf) -> Self {
        Self::Directory(dir)
    }
}

impl From<&Path> for StoreLocation {
    fn from(dir: &Path) -> Self {
        Self::Directory(dir.to_owned())
    }
}

fn is_postgres_url(text: &str) -> bool {
    ["postgres://", "postgresql://"].iter().any(|scheme| {
        text.len() >= scheme.len() && text[..scheme.len()].eq_ignore_ascii_case(scheme)
    })
}

/// How a connection is encrypted (`?sslmode=`), as libpq reads the same values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// Plain TCP (or a Unix socket).
    Disable,
    /// TLS when the server offers it, without checking its certificate (libpq's default).
    #[default]
    Prefer,
    /// TLS, without checking the server's certificate.
    Require,
    /// TLS with a certificate signed by a trusted authority (the web's roots, or
    /// `sslrootcert=FILE`), for any host name.
    VerifyCa,
    /// TLS with a trusted certificate for the host connected to.
    VerifyFull,
}

impl TlsMode {
    fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "disable" => Self::Disable,
            "prefer" | "allow" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

/// A PostgreSQL store: server, database, user, schema; the password kept apart.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresLocation {
    /// Host names, IP addresses or Unix socket directories (a value starting with `/`), tried
    /// in order.
    pub hosts: Vec<String>,
    /// The port of each host (one for all, or one each).
    pub ports: Vec<u16>,
    /// The role to connect as.
    pub user: String,
    /// The database.
    pub database: String,
    /// The schema holding this store's tables.
    pub schema: String,
    /// How the connection is encrypted.
    pub tls: TlsMode,
    /// A file of PEM certificates to trust (`sslrootcert=`), besides the web's roots.
    pub root_certificates: Option<PathBuf>,
    /// Seconds to wait for a connection (`connect_timeout=`).
    pub connect_timeout: Option<u64>,
    /// `application_name=`, shown in `pg_stat_activity`.
    pub application_name: Option<String>,
    password: Option<String>,
}

impl fmt::Debug for PostgresLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresLocation")
            .field("url", &self.to_string())
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl PostgresLocation {
    /// Parses `postgres://[USER[:PASSWORD]@][HOST[:PORT][,HOST[:PORT]…]][/DATABASE][?PARAMS]`.
    /// Parameters: `schema` (default [`DEFAULT_SCHEMA`]), `sslmode`, `sslrootcert`, `host`,
    /// `port`, `user`, `dbname`, `connect_timeout`, `application_name`; any other is refused
    /// by name. The user is required; the database defaults to the user's name, the host to
    /// `localhost`.
    pub fn parse(url: &str) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidLocation {
            location: mask_url(url),
            reason,
        };
        let rest = url
            .split_once("://")
            .map(|(_, rest)| rest)
            .ok_or_else(|| invalid("not a postgres:// URL".into()))?;
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (rest, None),
        };
        let (authority, path) = match rest.split_once('/') {
            Some((authority, path)) => (authority, path),
            None => (rest, ""),
        };
        let (userinfo, hostlist) = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => (Some(userinfo), hosts),
            None => (None, authority),
        };
        let mut location = Self {
            hosts: Vec::new(),
            ports: Vec::new(),
            user: String::new(),
            database: decode(path).map_err(invalid)?,
            schema: DEFAULT_SCHEMA.to_owned(),
            tls: TlsMode::default(),
            root_certificates: None,
            connect_timeout: None,
            application_name: None,
            password: None,
        };
        if let Some(userinfo) = userinfo {
            let (user, password) = match userinfo.split_once(':') {
                Some((user, password)) => (user, Some(password)),
                None => (userinfo, None),
            };
            location.user = decode(user).map_err(invalid)?;
            if let Some(password) = password {
                location.set_password(decode(password).map_err(invalid)?);
            }
        }
        for host in hostlist.split(',').filter(|host| !host.is_empty()) {
            let (name, port) = split_port(host).map_err(invalid)?;
            location.hosts.push(decode(name).map_err(invalid)?);
            if let Some(port) = port {
                location.ports.push(port);
            }
        }
        for pair in query
            .unwrap_or("")
            .split('&')
            .filter(|pair| !pair.is_empty())
        {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = decode(value).map_err(invalid)?;
            location.set_parameter(key, value).map_err(invalid)?;
        }
        location.finish().map_err(invalid)?;
        Ok(location)
    }

    fn set_parameter(&mut self, key: &str, value: String) -> std::result::Result<(), String> {
        match key {
            "schema" => self.schema = value,
            "sslmode" => {
                self.tls = TlsMode::parse(&value).ok_or_else(|| {
                    format!(
                        "sslmode={value} is not one of disable, prefer, require, verify-ca, \
                         verify-full"
                    )
                })?;
            }
            "sslrootcert" => self.root_certificates = Some(PathBuf::from(value)),
            "host" => self.hosts = value.split(',').map(str::to_owned).collect(),
            "port" => {
                self.ports = value
                    .split(',')
                    .map(|port| {
                        port.parse()
                            .map_err(|_| format!("port={port} is not a port"))
                    })
                    .collect::<std::result::Result<_, _>>()?;
            }
            "user" => self.user = value,
            "dbname" => self.database = value,
            "password" => {
                return Err(
                    "a password goes in PGPASSWORD or ~/.pgpass, not in a parameter".into(),
                );
            }
            "connect_timeout" => {
                self.connect_timeout =
                    Some(value.parse().map_err(|_| {
                        format!("connect_timeout={value} is not a number of seconds")
                    })?);
            }
            "application_name" => self.application_name = Some(value),
            other => {
                return Err(format!(
                    "unknown parameter {other:?} (rlm reads schema, sslmode, sslrootcert, host, \
                     port, user, dbname, connect_timeout, application_name)"
                ));
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> std::result::Result<(), String> {
        if self.user.is_empty() {
            return Err("the URL names no user: write postgres://USER@HOST/DATABASE".into());
        }
        if self.hosts.is_empty() {
            self.hosts.push("localhost".into());
        }
        if self.ports.is_empty() {
            self.ports.push(DEFAULT_PORT);
        }
        if self.ports.len() != 1 && self.ports.len() != self.hosts.len() {
            return Err(format!(
                "{} ports for {} hosts: give one port, or one for each host",
                self.ports.len(),
                self.hosts.len()
            ));
        }
        if self.database.is_empty() {
            self.database = self.user.clone();
        }
        let valid = |name: &str| {
            !name.is_empty()
                && name.len() <= 63
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !name.as_bytes()[0].is_ascii_digit()
        };
        if !valid(&self.schema) || self.schema.starts_with("pg_") {
            return Err(format!(
                "schema={} is not a plain name (letters, digits and _, not starting with a digit \
                 or pg_, at most 63 characters)",
                self.schema
            ));
        }
        Ok(())
    }

    /// Whether a password was given (in the URL or by [`PostgresLocation::set_password`]).
    pub fn has_password(&self) -> bool {
        self.password.is_some()
    }

    /// Sets the password to connect with (from `PGPASSWORD` or `~/.pgpass`), and registers it
    /// with [`rlm_types::secrets`] so that no error or log line shows it.
    pub fn set_password(&mut self, password: String) {
        rlm_types::secrets::register(&password);
        self.password = Some(password);
    }

    /// The password, for the connection only.
    #[cfg_attr(
        not(any(feature = "postgres", test)),
        expect(dead_code, reason = "read by the backend")
    )]
    pub(crate) fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The port of host number `index`.
    pub fn port(&self, index: usize) -> u16 {
        self.ports
            .get(index)
            .or_else(|| self.ports.first())
            .copied()
            .unwrap_or(DEFAULT_PORT)
    }

    /// The password `~/.pgpass` holds for this location (`contents` is the file's text), as
    /// libpq finds it: the first line whose host, port, database and user match, `*` matching
    /// anything; a Unix socket directory matches the host `localhost`.
    pub fn password_from_pgpass(&self, contents: &str) -> Option<String> {
        let host = self.hosts.first().map_or("localhost", |host| {
            if host.starts_with('/') {
                "localhost"
            } else {
                host
            }
        });
        let port = self.port(0).to_string();
        let wanted = [
            host,
            port.as_str(),
            self.database.as_str(),
            self.user.as_str(),
        ];
        contents
            .lines()
            .filter(|line| !line.trim_start().starts_with('#') && !line.trim().is_empty())
            .find_map(|line| {
                let fields = pgpass_fields(line);
                if fields.len() != 5 {
                    return None;
                }
                let matches = fields[..4]
                    .iter()
                    .zip(wanted)
                    .all(|(field, wanted)| field == "*" || field == wanted);
                matches.then(|| fields[4].clone())
            })
    }
}

impl fmt::Display for PostgresLocation {
    /// `postgres://USER@HOST:PORT/DATABASE?schema=NAME`, with the TLS mode when it is not the
    /// default; never the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "postgres://{}@", encode(&self.user))?;
        let socket = self.hosts.iter().any(|host| host.starts_with('/'));
        if !socket {
            for (index, host) in self.hosts.iter().enumerate() {
                if index > 0 {
                    f.write_str(",")?;
                }
                if host.contains(':') {
                    write!(f, "[{host}]:{}", self.port(index))?;
                } else {
                    write!(f, "{host}:{}", self.port(index))?;
                }
            }
        }
        write!(f, "/{}?schema={}", encode(&self.database), self.schema)?;
        if socket {
            write!(
                f,
                "&host={}&port={}",
                encode(&self.hosts.join(",")),
                self.port(0)
            )?;
        }
        if self.tls != TlsMode::default() {
            write!(f, "&sslmode={}", self.tls.name())?;
        }
        Ok(())
    }
}

/// `host[:port]` or `[v6]:port`.
fn split_port(host: &str) -> std::result::Result<(&str, Option<u16>), String> {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (name, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("{host:?} has no closing ]"))?;
        (name, after.strip_prefix(':'))
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        }
    };
    let port = port
        .map(|port| port.parse().map_err(|_| format!("{port:?} is not a port")))
        .transpose()?;
    Ok((name, port))
}

/// Percent-decoding of a URL part.
fn decode(part: &str) -> std::result::Result<String, String> {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = part
                .get(index + 1..index + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| "a % in the URL is not followed by two hex digits".to_owned())?;
            out.push(hex);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the URL decodes to text that is not UTF-8".to_owned())
}

fn encode(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for byte in part.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A URL as it may appear in a message: the password between `:` and `@` replaced.
pub(crate) fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            format!("{scheme}://{user}@{hosts}{tail}")
        }
        None => url.to_owned(),
    }
}

/// The fields of a `.pgpass` line: `:` separates them, `\` escapes `:` and `\`.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next()
                    && let Some(field) = fields.last_mut()
                {
                    field.push(next);
                }
            }
            ':' => fields.push(String::new()),
            c => {
                if let Some(field) = fields.last_mut() {
                    field.push(c);
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_url_is_parsed_and_shown_without_its_password() {
        let location =
            StoreLocation::parse("postgres://ann:s%3Acret-pw-1@db.example:6543/team?schema=docs")
                .unwrap();
        let StoreLocation::Postgres(postgres) = &location else {
            panic!("{location:?}");
        };
        assert_eq!(postgres.user, "ann");
        assert_eq!(postgres.hosts, ["db.example"]);
        assert_eq!(postgres.port(0), 6543);
        assert_eq!(postgres.database, "team");
        assert_eq!(postgres.schema, "docs");
        assert_eq!(postgres.password(), Some("s:cret-pw-1"));
        let shown = location.to_string();
        assert_eq!(shown, "postgres://ann@db.example:6543/team?schema=docs");
        assert!(!format!("{location:?}").contains("cret-pw"));
        // What is shown parses back to the same place.
        let again = StoreLocation::parse(&shown).unwrap();
        let StoreLocation::Postgres(again) = again else {
            panic!()
        };
        assert_eq!(
            (again.user, again.database, again.schema),
            ("ann".into(), "team".into(), "docs".into())
        );
    }

    #[test]
    fn defaults_sockets_and_bad_urls() {
        let StoreLocation::Postgres(location) =
            StoreLocation::parse("postgresql://bob@/?host=/run/pg&port=5499").unwrap()
        else {
            panic!()
        };
        assert_eq!(location.hosts, ["/run/pg"]);
        assert_eq!(location.database, "bob");
        assert_eq!(location.schema, DEFAULT_SCHEMA);
        assert_eq!(
            location.to_string(),
            "postgres://bob@/bob?schema=rlm&host=%2Frun%2Fpg&port=5499"
        );
        assert_eq!(
            StoreLocation::parse(".rlm").unwrap(),
            StoreLocation::Directory(".rlm".into())
        );
        for (url, says) in [
            ("postgres://db.example/x", "names no user"),
            ("postgres://u@h/x?schema=a-b", "not a plain name"),
            ("postgres://u@h/x?schema=pg_catalog", "not a plain name"),
            ("postgres://u@h/x?sslmode=maybe", "sslmode=maybe"),
            (
                "postgres://u@h/x?colour=red",
                "unknown parameter \"colour\"",
            ),
            ("postgres://u@h:99999/x", "not a port"),
            ("postgres://u:hunter2secret@h/x?password=z", "PGPASSWORD"),
        ] {
            let error = StoreLocation::parse(url).unwrap_err().to_string();
            assert!(error.contains(says), "{url}: {error}");
            assert!(!error.contains("hunter2secret"), "{error}");
        }
    }

    #[test]
    fn pgpass_lines_match_as_libpq_matches_them() {
        let StoreLocation::Postgres(location) =
            StoreLocation::parse("postgres://ann@db.example/team").unwrap()
        else {
            panic!()
        };
        let file = "# comment\n\
                    other.example:5432:team:ann:wrong\n\
                    db.example:5432:*:ann:p\\:w\\\\1\n\
                    *:*:*:*:fallback\n";
        assert_eq!(
            location.password_from_pgpass(file).as_deref(),
            Some("p:w\\1")
        );
        assert_eq!(
            location
                .password_from_pgpass("*:*:*:*:fallback\n")
                .as_deref(),
            Some("fallback")
        );
        assert_eq!(location.password_from_pgpass("x:1:y:z:w\n"), None);
    }
}
