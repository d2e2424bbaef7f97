//! TDS packets (MS-TDS 2.2.3): an 8-byte header, then up to (packet size - 8) bytes of a
//! message. A message is one or more packets of one type; the last has status EOM.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | type (0x01 SQL_BATCH, 0x03 RPC, 0x04 tabular result, 0x06 ATTENTION, 0x0E TRANSACTION_MANAGER, 0x10 LOGIN7, 0x12 PRELOGIN) |
//! | 1 | 1 | status (0x01 EOM) |
//! | 2 | 2 | length of the packet, header included, big-endian |
//! | 4 | 2 | SPID, big-endian |
//! | 6 | 1 | packet id (wraps) |
//! | 7 | 1 | window (0) |

#![allow(clippy::big_endian_bytes, reason = "TDS packet headers are big-endian")]

use crate::ProtocolError;
use std::io::{Read, Write};

pub const HEADER_LEN: usize = 8;
pub const SQL_BATCH: u8 = 0x01;
pub const RPC: u8 = 0x03;
pub const TABULAR_RESULT: u8 = 0x04;
pub const ATTENTION: u8 = 0x06;
pub const TRANSACTION_MANAGER: u8 = 0x0E;
pub const LOGIN7: u8 = 0x10;
pub const PRELOGIN: u8 = 0x12;
pub const STATUS_EOM: u8 = 0x01;
/// Packet sizes a client may ask for (MS-TDS: 512 to 32,767).
pub const MIN_PACKET_SIZE: usize = 512;
pub const MAX_PACKET_SIZE: usize = 32_767;
/// The packet size before LOGIN7 negotiates one.
pub const DEFAULT_PACKET_SIZE: usize = 4096;

/// ALL_HEADERS as clients send them before a batch, an RPC or a transaction-manager
/// request: the total length (u32, itself included), then one transaction-descriptor header
/// (length 18, type 2, descriptor 0, one outstanding request).
pub const ALL_HEADERS: [u8; 22] =
    [22, 0, 0, 0, 18, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];

/// The length ALL_HEADERS say they take (the first u32 of a request), if there are 4 bytes.
pub fn all_headers_len(payload: &[u8]) -> Option<usize> {
    Some(u32::from_le_bytes(payload.get(..4)?.try_into().ok()?) as usize)
}

/// The request after its ALL_HEADERS; None if their length is under 4 or past the end.
pub fn after_all_headers(payload: &[u8]) -> Option<&[u8]> {
    let len = all_headers_len(payload)?;
    if len < 4 { None } else { payload.get(len..) }
}

/// A parsed packet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub packet_type: u8,
    pub status: u8,
    pub length: usize,
}

/// Decodes a header; the length must cover the header and fit `max_packet`.
pub fn decode_header(bytes: &[u8; HEADER_LEN], max_packet: usize) -> Result<Header, ProtocolError> {
    let length = usize::from(u16::from_be_bytes([bytes[2], bytes[3]]));
    if length < HEADER_LEN || length > max_packet {
        return Err(ProtocolError(format!("packet length {length} outside 8..={max_packet}")));
    }
    Ok(Header { packet_type: bytes[0], status: bytes[1], length })
}

/// Reads one message: its type and payload, gathered from packets until EOM. A payload
/// longer than `max_message` bytes, a packet of another type in the middle, or a short read
/// is an error. None at a clean end of stream before a message starts.
pub fn read_message(
    stream: &mut impl Read,
    max_packet: usize,
    max_message: usize,
) -> Result<Option<(u8, Vec<u8>)>, ProtocolError> {
    let message = read_message_whole(stream, max_packet, max_message)?;
    Ok(message.map(|m| (m.packet_type, m.payload)))
}

/// A message as [`read_message_whole`] reads it.
pub struct Message {
    pub packet_type: u8,
    pub payload: Vec<u8>,
    /// How many packets it came in.
    pub packets: u64,
    /// The SPID field of its last packet's header.
    pub spid: u16,
}

