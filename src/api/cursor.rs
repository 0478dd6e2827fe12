//! Opaque pagination cursors (`start`). A cursor holds the generation it was made on and the
//! last key returned. Keys (link id + position, object id) are stable across generations, so
//! paging on after a new generation is published neither skips nor repeats unchanged items.

use super::error::{ApiError, ApiResult};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cursor {
    pub generation: u64,
    pub key: u64,
    pub key2: f64,
}

impl Cursor {
    pub fn encode(&self) -> String {
        format!(
            "{:016x}{:016x}{:016x}",
            self.generation ^ 0x5a5a_5a5a,
            self.key,
            self.key2.to_bits()
        )
    }

    pub fn decode(text: &str) -> ApiResult<Cursor> {
        let bad = || ApiError::bad(4005, format!("Ugyldig start (paginering): '{text}'"));
        if text.len() != 48 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let part =
            |i: usize| u64::from_str_radix(&text[i * 16..(i + 1) * 16], 16).map_err(|_| bad());
        Ok(Cursor {
            generation: part(0)? ^ 0x5a5a_5a5a,
            key: part(1)?,
            key2: f64::from_bits(part(2)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn cursors_round_trip(g in any::<u64>(), k in any::<u64>(), k2 in 0.0f64..=1.0) {
            let c = Cursor { generation: g, key: k, key2: k2 };
            prop_assert_eq!(Cursor::decode(&c.encode()).unwrap(), c);
        }
    }

    #[test]
    fn garbage_is_rejected() {
        assert!(Cursor::decode("abc").is_err());
        assert!(Cursor::decode(&"z".repeat(48)).is_err());
    }
}
