//! The PostgreSQL backend: a store in one schema of a database that many machines share.
//!
//! The layout follows the local store's, so both answer alike: a buffer's text stored once
//! (here as line-aligned segments of about 8 KiB, which pg_trgm indexes for `grep`), chunks as
//! byte ranges into it, and BM25 over the terms rlm's own tokenizer emits ([`crate::tokenizer`]):
//! rlm tokenizes, the database keeps the postings (per term, buffer and block of chunks) and the
//! statistics, and scores in SQL with tantivy's formula in single precision, so the same files
//! rank the same way in both backends. Vectors are kept as the same little-endian `f32` bytes;
//! with pgvector they are also a `vector` column with an HNSW index.
//!
//! # Many writers and readers
//! Every write is one transaction: a killed loader leaves nothing (the server rolls back), a
//! reader never sees half a load. Loads take the store's advisory lock shared and each
//! buffer's name lock exclusively before looking the name up, so two machines loading the same
//! path converge on one copy; reindex and migrations take the store's lock exclusively. The
//! schema version is recorded in `store_meta`; a newer one is refused.

mod connect;
mod grep;
mod load;
mod read;
mod schema;
mod search;
mod vectors;

use std::cell::{RefCell, RefMut};
use std::path::{Path, PathBuf};

use postgres::Client;
use postgres::error::SqlState;

pub(crate) use schema::diagnose;

use crate::error::{Error, Result};
use crate::location::PostgresLocation;
use crate::store::{IndexHealth, IndexProgress};

/// The largest buffer a PostgreSQL store holds: its text is stored in segments, but a load
/// holds a whole (not streamed) buffer in memory as the local store does, and `bytea`/`text`
/// values read back whole are limited to 1 GB by the server.
const BUFFER_CEILING: u64 = 1 << 30;

/// What the server said, with passwords masked.
#[derive(Debug)]
pub struct ServerError {
    message: String,
    code: Option<String>,
    lost: bool,
}

impl ServerError {
    fn message(message: String) -> Self {
        Self {
            message: rlm_types::secrets::mask(&message).into_owned(),
            code: None,
            lost: false,
        }
    }

    /// Whether the connection to the server was lost (the server rolled back what was not
    /// committed).
    pub fn is_connection_lost(&self) -> bool {
        self.lost
    }

    /// The SQLSTATE code, when the server sent one.
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }
}

