//! Small helpers every layer may use: nothing here names another module of the crate.

/// Lower-case hexadecimal of `bytes` (SHA-256 digests in manifests, binary ids, user tokens).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_lower_case_two_digits_per_byte() {
        assert_eq!(super::hex(&[0, 0x0f, 0xab, 0xff]), "000fabff");
        assert_eq!(super::hex(&[]), "");
    }
}
