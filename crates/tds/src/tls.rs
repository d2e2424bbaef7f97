//! TLS inside TDS (reference tds-clients.md A.3; rust-deps-and-style.md A.2), with rustls and
//! its ring provider.
//!
//! - The certificate: PEM files named by the configuration, else `tds_cert.pem` and
//!   `tds_key.pem` of the data directory, generated self-signed (rcgen, for `localhost` and
//!   `127.0.0.1`) at the first start that needs them. The key file is written with mode 0600.
//! - The handshake: its TLS records travel inside TDS packets of type PRELOGIN (0x12) in both
//!   directions ([`handshake`]); after it, TLS records go straight on the socket.
//! - What is encrypted: a client that sends ENCRYPT_OFF gets OFF and TLS for LOGIN7 only;
//!   ENCRYPT_ON or ENCRYPT_REQ gets ON and TLS for the whole connection; NOT_SUP stays plain.
//! - TLS 1.2 only: TDS 7.x clients expect it, and rustls' TLS 1.3 session tickets, sent after
//!   the handshake, would arrive framed wrongly (the reference's finding).

use crate::ProtocolError;
use crate::packet::{self, DEFAULT_PACKET_SIZE, MAX_PACKET_SIZE};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const CERT_FILE: &str = "tds_cert.pem";
pub const KEY_FILE: &str = "tds_key.pem";

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

/// The server's TLS configuration: from `cert` and `key` when given, else the data
/// directory's pair, generated on first use.
pub fn server_config(
    dir: &Path,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> Result<Arc<ServerConfig>, String> {
    let (cert, key): (PathBuf, PathBuf) = match (cert, key) {
        (Some(c), Some(k)) => (c.to_path_buf(), k.to_path_buf()),
        (None, None) => {
            let (c, k) = (dir.join(CERT_FILE), dir.join(KEY_FILE));
            if !c.exists() || !k.exists() {
                generate(&c, &k)?;
            }
            (c, k)
        }
        _ => return Err("TDS: give both a certificate and its key, or neither".into()),
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
        .map_err(|e| format!("{}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(&key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS12])
        .map_err(text)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(text)?;
    Ok(Arc::new(config))
}

/// A self-signed certificate for localhost and 127.0.0.1, written as PEM.
fn generate(cert: &Path, key: &Path) -> Result<(), String> {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let generated = rcgen::generate_simple_self_signed(names).map_err(text)?;
    std::fs::write(cert, generated.cert.pem()).map_err(|e| format!("{}: {e}", cert.display()))?;
    write_private(key, generated.signing_key.serialize_pem().as_bytes())
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs the server side of the handshake with its records inside PRELOGIN packets.
pub fn handshake(
    stream: &mut TcpStream,
    config: &Arc<ServerConfig>,
) -> Result<ServerConnection, ProtocolError> {
    let tls = |e: rustls::Error| ProtocolError(format!("TLS: {e}"));
    let mut connection = ServerConnection::new(config.clone()).map_err(tls)?;
    while connection.is_handshaking() {
        if connection.wants_write() {
            flush_framed(stream, &mut connection)?;
            continue;
        }
        let Some((kind, payload)) = packet::read_message(stream, MAX_PACKET_SIZE, 64 * 1024)?
        else {
            return Err(ProtocolError("the client left during the TLS handshake".into()));
        };
        if kind != packet::PRELOGIN {
            return Err(ProtocolError(format!("TLS handshake in a packet of type {kind:#04x}")));
        }
        let mut records = &payload[..];
        while !records.is_empty() {
            connection.read_tls(&mut records).map_err(|e| ProtocolError(format!("TLS: {e}")))?;
        }
        connection.process_new_packets().map_err(tls)?;
    }
    if connection.wants_write() {
        flush_framed(stream, &mut connection)?;
    }
    Ok(connection)
}

/// Sends the connection's pending TLS records inside one PRELOGIN message.
fn flush_framed(
    stream: &mut TcpStream,
    connection: &mut ServerConnection,
) -> Result<(), ProtocolError> {
    let mut records = Vec::new();
    while connection.wants_write() {
        connection.write_tls(&mut records).map_err(|e| ProtocolError(format!("TLS: {e}")))?;
    }
    packet::write_message(stream, packet::PRELOGIN, &records, DEFAULT_PACKET_SIZE, 0)
        .map_err(|e| ProtocolError(format!("write: {e}")))
}

/// A connection's byte stream: plain TCP, or TLS over it.
pub enum Transport {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<ServerConnection, TcpStream>>),
}

impl Transport {
    /// The TCP stream, with TLS dropped (after a login-only TLS exchange).
    pub fn into_plain(self) -> TcpStream {
        match self {
            Transport::Plain(stream) => stream,
            Transport::Tls(tls) => tls.sock,
        }
    }

    pub fn tcp(&self) -> &TcpStream {
        match self {
            Transport::Plain(stream) => stream,
            Transport::Tls(tls) => &tls.sock,
        }
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Transport::Plain(stream) => stream.read(buf),
            Transport::Tls(tls) => tls.read(buf),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Transport::Plain(stream) => stream.write(buf),
            Transport::Tls(tls) => tls.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Transport::Plain(stream) => stream.flush(),
            Transport::Tls(tls) => tls.flush(),
        }
    }
}
