//! A small blocking TDS client: PRELOGIN without encryption, LOGIN7 with SQL authentication,
//! SQL batches, and a decoder of the response tokens this server sends (the types of
//! [`crate::token::WireType`]), turned back into the T-SQL layer's outputs. It is what
//! `extentdb shell -S host,port` and the TDS benchmarks use; other servers' replies with
//! types it does not know are a protocol error.

use crate::packet::{self, DEFAULT_PACKET_SIZE, MAX_PACKET_SIZE};
use crate::{ProtocolError, from_utf16, login, prelogin, token};
use engine::SqlError;
use engine::record::Value;
use std::net::TcpStream;
use tsql::server::{Output, ResultSet};

/// A connection to a TDS server.
pub struct Client {
    stream: TcpStream,
    /// Reads of the same socket, buffered: a small reply takes one read, not two.
    reader: std::io::BufReader<TcpStream>,
    packet_size: usize,
    /// The database the server last reported (ENVCHANGE 1).
    pub database: String,
    /// The connection failed; no more batches.
    closed: bool,
    /// The last reply held a DONE with DONE_ATTN (the server acknowledged an ATTENTION).
    pub attention_acknowledged: bool,
    /// The SPID field of the last message's packet header (the server's session id for this
    /// connection once the login is answered).
    pub server_spid: u16,
}

fn protocol(error: impl std::fmt::Display) -> ProtocolError {
    ProtocolError(error.to_string())
}

/// The client library's name as LOGIN7 gives it (sys.dm_exec_sessions.client_interface_name).
pub const INTERFACE_NAME: &str = "extentdb-tds";

/// This machine's host name as LOGIN7 gives it (Linux's; empty elsewhere).
fn local_host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
}

impl Client {
    /// Connects and logs in; a refused login is its ERROR (18456 ...) as an `Err` text.
    pub fn connect(
        address: &str,
        user: &str,
        password: &str,
        database: &str,
    ) -> Result<Client, String> {
        Client::connect_with_packet_size(address, user, password, database, DEFAULT_PACKET_SIZE)
    }

    /// The packet size the server granted at login.
    pub fn packet_size(&self) -> usize {
        self.packet_size
    }

