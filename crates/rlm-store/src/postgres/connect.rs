//! Connecting to the server: the client configuration from a [`PostgresLocation`], TLS by
//! rustls (ring), and errors that say which server refused and why, never with a password.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use postgres::config::SslMode;
use postgres::error::SqlState;
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use postgres::{Client, Config};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::{ServerError, server_error};
use crate::error::{Error, Result};
use crate::location::{PostgresLocation, TlsMode};

/// How long a connection attempt waits when the URL sets no `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// A connection to the server of `location`, not yet in its schema.
pub(super) fn connect(location: &PostgresLocation) -> Result<Client> {
    let mut config = Config::new();
    config
        .user(&location.user)
        .dbname(&location.database)
        .application_name(location.application_name.as_deref().unwrap_or("rlm"))
        .connect_timeout(
            location
                .connect_timeout
                .map_or(CONNECT_TIMEOUT, Duration::from_secs),
        );
    for (index, host) in location.hosts.iter().enumerate() {
        if host.starts_with('/') {
            config.host_path(host);
        } else {
            config.host(host);
        }
        config.port(location.port(index));
    }
    if let Some(password) = location.password() {
        config.password(password);
    }
    let result = match location.tls {
        TlsMode::Disable => config.ssl_mode(SslMode::Disable).connect(postgres::NoTls),
        mode => {
            let required = mode != TlsMode::Prefer;
            config.ssl_mode(if required {
                SslMode::Require
            } else {
                SslMode::Prefer
            });
            config.connect(RustlsConnect::new(location)?)
        }
    };
    result.map_err(|error| refused(location, error))
}

/// What the server (or the network) said, as an error naming the location and the likely fix.
fn refused(location: &PostgresLocation, error: postgres::Error) -> Error {
    let code = error.code().cloned();
    let context = match code {
        Some(code) if code == SqlState::INVALID_PASSWORD => format!(
            "the server at {location} refused the password of user {:?} (set PGPASSWORD, or a \
             line for it in ~/.pgpass)",
            location.user
        ),
        Some(code) if code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => format!(
            "the server at {location} does not let user {:?} in (check the user and the \
             server's pg_hba.conf)",
            location.user
        ),
        Some(code) if code == SqlState::INVALID_CATALOG_NAME => format!(
            "the server has no database {:?} ({location}); create it with `createdb`",
            location.database
        ),
        Some(_) => format!("the server at {location} refused the connection"),
        None if location.password().is_none() && error.to_string().contains("password") => {
            format!(
                "the server at {location} asks for a password and none was given (set \
                 PGPASSWORD, or a line for it in ~/.pgpass)"
            )
        }
        None => format!("cannot reach the PostgreSQL server at {location}"),
    };
    Error::Postgres {
        context,
        source: Box::new(ServerError::from(error)),
    }
}

/// Makes rustls connections for the client; the certificate check depends on the TLS mode.
#[derive(Clone)]
struct RustlsConnect {
    config: Arc<ClientConfig>,
}

impl RustlsConnect {
    fn new(location: &PostgresLocation) -> Result<Self> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|error| tls_error(location, error))?;
        let config = match location.tls {
            TlsMode::VerifyCa | TlsMode::VerifyFull => {
                let mut roots = RootCertStore::empty();
                roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
                if let Some(file) = &location.root_certificates {
                    add_pem_roots(&mut roots, file)?;
                }
                let config = builder.with_root_certificates(roots.clone());
                let mut config = config.with_no_client_auth();
                if location.tls == TlsMode::VerifyCa {
                    // A trusted chain for whatever name the certificate carries.
                    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
                        Arc::new(roots),
                        provider,
                    )
                    .build()
                    .map_err(|error| tls_error(location, error))?;
                    config
                        .dangerous()
                        .set_certificate_verifier(Arc::new(AnyName(verifier)));
                }
                config
            }
            // libpq's `prefer` and `require` encrypt without checking the certificate.
            _ => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
                .with_no_client_auth(),
        };
        Ok(Self {
            config: Arc::new(config),
        })
    }
}

fn tls_error(location: &PostgresLocation, error: impl std::error::Error) -> Error {
    Error::Postgres {
        context: format!("cannot set up TLS for {location}"),
        source: Box::new(ServerError::message(error.to_string())),
    }
}

fn add_pem_roots(roots: &mut RootCertStore, file: &std::path::Path) -> Result<()> {
    use rustls::pki_types::pem::PemObject as _;
    let certificates = CertificateDer::pem_file_iter(file)
        .and_then(|certificates| certificates.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|error| Error::Io {
            action: "cannot read the certificates (sslrootcert) in",
            path: file.to_owned(),
            source: io::Error::other(error.to_string()),
        })?;
    for certificate in certificates {
        roots.add(certificate).map_err(|error| Error::Io {
            action: "cannot trust a certificate (sslrootcert) in",
            path: file.to_owned(),
            source: io::Error::other(error.to_string()),
        })?;
    }
    Ok(())
}

impl<S> MakeTlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnector;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> io::Result<RustlsConnector> {
        let name = ServerName::try_from(domain.to_owned())
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidInput, error))?;
        Ok(RustlsConnector {
            connector: tokio_rustls::TlsConnector::from(self.config.clone()),
            name,
        })
    }
}

struct RustlsConnector {
    connector: tokio_rustls::TlsConnector,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for RustlsConnector
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let stream = self.connector.connect(self.name, stream).await?;
            Ok(RustlsStream(Box::new(stream)))
        })
    }
}

/// The TLS stream; no channel binding (SCRAM authenticates without it).
struct RustlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(context, buffer)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(context, buffer)
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(context)
    }
}

/// `sslmode=verify-ca`: a chain to a trusted root, whatever name the certificate is for.
#[derive(Debug)]
struct AnyName(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
            | Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0
            .verify_tls12_signature(message, certificate, signature)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0
            .verify_tls13_signature(message, certificate, signature)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `sslmode=prefer`/`require`: encrypted, the certificate not checked (as libpq does); the
/// handshake's signatures are still verified, so the key is the certificate's.
#[derive(Debug)]
struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A server error of an open connection, with `context` (which names the location).
pub(super) fn failed(context: impl Into<String>) -> impl Fn(postgres::Error) -> Error {
    let context = context.into();
    move |error| server_error(context.clone(), error)
}