impl From<postgres::Error> for ServerError {
    fn from(error: postgres::Error) -> Self {
        let lost = error.is_closed()
            || std::error::Error::source(&error)
                .is_some_and(|source| source.downcast_ref::<std::io::Error>().is_some());
        let (message, code) = match error.as_db_error() {
            Some(db) => {
                let mut message = format!("{}: {}", db.severity(), db.message());
                if let Some(detail) = db.detail() {
                    message.push_str(&format!(" ({detail})"));
                }
                (message, Some(db.code().code().to_owned()))
            }
            None => {
                let mut message = error.to_string();
                let mut cause = std::error::Error::source(&error);
                while let Some(inner) = cause {
                    message.push_str(&format!(": {inner}"));
                    cause = inner.source();
                }
                (message, None)
            }
        };
        Self {
            message: rlm_types::secrets::mask(&message).into_owned(),
            code,
            lost,
        }
    }
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ServerError {}

/// `error` with `context`; a lost connection, a deadlock and a missing privilege say so.
pub(crate) fn server_error(context: String, error: postgres::Error) -> Error {
    let code = error.code().cloned();
    let server = ServerError::from(error);
    let context = if server.lost {
        format!(
            "{context}: the connection to the server was lost; the server rolled back whatever \
             was not committed"
        )
    } else if code == Some(SqlState::T_R_DEADLOCK_DETECTED)
        || code == Some(SqlState::T_R_SERIALIZATION_FAILURE)
    {
        format!(
            "{context}: another writer changed the same buffers at the same time; nothing of \
             this command was written, run it again"
        )
    } else if code == Some(SqlState::INSUFFICIENT_PRIVILEGE) {
        format!("{context}: the database user lacks a privilege this needs")
    } else {
        context
    };
    Error::Postgres {
        context,
        source: Box::new(server),
    }
}

/// Lock classes of `pg_advisory_*lock(class, key)`: one for the whole store (shared by loads,
/// exclusive for reindex and migrations), one for buffer names.
const STORE_LOCK: i32 = 0x726c_6d01;
const NAME_LOCK: i32 = 0x726c_6d02;
const TOTALS_LOCK: i32 = 0x726c_6d03;

/// An open PostgreSQL store.
pub(crate) struct PostgresStore {
    location: PostgresLocation,
    /// The location as text, for [`PostgresStore::dir`].
    shown: PathBuf,
    client: RefCell<Client>,
    /// Whether pgvector is there (vectors get an HNSW index; else semantic search scans).
    pgvector: bool,
    /// Whether the segments have a trigram index (pg_trgm), which `grep` narrows with.
    trigrams: bool,
    max_buffer_bytes: u64,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("location", &self.location)
            .field("pgvector", &self.pgvector)
            .field("trigrams", &self.trigrams)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects and opens the store in the location's schema: created with its tables when
    /// `create` is set and it is missing ([`Error::NoStore`] otherwise), migrated when older.
    pub(crate) fn open(location: &PostgresLocation, create: bool) -> Result<Self> {
        let mut client = connect::connect(location)?;
        let features = schema::prepare(&mut client, location, create)?;
        Ok(Self {
            location: location.clone(),
            shown: PathBuf::from(location.to_string()),
            client: RefCell::new(client),
            pgvector: features.pgvector,
            trigrams: features.trigrams,
            max_buffer_bytes: BUFFER_CEILING,
        })
    }

    /// Whether the location's schema holds a store; creates nothing.
    pub(crate) fn exists(location: &PostgresLocation) -> Result<bool> {
        let mut client = connect::connect(location)?;
        schema::exists(&mut client, location)
    }

    pub(crate) fn location(&self) -> &PostgresLocation {
        &self.location
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.shown
    }

    /// The connection. Never held across a call that takes it again.
    fn client(&self) -> Result<RefMut<'_, Client>> {
        self.client.try_borrow_mut().map_err(|_| Error::Postgres {
            context: format!("the connection to {} is in use", self.location),
            source: Box::new(ServerError::message(
                "a store call was made while another was reading".into(),
            )),
        })
    }

    /// The error of a failed statement while doing `what`.
    fn failed(&self, what: &str) -> impl Fn(postgres::Error) -> Error + use<> {
        connect::failed(format!("cannot {what} in the store at {}", self.location))
    }

    /// Postings are written in the transaction that writes the chunks: always in step.
    pub(crate) fn index_health(&self) -> Result<IndexHealth> {
        Ok(IndexHealth::UpToDate)
    }

    pub(crate) fn max_buffer_bytes(&self) -> u64 {
        self.max_buffer_bytes
    }

    pub(crate) fn buffer_ceiling(&self) -> u64 {
        BUFFER_CEILING
    }

    pub(crate) fn set_max_buffer_bytes(&mut self, bytes: u64) -> Result<()> {
        if bytes == 0 || bytes > BUFFER_CEILING {
            return Err(Error::BufferLimit {
                requested: bytes,
                ceiling: BUFFER_CEILING,
            });
        }
        self.max_buffer_bytes = bytes;
        Ok(())
    }

    /// Writes the postings of every chunk again from the stored text, in one transaction under
    /// the store's exclusive lock (loads wait for it, and it for them).
    pub(crate) fn reindex(
        &self,
        progress: &mut dyn FnMut(IndexProgress),
    ) -> Result<crate::ReindexReport> {
        load::reindex(self, progress)
    }
}