    /// Connects asking for `packet_size`-byte packets (LOGIN7); the size the server grants
    /// (ENVCHANGE 4) is the one the client then sends in.
    pub fn connect_with_packet_size(
        address: &str,
        user: &str,
        password: &str,
        database: &str,
        packet_size: usize,
    ) -> Result<Client, String> {
        let stream = TcpStream::connect(address).map_err(|e| format!("{address}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let reader = std::io::BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
        let mut client = Client {
            stream,
            reader,
            packet_size: DEFAULT_PACKET_SIZE,
            database: String::new(),
            closed: false,
            attention_acknowledged: false,
            server_spid: 0,
        };
        client
            .send(packet::PRELOGIN, &prelogin::encode_response(prelogin::ENCRYPT_NOT_SUP))
            .map_err(|e| e.0)?;
        client.receive().map_err(|e| e.0)?;
        let login = login::Login7 {
            tds_version: 0x7400_0004,
            packet_size: packet_size as u32,
            client_pid: std::process::id(),
            host_name: local_host_name(),
            user_name: user.into(),
            password: password.into(),
            app_name: "extentdb".into(),
            interface_name: INTERFACE_NAME.into(),
            database: database.into(),
        };
        client.send(packet::LOGIN7, &login::encode(&login)).map_err(|e| e.0)?;
        let outputs = client.read_reply().map_err(|e| e.0)?;
        for output in outputs {
            if let Output::Error { error, .. } = output {
                return Err(format!(
                    "Msg {}, Level {}, State {}\n{}",
                    error.number, error.severity, error.state, error.message
                ));
            }
        }
        Ok(client)
    }

    fn send(&mut self, kind: u8, payload: &[u8]) -> Result<(), ProtocolError> {
        packet::write_message(&mut self.stream, kind, payload, self.packet_size, 0)
            .map_err(protocol)
    }

    fn receive(&mut self) -> Result<Vec<u8>, ProtocolError> {
        match packet::read_message_whole(&mut self.reader, MAX_PACKET_SIZE, 1 << 30)? {
            Some(message) => {
                self.server_spid = message.spid;
                Ok(message.payload)
            }
            None => Err(ProtocolError("the server closed the connection".into())),
        }
    }

    /// Sends a batch and, `delay` later, an ATTENTION; returns the reply's outputs
    /// ([`Client::attention_acknowledged`] says whether DONE_ATTN came).
    pub fn batch_then_attention(
        &mut self,
        sql: &str,
        delay: std::time::Duration,
    ) -> Result<Vec<Output>, ProtocolError> {
        self.send(packet::SQL_BATCH, &batch_payload(sql))?;
        std::thread::sleep(delay);
        self.send(packet::ATTENTION, &[])?;
        // The batch's reply, then (unless it carried it) the ATTENTION's own DONE_ATTN: a
        // client reads until DONE_ATTN.
        let outputs = self.read_reply()?;
        if !self.attention_acknowledged {
            let after = self.read_reply()?;
            if !after.is_empty() || !self.attention_acknowledged {
                return Err(protocol(format!("expected DONE_ATTN, got {after:?}")));
            }
        }
        Ok(outputs)
    }

    /// Runs a batch; its outputs in order (result sets, row counts, messages, errors).
    pub fn batch(&mut self, sql: &str) -> Result<Vec<Output>, ProtocolError> {
        self.send(packet::SQL_BATCH, &batch_payload(sql))?;
        self.read_reply()
    }

    /// Reads one reply message and decodes its tokens.
    fn read_reply(&mut self) -> Result<Vec<Output>, ProtocolError> {
        let payload = self.receive()?;
        self.attention_acknowledged = false;
        let mut decoder = Decoder { bytes: &payload, at: 0, columns: Vec::new() };
        let mut outputs = Vec::new();
        let mut rows: Option<ResultSet> = None;
        while decoder.at < payload.len() {
            let kind = decoder.u8()?;
            match kind {
                token::COLMETADATA => {
                    if let Some(set) = rows.take() {
                        outputs.push(Output::Rows(set));
                    }
                    let names = decoder.col_metadata()?;
                    rows = Some(ResultSet { columns: names, rows: Vec::new(), types: Vec::new() });
                }
                token::ROW => {
                    let row = decoder.row()?;
                    rows.as_mut().ok_or_else(|| protocol("ROW before COLMETADATA"))?.rows.push(row);
                }
                token::DONE | token::DONEPROC | token::DONEINPROC => {
                    let status = decoder.u16()?;
                    decoder.u16()?;
                    let count = decoder.u64()?;
                    self.attention_acknowledged |= status & token::DONE_ATTN != 0;
                    if let Some(set) = rows.take() {
                        outputs.push(Output::Rows(set));
                    }
                    if status & token::DONE_COUNT != 0 {
                        outputs.push(Output::RowCount(count));
                    }
                }
                token::ERROR | token::INFO => outputs.push(decoder.message(kind)?),
                token::ENVCHANGE => match decoder.env_change()? {
                    Some((token::ENV_DATABASE, database)) => self.database = database,
                    Some((token::ENV_PACKET_SIZE, size)) => {
                        self.packet_size = size.parse().map_err(protocol)?;
                    }
                    _ => {}
                },
                token::RETURNSTATUS => {
                    decoder.take(4)?;
                }
                token::LOGINACK | 0xAE => {
                    let len = usize::from(decoder.u16()?);
                    decoder.take(len)?;
                }
                other => return Err(ProtocolError(format!("unknown token {other:#04x}"))),
            }
        }
        if let Some(set) = rows.take() {
            outputs.push(Output::Rows(set));
        }
        Ok(outputs)
    }
}

/// A SQL_BATCH message: ALL_HEADERS (a transaction descriptor header) and the UTF-16 text.
fn batch_payload(sql: &str) -> Vec<u8> {
    let mut payload = packet::ALL_HEADERS.to_vec();
    payload.extend(crate::utf16(sql));
    payload
}

/// Reads tokens; `columns` are the current result set's types.
struct Decoder<'a> {
    bytes: &'a [u8],
    at: usize,
    columns: Vec<(u8, u8, u8)>,
}

impl<'a> Decoder<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtocolError> {
        let slice =
            self.bytes.get(self.at..self.at + n).ok_or_else(|| protocol("a token ends early"))?;
        self.at += n;
        Ok(slice)
    }
    fn u8(&mut self) -> Result<u8, ProtocolError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, ProtocolError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u64(&mut self) -> Result<u64, ProtocolError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn b_varchar(&mut self) -> Result<String, ProtocolError> {
        let chars = usize::from(self.u8()?);
        from_utf16(self.take(chars * 2)?).ok_or_else(|| protocol("bad UTF-16"))
    }
    fn us_varchar(&mut self) -> Result<String, ProtocolError> {
        let chars = usize::from(self.u16()?);
        from_utf16(self.take(chars * 2)?).ok_or_else(|| protocol("bad UTF-16"))
    }

    fn col_metadata(&mut self) -> Result<Vec<String>, ProtocolError> {
        let count = self.u16()?;
        self.columns.clear();
        let mut names = Vec::new();
        for _ in 0..count {
            self.take(6)?; // user type, flags
            let type_id = self.u8()?;
            let (a, b) = match type_id {
                0x26 | 0x68 | 0x6D | 0x6E | 0x24 | 0x6F => (self.u8()?, 0),
                0x6A | 0x6C => {
                    self.u8()?;
                    (self.u8()?, self.u8()?)
                }
                0xE7 | 0xA7 | 0xEF | 0xAF => {
                    let max = self.u16()?;
                    self.take(5)?;
                    (u8::from(max == 0xFFFF), 0)
                }
                0xA5 | 0xAD => {
                    self.u16()?;
                    (0, 0)
                }
                0x28 => (0, 0),
                0x29 | 0x2A => (self.u8()?, 0),
                other => {
                    return Err(ProtocolError(format!("column type {other:#04x} is not decoded")));
                }
            };
            self.columns.push((type_id, a, b));
            names.push(self.b_varchar()?);
        }
        Ok(names)
    }

    fn row(&mut self) -> Result<Vec<Value>, ProtocolError> {
        let columns = self.columns.clone();
        let mut values = Vec::with_capacity(columns.len());
        for (type_id, a, b) in columns {
            values.push(self.value(type_id, a, b)?);
        }
        Ok(values)
    }

    fn value(&mut self, type_id: u8, a: u8, b: u8) -> Result<Value, ProtocolError> {
        if type_id == 0xE7 && a == 1 {
            return self.plp_text();
        }
        if matches!(type_id, 0xE7 | 0xA7 | 0xEF | 0xAF | 0xA5 | 0xAD) {
            let len = self.u16()?;
            if len == 0xFFFF {
                return Ok(Value::Null);
            }
            let bytes = self.take(usize::from(len))?;
            return Ok(match type_id {
                0xA5 | 0xAD => Value::Bytes(bytes.to_vec()),
                0xE7 | 0xEF => {
                    Value::Text(from_utf16(bytes).ok_or_else(|| protocol("bad UTF-16"))?)
                }
                _ => Value::Text(bytes.iter().map(|c| char::from(*c)).collect()),
            });
        }
        let len = usize::from(self.u8()?);
        if len == 0 {
            return Ok(Value::Null);
        }
        let bytes = self.take(len)?;
        let le = |bytes: &[u8]| bytes.iter().rev().fold(0u64, |acc, x| (acc << 8) | u64::from(*x));
        Ok(match (type_id, len) {
            (0x26, 1) => Value::TinyInt(bytes[0]),
            (0x26, 2) => Value::SmallInt(le(bytes) as u16 as i16),
            (0x26, 4) => Value::Int(le(bytes) as u32 as i32),
            (0x26, 8) => Value::BigInt(le(bytes) as i64),
            (0x68, _) => Value::Bit(bytes[0] != 0),
            (0x6D, 4) => Value::Real(f32::from_bits(le(bytes) as u32)),
            (0x6D, 8) => Value::Float(f64::from_bits(le(bytes))),
            (0x6A | 0x6C, _) => {
                let magnitude =
                    bytes[1..].iter().rev().fold(0i128, |acc, x| (acc << 8) | i128::from(*x));
                Value::Decimal(if bytes[0] == 0 { -magnitude } else { magnitude }, b)
            }
            (0x6E, 8) => Value::Money(
                ((le(&bytes[..4]) as u32 as i32 as i64) << 32) | le(&bytes[4..]) as i64,
            ),
            (0x24, 16) => Value::Guid(bytes.try_into().expect("16 bytes")),
            (0x28, 3) => Value::Date(le(bytes) as u32),
            (0x29, _) => Value::Time(le(bytes) * 10u64.pow(u32::from(7 - a.min(7)))),
            (0x2A, _) if len > 3 => {
                let (time, date) = bytes.split_at(len - 3);
                Value::DateTime2(le(date) as u32, le(time) * 10u64.pow(u32::from(7 - a.min(7))))
            }
            (0x6F, 8) => Value::DateTime(le(&bytes[..4]) as u32 as i32, le(&bytes[4..]) as u32),
            _ => {
                return Err(ProtocolError(format!(
                    "value of type {type_id:#04x} and length {len}"
                )));
            }
        })
    }

    /// NVARCHAR(MAX) text: u64 total (all ones = NULL), u32-long chunks, an empty chunk.
    fn plp_text(&mut self) -> Result<Value, ProtocolError> {
        if self.u64()? == u64::MAX {
            return Ok(Value::Null);
        }
        let mut bytes = Vec::new();
        loop {
            let chunk = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")) as usize;
            if chunk == 0 {
                break;
            }
            bytes.extend_from_slice(self.take(chunk)?);
        }
        from_utf16(&bytes).map(Value::Text).ok_or_else(|| protocol("bad UTF-16"))
    }

    fn message(&mut self, kind: u8) -> Result<Output, ProtocolError> {
        self.u16()?;
        let number = i32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
        let state = self.u8()?;
        let class = self.u8()?;
        let text = self.us_varchar()?;
        self.b_varchar()?;
        let procedure = self.b_varchar()?;
        let line = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
        if kind == token::INFO {
            return Ok(Output::Message(text));
        }
        Ok(Output::Error {
            error: SqlError::new(number, class, state, text),
            line: u64::from(line),
            procedure: (!procedure.is_empty()).then_some(procedure),
        })
    }

    /// An ENVCHANGE with a text value (database, packet size, ...): its type and new value.
    fn env_change(&mut self) -> Result<Option<(u8, String)>, ProtocolError> {
        let len = usize::from(self.u16()?);
        let body = self.take(len)?;
        let text_types = [token::ENV_DATABASE, token::ENV_LANGUAGE, token::ENV_PACKET_SIZE];
        match body {
            [kind, chars, rest @ ..] if text_types.contains(kind) => {
                let value = rest.get(..usize::from(*chars) * 2).and_then(from_utf16);
                Ok(value.map(|v| (*kind, v)))
            }
            _ => Ok(None),
        }
    }
}

impl tsql::sqlcmd::BatchRunner for Client {
    fn execute_batch(&mut self, text: &str, out: &mut dyn FnMut(Output)) -> bool {
        match self.batch(text) {
            Ok(outputs) => {
                let mut ok = true;
                for output in outputs {
                    ok &= !matches!(output, Output::Error { .. });
                    out(output);
                }
                ok
            }
            Err(error) => {
                self.closed = true;
                out(Output::Message(format!("Sqlcmd: Error: the connection failed: {error}")));
                false
            }
        }
    }

    fn is_shut_down(&self) -> bool {
        self.closed
    }
}
