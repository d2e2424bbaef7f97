//! The TDS 7.4 server side of extentdb (reference tds-clients.md; MS-TDS):
//!
//! - [`packet`]: the 8-byte packet header, and messages split into and gathered from packets;
//! - [`prelogin`]: the PRELOGIN exchange (VERSION, ENCRYPTION, INSTOPT, THREADID, MARS);
//! - [`login`]: the LOGIN7 decoder;
//! - [`rpc`]: the RPC decoder (procedure by ProcID or name, typed parameters, PLP values);
//! - [`token`]: the response tokens (ENVCHANGE, LOGINACK, INFO, ERROR, COLMETADATA, ROW,
//!   DONE/DONEPROC/DONEINPROC, RETURNSTATUS, RETURNVALUE) and the typed values of rows;
//! - [`tls`]: TLS inside TDS (rustls, TLS 1.2): the certificate, the handshake inside PRELOGIN
//!   packets, and the plain-or-TLS transport;
//! - [`logins`]: the sa login, its password policy and its salted hash;
//! - [`server`]: `extentdb serve`, a listener with one thread per connection that runs each
//!   connection's requests in a T-SQL session;
//! - [`client`]: a small client (the shell's `-S` mode, the benchmarks, the round-trip tests).
//!
//! The codecs do no I/O, so that each decoder can be fed any bytes (the fuzz and unit tests
//! do): a malformed message is an error value that closes its connection, never a panic.
//!
//! Deviations (also in docs/deviations.md): no MARS or bulk load; a result column's TDS type
//! is its declared type where the select list names one (a table column, a variable, a CAST),
//! else its values' type; every string is sent as NVARCHAR.

pub mod client;
pub mod login;
pub mod logins;
pub mod packet;
pub mod prelogin;
pub mod rpc;
pub mod server;
pub mod tls;
pub mod token;

/// A malformed or unsupported message: the connection that sent it is closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProtocolError {}

fn malformed(what: &str) -> ProtocolError {
    ProtocolError(format!("malformed {what}"))
}

/// UTF-16LE bytes of a string.
pub fn utf16(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// A string from UTF-16LE bytes (None if the length is odd or a surrogate is unpaired).
pub fn from_utf16(bytes: &[u8]) -> Option<String> {
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    let units: Vec<u16> = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    String::from_utf16(&units).ok()
}
