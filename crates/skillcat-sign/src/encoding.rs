//! Strict base64 (standard alphabet, padded, canonical) and the small text helpers of the minisign formats.

pub(super) fn base64_value(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

pub(super) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return None;
    }
    let padding = bytes.iter().rev().take_while(|&&c| c == b'=').count();
    let data = &bytes[..bytes.len() - padding];
    let expected_padding = match data.len() % 4 {
        0 => 0,
        3 => 1,
        2 => 2,
        _ => return None,
    };
    if padding != expected_padding {
        return None;
    }
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in data {
        acc = (acc << 6) | base64_value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // The bits left over are padding and must be zero, or two texts would decode alike.
    (acc == 0).then_some(out)
}

/// Decodes `text` as canonical base64 of exactly `len` bytes.
pub(super) fn decode_exact(text: &str, len: usize) -> Result<Vec<u8>, String> {
    match decode_base64(text) {
        Some(bytes) if bytes.len() == len => Ok(bytes),
        Some(bytes) => Err(format!("expected {len} bytes, found {}", bytes.len())),
        None => Err("not canonical base64".to_string()),
    }
}

/// The key id as minisign prints it: the 8 key-id bytes as a little-endian u64, in hex.
pub(super) fn key_id_hex(keynum: &[u8]) -> String {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&keynum[..8]);
    format!("{:016X}", u64::from_le_bytes(bytes))
}

/// Splits into lines ended by `\n` or `\r\n`; the last terminator is optional.
pub(super) fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find('\n') {
            Some(i) => {
                let line = &rest[..i];
                lines.push(line.strip_suffix('\r').unwrap_or(line));
                rest = &rest[i + 1..];
            }
            None => {
                lines.push(rest);
                rest = "";
            }
        }
    }
    lines
}
