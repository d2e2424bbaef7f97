//! PRELOGIN (MS-TDS 2.2.6.5): a table of options, each `token u8, offset u16 BE, length u16
//! BE`, ended by 0xFF, then the option data at those offsets.
//!
//! | token | option | our answer |
//! |---|---|---|
//! | 0 | VERSION | 16.0.1000.0 (SQL Server 2022) |
//! | 1 | ENCRYPTION | NOT_SUP (2): no TLS yet |
//! | 2 | INSTOPT | 0 |
//! | 3 | THREADID | empty |
//! | 4 | MARS | 0 |
//!
//! A client may leave options out (JDBC sends only VERSION, ENCRYPTION and TRACEID).

#![allow(clippy::big_endian_bytes, reason = "PRELOGIN offsets and lengths are big-endian")]

use crate::{ProtocolError, malformed};

pub const VERSION: u8 = 0;
pub const ENCRYPTION: u8 = 1;
pub const INSTOPT: u8 = 2;
pub const THREADID: u8 = 3;
pub const MARS: u8 = 4;
pub const TERMINATOR: u8 = 0xFF;
pub const ENCRYPT_OFF: u8 = 0;
pub const ENCRYPT_ON: u8 = 1;
pub const ENCRYPT_NOT_SUP: u8 = 2;
pub const ENCRYPT_REQ: u8 = 3;

/// What a client's PRELOGIN asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prelogin {
    pub encryption: Option<u8>,
    pub mars: Option<u8>,
}

/// Decodes a client PRELOGIN: the option table must lie inside the message.
pub fn decode(payload: &[u8]) -> Result<Prelogin, ProtocolError> {
    let mut found = Prelogin::default();
    let mut at = 0;
    loop {
        let token = *payload.get(at).ok_or_else(|| malformed("PRELOGIN"))?;
        if token == TERMINATOR {
            return Ok(found);
        }
        let entry = payload.get(at + 1..at + 5).ok_or_else(|| malformed("PRELOGIN"))?;
        let offset = usize::from(u16::from_be_bytes([entry[0], entry[1]]));
        let length = usize::from(u16::from_be_bytes([entry[2], entry[3]]));
        let data =
            payload.get(offset..offset + length).ok_or_else(|| malformed("PRELOGIN option"))?;
        match token {
            ENCRYPTION => found.encryption = data.first().copied(),
            MARS => found.mars = data.first().copied(),
            _ => {}
        }
        at += 5;
    }
}

/// The server's PRELOGIN answer.
pub fn encode_response(encryption: u8) -> Vec<u8> {
    let options: [(u8, Vec<u8>); 5] = [
        (VERSION, vec![16, 0, 0x03, 0xE8, 0, 0]),
        (ENCRYPTION, vec![encryption]),
        (INSTOPT, vec![0]),
        (THREADID, Vec::new()),
        (MARS, vec![0]),
    ];
    let table_len = options.len() * 5 + 1;
    let mut table = Vec::with_capacity(table_len);
    let mut data = Vec::new();
    for (token, value) in &options {
        table.push(*token);
        table.extend_from_slice(&((table_len + data.len()) as u16).to_be_bytes());
        table.extend_from_slice(&(value.len() as u16).to_be_bytes());
        data.extend_from_slice(value);
    }
    table.push(TERMINATOR);
    table.extend_from_slice(&data);
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_response_decodes_and_junk_is_refused() {
        let response = encode_response(ENCRYPT_NOT_SUP);
        assert_eq!(decode(&response).unwrap(), Prelogin { encryption: Some(2), mars: Some(0) });
        assert!(decode(&[]).is_err());
        assert!(decode(&[1, 0, 200, 0, 1, 0xFF]).is_err(), "an offset past the end");
        assert_eq!(decode(&[0xFF]).unwrap(), Prelogin::default(), "no options at all");
    }
}