/// [`read_message`], with the number of packets the message came in and their SPID.
pub fn read_message_whole(
    stream: &mut impl Read,
    max_packet: usize,
    max_message: usize,
) -> Result<Option<Message>, ProtocolError> {
    let mut payload = Vec::new();
    let mut message_type = None;
    let mut packets = 0;
    loop {
        let mut header_bytes = [0u8; HEADER_LEN];
        match read_exact_or_eof(stream, &mut header_bytes)? {
            false if message_type.is_none() => return Ok(None),
            false => return Err(ProtocolError("the stream ended inside a message".into())),
            true => {}
        }
        let header = decode_header(&header_bytes, max_packet)?;
        if *message_type.get_or_insert(header.packet_type) != header.packet_type {
            return Err(ProtocolError("packets of two types in one message".into()));
        }
        let body_len = header.length - HEADER_LEN;
        if payload.len() + body_len > max_message {
            return Err(ProtocolError(format!("a message longer than {max_message} bytes")));
        }
        let start = payload.len();
        payload.resize(start + body_len, 0);
        if !read_exact_or_eof(stream, &mut payload[start..])? {
            return Err(ProtocolError("the stream ended inside a packet".into()));
        }
        packets += 1;
        if header.status & STATUS_EOM != 0 {
            let spid = u16::from_be_bytes([header_bytes[4], header_bytes[5]]);
            let packet_type = header.packet_type;
            return Ok(Some(Message { packet_type, payload, packets, spid }));
        }
    }
}

/// Fills `buf`; false if the stream ended before the first byte.
fn read_exact_or_eof(stream: &mut impl Read, buf: &mut [u8]) -> Result<bool, ProtocolError> {
    let mut filled = 0;
    while filled < buf.len() {
        match stream.read(&mut buf[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => return Err(ProtocolError("the stream ended inside a packet".into())),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ProtocolError(format!("read: {e}"))),
        }
    }
    Ok(true)
}

/// How many packets [`encode_message`] splits a payload of `payload_len` bytes into.
pub fn packets_for(payload_len: usize, packet_size: usize) -> u64 {
    let body = packet_size.clamp(MIN_PACKET_SIZE, MAX_PACKET_SIZE) - HEADER_LEN;
    payload_len.div_ceil(body).max(1) as u64
}

/// Splits a message into packets of at most `packet_size` bytes.
pub fn encode_message(packet_type: u8, payload: &[u8], packet_size: usize, spid: u16) -> Vec<u8> {
    let body = packet_size.clamp(MIN_PACKET_SIZE, MAX_PACKET_SIZE) - HEADER_LEN;
    let mut out = Vec::with_capacity(payload.len() + HEADER_LEN * (payload.len() / body + 1));
    let chunks: Vec<&[u8]> =
        if payload.is_empty() { vec![&[][..]] } else { payload.chunks(body).collect() };
    let last = chunks.len() - 1;
    for (id, chunk) in chunks.into_iter().enumerate() {
        out.push(packet_type);
        out.push(if id == last { STATUS_EOM } else { 0 });
        out.extend_from_slice(&((chunk.len() + HEADER_LEN) as u16).to_be_bytes());
        out.extend_from_slice(&spid.to_be_bytes());
        out.push((id + 1) as u8);
        out.push(0);
        out.extend_from_slice(chunk);
    }
    out
}

/// Writes a message as packets.
pub fn write_message(
    stream: &mut impl Write,
    packet_type: u8,
    payload: &[u8],
    packet_size: usize,
    spid: u16,
) -> std::io::Result<()> {
    stream.write_all(&encode_message(packet_type, payload, packet_size, spid))?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_splits_into_packets_and_gathers_back() {
        let payload: Vec<u8> = (0..2000u32).map(|n| n as u8).collect();
        let bytes = encode_message(TABULAR_RESULT, &payload, 512, 51);
        assert_eq!(
            bytes.len(),
            payload.len() + 8 * 4,
            "2,000 bytes in four packets of at most 504"
        );
        assert_eq!((packets_for(2000, 512), packets_for(0, 512), packets_for(504, 512)), (4, 1, 1));
        let message = read_message_whole(&mut &bytes[..], 512, 1 << 20).unwrap().unwrap();
        assert_eq!(
            (message.packet_type, message.payload, message.packets, message.spid),
            (TABULAR_RESULT, payload, 4, 51)
        );
    }

    #[test]
    fn bad_lengths_truncation_and_oversize_are_errors() {
        let mut short = encode_message(SQL_BATCH, b"abcdef", 4096, 0);
        short.truncate(10);
        assert!(read_message(&mut &short[..], 4096, 1 << 20).is_err());
        let mut bad = encode_message(SQL_BATCH, b"x", 4096, 0);
        bad[2] = 0;
        bad[3] = 4;
        assert!(read_message(&mut &bad[..], 4096, 1 << 20).is_err());
        let big = encode_message(SQL_BATCH, &[0u8; 3000], 512, 0);
        assert!(read_message(&mut &big[..], 512, 1000).is_err());
        assert_eq!(read_message(&mut &[][..], 4096, 10).unwrap(), None);
    }
}
