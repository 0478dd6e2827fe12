//! Small helpers every layer may use: nothing here names another module of the crate.

pub mod lazy;
pub mod striped;

/// A hash map with foldhash's fast hasher (randomly seeded per map): for the indexes built at
/// load and read per request, whose keys come from the data (a request looks keys up and
/// inserts none). The standard hasher cost about as much as the rest of a look-up.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

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
    let scaled = (v * POW10[decimals as usize]).round();
    if !scaled.is_finite() || scaled.abs() >= 9.0e18 {
        let start = out.len();
        let _ = write!(out, "{v}");
        return out[start..].contains('.');
    }
    // the digits of |scaled| written once, the point put in `fraction` digits from their end
    // (the two divisions by the scale and two `itoa` calls cost a third more)
    let n = scaled as i64;
    let mut m = n.unsigned_abs();
    let mut fraction = decimals as usize;
    while fraction > 0 && m.is_multiple_of(10) {
        m /= 10;
        fraction -= 1;
    }
    if n < 0 {
        out.push('-');
    }
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(m);
    match digits.len().checked_sub(fraction) {
        _ if fraction == 0 => out.push_str(digits),
        Some(int) if int > 0 => {
            out.push_str(&digits[..int]);
            out.push('.');
            out.push_str(&digits[int..]);
        }
        // `0.05`: a zero, the point and the fraction's leading zeros in one slice
        _ => {
            out.push_str(&"0.000000000000000000"[..2 + fraction - digits.len()]);
            out.push_str(digits);
        }
    }
    fraction > 0
}

/// `text.parse::<f64>().ok()`, with plain decimals (`6994755.76`, `-12`, `.5`) of at most 15
/// digits taken the short way: their digits as an integer, divided by a power of ten. Both
/// are exact in an `f64` and the division rounds correctly, so the value is the one the full
/// parser gives (Clinger's fast path); anything else (exponents, more digits, `inf`, errors)
/// goes to the full parser. A coordinate is parsed in a fifth of the full parser's
/// instructions.
pub fn parse_f64(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    let (negative, digits) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let (mut mantissa, mut count, mut fraction, mut point) = (0u64, 0u32, 0usize, false);
    for &b in digits {
        match b {
            b'0'..=b'9' => {
                if count == 15 {
                    return text.parse().ok();
                }
                mantissa = mantissa * 10 + u64::from(b - b'0');
                count += 1;
                fraction += usize::from(point);
            }
            b'.' if !point => point = true,
            _ => return text.parse().ok(),
        }
    }
    if count == 0 {
        return text.parse().ok();
    }
    let v = mantissa as f64 / POW10[fraction];
    Some(if negative { -v } else { v })
}

/// 10⁰ … 10²²: the powers of ten an `f64` holds exactly.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

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

    /// The oracle: core's full parser, bit for bit (a NaN is compared as NaN).
    fn same_as_core(text: &str) -> Result<(), proptest::test_runner::TestCaseError> {
        let (ours, core) = (super::parse_f64(text), text.parse::<f64>().ok());
        proptest::prop_assert_eq!(
            ours.map(|v| if v.is_nan() { u64::MAX } else { v.to_bits() }),
            core.map(|v| if v.is_nan() { u64::MAX } else { v.to_bits() }),
            "{:?}",
            text
        );
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        #[test]
        fn decimals_parse_as_core_parses_them(text in "[+-]?[0-9]{0,19}(\\.[0-9]{0,19})?") {
            same_as_core(&text)?;
        }

        #[test]
        fn any_text_parses_as_core_parses_it(text in "[-+.0-9eEinfINFa]{0,12}|\\PC{0,8}") {
            same_as_core(&text)?;
        }

        #[test]
        fn written_floats_parse_back_as_core_parses_them(v in proptest::num::f64::ANY, d in 0usize..12) {
            same_as_core(&v.to_string())?;
            same_as_core(&format!("{v:.d$}"))?;
            let mut fixed = String::new();
            super::push_fixed(&mut fixed, v, d as u32);
            same_as_core(&fixed)?;
        }
    }

    #[test]
    fn plain_decimals_keep_their_value_and_bad_text_is_none() {
        for (text, v) in [
            ("6994755.76", 6994755.76),
            ("-0", -0.0),
            (".5", 0.5),
            ("5.", 5.0),
        ] {
            assert_eq!(
                super::parse_f64(text).map(f64::to_bits),
                Some(f64::to_bits(v))
            );
        }
        for bad in ["", ".", "-", "1.2.3", "1,5", " 1"] {
            assert_eq!(super::parse_f64(bad), None, "{bad:?}");
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
