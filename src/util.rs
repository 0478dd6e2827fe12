//! Small helpers every layer may use: nothing here names another module of the crate.

/// Lower-case hexadecimal of `bytes` (SHA-256 digests in manifests, binary ids, user tokens).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Append the decimal digits of `n` (no `core::fmt` machinery: the hot answers write several
/// numbers per request).
pub fn push_int(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// Append `n` with at least two digits (`05`, `50`, `123`).
pub fn push_int_2(out: &mut String, n: u64) {
    if n < 10 {
        out.push('0');
    }
    push_int(out, n);
}

/// Append `v` in fixed point with at most `decimals` decimals (rounded half away from zero at
/// that decimal), trailing zeros and a bare point trimmed: 262000.000 → `262000`, 12.500 →
/// `12.5`. Returns whether a decimal point was written. Values that do not fit the integer
/// path (not finite, or beyond ±9·10¹⁸ once scaled) are written by `Display`. `decimals`: at
/// most 18.
pub fn push_fixed(out: &mut String, v: f64, decimals: u32) -> bool {
    use std::fmt::Write;
    let scale = 10i64.pow(decimals);
    let scaled = (v * scale as f64).round();
    if !scaled.is_finite() || scaled.abs() >= 9.0e18 {
        let start = out.len();
        let _ = write!(out, "{v}");
        return out[start..].contains('.');
    }
    let n = scaled as i64;
    if n < 0 {
        out.push('-');
    }
    let (int, mut frac) = ((n / scale).unsigned_abs(), (n % scale).unsigned_abs());
    push_int(out, int);
    if frac == 0 {
        return false;
    }
    let mut digits = decimals as usize;
    while frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    out.push('.');
    let mut buf = itoa::Buffer::new();
    let text = buf.format(frac);
    // leading zeros of the fraction (`0.05`), one slice
    out.push_str(&"000000000000000000"[..digits - text.len()]);
    out.push_str(text);
    true
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_lower_case_two_digits_per_byte() {
        assert_eq!(super::hex(&[0, 0x0f, 0xab, 0xff]), "000fabff");
        assert_eq!(super::hex(&[]), "");
    }

    fn fixed(v: f64, d: u32) -> String {
        let mut s = String::new();
        super::push_fixed(&mut s, v, d);
        s
    }

    #[test]
    fn fixed_point_text_equals_formatting_with_a_precision_then_trimming() {
        // Oracle: core's exact float formatting of the rounded value, zeros trimmed.
        let oracle = |v: f64, d: u32| {
            let scale = 10f64.powi(d as i32);
            let mut s = format!("{:.*}", d as usize, (v * scale).round() / scale);
            if s.contains('.') {
                while s.ends_with('0') {
                    s.pop();
                }
                if s.ends_with('.') {
                    s.pop();
                }
            }
            if s == "-0" {
                s = "0".into();
            }
            s
        };
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = match i % 4 {
                0 => (x % 1_000_000_000) as f64 / 1e8,
                1 => (x % 10_000_000_000) as f64 / 1e3 - 5e6,
                2 => f64::from_bits(x) % 1e7,
                _ => (x % 100_000) as f64,
            };
            if !v.is_finite() {
                continue;
            }
            for d in [3, 8] {
                assert_eq!(fixed(v, d), oracle(v, d), "{v:?} with {d} decimals");
            }
        }
        assert_eq!(fixed(262000.0, 3), "262000");
        assert_eq!(fixed(12.5, 3), "12.5");
        assert_eq!(fixed(0.000001, 8), "0.000001");
        assert_eq!(fixed(-1.25, 1), "-1.3");
        assert_eq!(fixed(f64::NAN, 3), "NaN");
    }

    #[test]
    fn the_decimal_point_reported_is_the_appended_numbers_own() {
        for (v, point) in [
            (1e30, false),
            (-1.5e183, false),
            (f64::NAN, false),
            (2.5, true),
            (7.0, false),
        ] {
            let mut out = String::from("0.5@");
            assert_eq!(
                super::push_fixed(&mut out, v, 8),
                point,
                "{v:?} after {out}"
            );
        }
    }

    #[test]
    fn integers_are_written_in_decimal() {
        for n in [0u64, 7, 10, 99, 100, u64::MAX] {
            let (mut a, mut b) = (String::new(), String::new());
            super::push_int(&mut a, n);
            super::push_int_2(&mut b, n);
            assert_eq!(a, n.to_string());
            assert_eq!(b, format!("{n:02}"));
        }
    }
}
