//! LOGIN7 (MS-TDS 2.2.6.4): a 94-byte fixed part, then variable data that offset/length pairs
//! (little-endian u16, lengths in characters) point into. Strings are UTF-16LE; the password is
//! obfuscated (each byte: nibbles swapped, then XOR 0xA5).
//!
//! | offset | field |
//! |---|---|
//! | 0 | total length (u32) |
//! | 4 | TDS version (u32) |
//! | 8 | packet size (u32) |
//! | 16 | ClientPID (u32) |
//! | 36 | HostName offset, length |
//! | 40 | UserName offset, length |
//! | 44 | Password offset, length |
//! | 48 | AppName offset, length |
//! | 52 | ServerName offset, length |
//! | 60 | CltIntName (the client library's name) offset, length |
//! | 64 | Language offset, length |
//! | 68 | Database offset, length |
//!
//! Feature extensions (offset 56, when OptionFlags3 says so) are ignored.

use crate::{ProtocolError, from_utf16, malformed};

const FIXED_LEN: usize = 94;

/// What the server needs from a LOGIN7.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Login7 {
    pub tds_version: u32,
    pub packet_size: u32,
    /// The client's process id (sys.dm_exec_sessions.host_process_id).
    pub client_pid: u32,
    pub host_name: String,
    pub user_name: String,
    pub password: String,
    pub app_name: String,
    /// The client library's name (sys.dm_exec_sessions.client_interface_name).
    pub interface_name: String,
    pub database: String,
}

fn u16_at(bytes: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

/// A string the pair at `pair_at` points to; `obfuscated` for the password.
fn string_at(payload: &[u8], pair_at: usize, obfuscated: bool) -> Result<String, ProtocolError> {
    let offset = u16_at(payload, pair_at);
    let chars = u16_at(payload, pair_at + 2);
    let bytes =
        payload.get(offset..offset + 2 * chars).ok_or_else(|| malformed("LOGIN7 string"))?;
    if !obfuscated {
        return from_utf16(bytes).ok_or_else(|| malformed("LOGIN7 string"));
    }
    let clear: Vec<u8> = bytes.iter().map(|b| (b ^ 0xA5).rotate_left(4)).collect();
    from_utf16(&clear).ok_or_else(|| malformed("LOGIN7 password"))
}

pub fn decode(payload: &[u8]) -> Result<Login7, ProtocolError> {
    if payload.len() < FIXED_LEN {
        return Err(malformed("LOGIN7 (short)"));
    }
    let u32_at = |at: usize| {
        u32::from_le_bytes([payload[at], payload[at + 1], payload[at + 2], payload[at + 3]])
    };
    Ok(Login7 {
        tds_version: u32_at(4),
        packet_size: u32_at(8),
        client_pid: u32_at(16),
        host_name: string_at(payload, 36, false)?,
        user_name: string_at(payload, 40, false)?,
        password: string_at(payload, 44, true)?,
        app_name: string_at(payload, 48, false)?,
        interface_name: string_at(payload, 60, false)?,
        database: string_at(payload, 68, false)?,
    })
}

/// Encodes a LOGIN7 as a client would (tests and fuzz seeds).
pub fn encode(login: &Login7) -> Vec<u8> {
    let mut fixed = vec![0u8; FIXED_LEN];
    let mut data = Vec::new();
    let mut put = |fixed: &mut Vec<u8>, pair_at: usize, text: &str, obfuscate: bool| {
        let mut bytes = crate::utf16(text);
        if obfuscate {
            bytes = bytes.iter().map(|b| b.rotate_left(4) ^ 0xA5).collect();
        }
        let offset = (FIXED_LEN + data.len()) as u16;
        fixed[pair_at..pair_at + 2].copy_from_slice(&offset.to_le_bytes());
        fixed[pair_at + 2..pair_at + 4].copy_from_slice(&((bytes.len() / 2) as u16).to_le_bytes());
        data.extend_from_slice(&bytes);
    };
    put(&mut fixed, 36, &login.host_name, false);
    put(&mut fixed, 40, &login.user_name, false);
    put(&mut fixed, 44, &login.password, true);
    put(&mut fixed, 48, &login.app_name, false);
    put(&mut fixed, 60, &login.interface_name, false);
    put(&mut fixed, 68, &login.database, false);
    fixed[4..8].copy_from_slice(&login.tds_version.to_le_bytes());
    fixed[8..12].copy_from_slice(&login.packet_size.to_le_bytes());
    fixed[16..20].copy_from_slice(&login.client_pid.to_le_bytes());
    let total = (FIXED_LEN + data.len()) as u32;
    fixed[0..4].copy_from_slice(&total.to_le_bytes());
    fixed.extend_from_slice(&data);
    fixed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login7_round_trips_and_the_password_is_deobfuscated() {
        let login = Login7 {
            tds_version: 0x7400_0004,
            packet_size: 4096,
            client_pid: 4242,
            host_name: "host".into(),
            user_name: "sa".into(),
            password: "Str0ng!Passw0rd".into(),
            app_name: "test".into(),
            interface_name: "extentdb-tds".into(),
            database: "master".into(),
        };
        let bytes = encode(&login);
        assert_ne!(&bytes[bytes.len() - 60..], &crate::utf16("Str0ng!Passw0rd")[..], "obfuscated");
        assert_eq!(decode(&bytes).unwrap(), login);
    }

    #[test]
    fn short_or_out_of_range_logins_are_refused() {
        assert!(decode(&[0u8; 10]).is_err());
        let mut bytes = encode(&Login7 { user_name: "sa".into(), ..Login7::default() });
        bytes[40] = 0xFF;
        bytes[41] = 0xFF;
        assert!(decode(&bytes).is_err());
    }
}
