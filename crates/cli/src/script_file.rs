//! Reading a T-SQL script file as sqlcmd reads one (`-i`, `:r`): a byte-order mark says the
//! encoding (UTF-8, UTF-16 LE or BE, as SSMS saves scripts) and is not part of the script; a
//! file without one is UTF-8, or Windows-1252 when it is not valid UTF-8 (sqlcmd reads such a
//! file in the system's ANSI code page, 1252 on an English Windows).
//!
//! Before, a script saved by SSMS failed: its UTF-8 mark made the first statement a syntax
//! error, and a UTF-16 file was "Invalid filename".

use std::path::Path;

/// The script in `path` as text, or sqlcmd's message for a file it cannot read.
pub fn read_script(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("Sqlcmd: '{}': Invalid filename. ({e})", path.display()))?;
    Ok(decode_script(&bytes))
}

/// The text of a script's bytes (see the module header).
pub fn decode_script(bytes: &[u8]) -> String {
    if let Some((encoding, mark_len)) = encoding_rs::Encoding::for_bom(bytes) {
        let (text, _) = encoding.decode_without_bom_handling(&bytes[mark_len..]);
        return text.into_owned();
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => encoding_rs::WINDOWS_1252.decode_without_bom_handling(bytes).0.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each encoding SSMS or a Windows editor saves a script in comes back as the same text,
    /// without its byte-order mark.
    #[test]
    #[allow(clippy::big_endian_bytes, reason = "UTF-16 BE is one of the encodings under test")]
    fn a_script_reads_the_same_in_every_encoding_sqlcmd_reads() {
        let text = "SELECT N'été' AS word;\r\nGO\r\n";
        let mut utf8_marked = vec![0xEF, 0xBB, 0xBF];
        utf8_marked.extend_from_slice(text.as_bytes());
        let mut utf16_le = vec![0xFF, 0xFE];
        let mut utf16_be = vec![0xFE, 0xFF];
        for unit in text.encode_utf16() {
            utf16_le.extend_from_slice(&unit.to_le_bytes());
            utf16_be.extend_from_slice(&unit.to_be_bytes());
        }
        let windows_1252: Vec<u8> =
            text.chars().map(|c| if c == 'é' { 0xE9 } else { c as u8 }).collect();
        for bytes in [text.as_bytes().to_vec(), utf8_marked, utf16_le, utf16_be, windows_1252] {
            assert_eq!(decode_script(&bytes), text, "{bytes:02x?}");
        }
    }
}
