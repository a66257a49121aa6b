//! HTTPS for `skillcat serve --tls-cert PEM --tls-key PEM`: rustls with its aws-lc-rs provider
//! (the one the HTTPS client already builds), under the same connection limits as plain HTTP.
//!
//! The handshake is not done in the accept loop, where one slow client would hold up every
//! other: a connection is accepted at once and its handshake runs on the connection's own task,
//! the first time hyper reads or writes. The handshake reads through the limited socket, so the
//! header timeout bounds it like a request head (a client that stalls it is cut off and its slot
//! freed).

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::connect_info::Connected;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::{Accept, TlsAcceptor, server::TlsStream};

use super::limits::{Conn, Guarded, LimitedListener};

/// Why the certificate or key of `--tls-cert` / `--tls-key` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The file does not read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// The file holds no PEM block of the kind wanted, or a broken one.
    #[error("{path}: {what}")]
    Pem {
        /// The file.
        path: String,
        /// What is wrong with it.
        what: String,
    },
    /// rustls refused the pair (a key that is not the certificate's, an unsupported key type).
    #[error("{cert} and {key} cannot serve TLS: {source}")]
    Config {
        /// The certificate file.
        cert: String,
        /// The key file.
        key: String,
        /// What rustls said.
        source: tokio_rustls::rustls::Error,
    },
}

/// The server's TLS configuration from a PEM certificate chain (the server's certificate first)
/// and its PEM private key (PKCS#8, PKCS#1 or SEC1). Offers HTTP/1.1 by ALPN.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|source| TlsError::Read {
            path: p.display().to_string(),
            source,
        })
    };
    let pem = |p: &Path, what: String| TlsError::Pem {
        path: p.display().to_string(),
        what,
    };
    let cert_pem = read(cert)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem(cert, format!("not a PEM certificate chain: {e}")))?;
    if chain.is_empty() {
        return Err(pem(
            cert,
            "holds no certificate (a PEM block BEGIN CERTIFICATE)".into(),
        ));
    }
    let key_pem = read(key)?;
    let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        pem(
            key,
            format!("holds no usable private key (PEM PRIVATE KEY, RSA or EC): {e}"),
        )
    })?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
    let config_error = |source| TlsError::Config {
        cert: cert.display().to_string(),
        key: key.display().to_string(),
        source,
    };
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(config_error)?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(config_error)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The limited listener with TLS on every connection it admits.
pub struct TlsListener {
    inner: LimitedListener,
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsListener")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl TlsListener {
    /// Serves TLS as `config` says on the connections `inner` admits.
    pub fn new(inner: LimitedListener, config: Arc<ServerConfig>) -> TlsListener {
        TlsListener {
            inner,
            acceptor: TlsAcceptor::from(config),
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TlsIo, SocketAddr) {
        let (io, peer) = self.inner.accept().await;
        let conn = Conn::of(&io);
        let state = State::Handshake(Box::new(self.acceptor.accept(io)));
        (TlsIo { conn, state }, peer)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        axum::serve::Listener::local_addr(&self.inner)
    }
}

/// One TLS connection: its handshake first, then the encrypted stream.
pub struct TlsIo {
    conn: Conn,
    state: State,
}

enum State {
    Handshake(Box<Accept<Guarded>>),
    Ready(Box<TlsStream<Guarded>>),
    Failed,
}

impl std::fmt::Debug for TlsIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            State::Handshake(_) => "handshake",
            State::Ready(_) => "ready",
            State::Failed => "failed",
        };
        f.debug_struct("TlsIo").field("state", &state).finish()
    }
}

impl TlsIo {
    /// Drives the handshake; `Ready(Ok(stream))` once it is done.
    fn stream(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&mut TlsStream<Guarded>>> {
        if let State::Handshake(accept) = &mut self.state {
            match Pin::new(accept.as_mut()).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(stream)) => self.state = State::Ready(Box::new(stream)),
                Poll::Ready(Err(e)) => {
                    self.state = State::Failed;
                    return Poll::Ready(Err(e));
                }
            }
        }
        match &mut self.state {
            State::Ready(stream) => Poll::Ready(Ok(stream)),
            _ => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the TLS handshake failed",
            ))),
        }
    }
}

impl AsyncRead for TlsIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut().stream(cx) {
            Poll::Ready(Ok(s)) => Pin::new(s).poll_read(cx, buf),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for TlsIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut().stream(cx) {
            Poll::Ready(Ok(s)) => Pin::new(s).poll_write(cx, buf),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut().stream(cx) {
            Poll::Ready(Ok(s)) => Pin::new(s).poll_write_vectored(cx, bufs),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut().stream(cx) {
            Poll::Ready(Ok(s)) => Pin::new(s).poll_flush(cx),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match &mut this.state {
            State::Ready(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            // Nothing was said over TLS: closing the socket is all there is to do.
            State::Handshake(_) | State::Failed => Poll::Ready(Ok(())),
        }
    }
}

impl Connected<axum::serve::IncomingStream<'_, TlsListener>> for Conn {
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Self {
        stream.io().conn.clone()
    }
}
