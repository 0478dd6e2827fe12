//! Query parameters: every endpoint lists the names it accepts; anything else is 422/4013.
//! Lists may be comma separated or repeated (`fylke=3,4` or `fylke=3&fylke=4`).
//! A parameter with an empty name (`&=True`, which LtGlahn's nvdbapi-V2 sends on every object
//! list request) is ignored, as the v2 service ignored it.

use std::borrow::Cow;

use super::error::{ApiError, ApiResult};

/// Parameters accepted everywhere (also documented on every operation, `api::openapi`).
pub(crate) const COMMON: &[&str] = &["pretty"];

/// The parameters of one request; names and values borrow from the query string unless they
/// had to be decoded.
#[derive(Debug, Default, Clone)]
pub struct Params<'q> {
    pairs: Vec<(Cow<'q, str>, Cow<'q, str>)>,
}

/// The name-value pairs of a query string as `form_urlencoded::parse` reads them, in one pass
/// over its bytes: a pair without `%` or `+` is borrowed as it is; only such pairs are decoded
/// (the split on `&`, the scan for escapes and the split on `=` were three passes).
fn pairs(query: &str) -> Vec<(Cow<'_, str>, Cow<'_, str>)> {
    let bytes = query.as_bytes();
    let mut out = Vec::with_capacity(8);
    let mut start = 0;
    while start <= bytes.len() {
        let (mut end, mut eq, mut encoded) = (start, None, false);
        while end < bytes.len() && bytes[end] != b'&' {
            match bytes[end] {
                b'=' if eq.is_none() => eq = Some(end),
                b'%' | b'+' => encoded = true,
                _ => {}
            }
            end += 1;
        }
        if end > start {
            if encoded {
                out.extend(form_urlencoded::parse(&bytes[start..end]).next());
            } else {
                // `&` and `=` are ASCII: the slices are on character boundaries
                let (k, v) = match eq {
                    Some(i) => (&query[start..i], &query[i + 1..end]),
                    None => (&query[start..end], ""),
                };
                out.push((Cow::Borrowed(k), Cow::Borrowed(v)));
            }
        }
        start = end + 1;
    }
    out
}

#[cold]
fn given_twice(name: &str) -> ApiError {
    ApiError::bad(4014, format!("Parameteren {name} kan bare angis én gang"))
}

impl<'q> Params<'q> {
    pub fn parse(query: Option<&'q str>, allowed: &[&str]) -> ApiResult<Params<'q>> {
        let mut pairs = pairs(query.unwrap_or(""));
        pairs.retain(|(k, _)| !k.is_empty());
        for (k, _) in &pairs {
            if !allowed.contains(&k.as_ref()) && !COMMON.contains(&k.as_ref()) {
                return Err(ApiError::unknown_parameter(k));
            }
        }
        Ok(Params { pairs })
    }

    pub fn has(&self, name: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == name)
    }

    /// A single-valued parameter; given twice is 422/4014.
    pub fn one(&self, name: &str) -> ApiResult<Option<&str>> {
        // one plain loop: the hot answers ask for about ten names per request
        let mut found = None;
        for (k, v) in &self.pairs {
            if k.as_ref() == name {
                if found.is_some() {
                    return Err(given_twice(name));
                }
                found = Some(v.as_ref());
            }
        }
        Ok(found)
    }

    /// Every raw value of a parameter (repeats kept, commas not split): for filters whose
    /// syntax contains commas (`egenskap`, `overlapp`).
    pub fn raw(&self, name: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_ref())
            .collect()
    }

    /// All values of a list parameter, comma lists and repeats flattened, empty items dropped.
    pub fn list(&self, name: &str) -> Vec<String> {
        if !self.has(name) {
            return Vec::new(); // the usual case, without the iterator's set-up
        }
        self.items(name).map(str::to_string).collect()
    }

    /// [`Params::list`] without copying the items.
    pub fn items<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.pairs
            .iter()
            .filter(move |(k, _)| k == name)
            .flat_map(|(_, v)| v.split(',').map(str::trim))
            .filter(|s| !s.is_empty())
    }

    pub fn int_list(&self, name: &str) -> ApiResult<Vec<i64>> {
        if !self.has(name) {
            return Ok(Vec::new());
        }
        self.items(name)
            .map(|s| {
                s.parse::<i64>().map_err(|_| {
                    ApiError::bad(4003, format!("Ugyldig heltallsliste i {name}: '{s}'"))
                })
            })
            .collect()
    }

    pub fn int(&self, name: &str) -> ApiResult<Option<i64>> {
        self.one(name)?
            .map(|s| {
                s.trim()
                    .parse::<i64>()
                    .map_err(|_| ApiError::bad(4002, format!("Ugyldig heltall i {name}: '{s}'")))
            })
            .transpose()
    }

    pub fn bool(&self, name: &str) -> ApiResult<Option<bool>> {
        self.one(name)?
            .map(|s| match s.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(ApiError::bad(
                    4008,
                    format!("Ugyldig boolsk verdi i {name}: '{s}'"),
                )),
            })
            .transpose()
    }

    /// `srid`, default 32633.
    pub fn srid(&self) -> ApiResult<crate::geo::srid::Srid> {
        Ok(self
            .one("srid")?
            .map(crate::geo::srid::Srid::parse)
            .transpose()?
            .unwrap_or_default())
    }

    /// `inkluder`-style list checked against the allowed words.
    pub fn words(&self, name: &str, allowed: &[&str]) -> ApiResult<Vec<String>> {
        let words = self.list(name);
        for w in &words {
            if !allowed.contains(&w.as_str()) {
                return Err(ApiError::bad(
                    4006,
                    format!(
                        "Ugyldig verdi i {name}: '{w}'. Gyldige verdier: {}",
                        allowed.join(", ")
                    ),
                ));
            }
        }
        Ok(words)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The pairs are what `form_urlencoded` (the url crate's parser) reads from the query.
        #[test]
        fn pairs_equal_the_form_urlencoded_parse(q in "[a-zæøå=&%+0-9A-F;,.-]{0,60}") {
            let ours: Vec<(String, String)> = super::pairs(&q)
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            let theirs: Vec<(String, String)> = form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            prop_assert_eq!(ours, theirs);
        }
    }

    use super::*;

    #[test]
    fn empty_names_are_ignored_and_unknown_names_refused() {
        // nvdbapi-V2 nvdbFagdata: respons = {'inkluder': ['alle'], 'geometritoleranse': None, '': True}
        let p = Params::parse(
            Some("kommune=5001&inkluder=alle&=True&antall=1000"),
            &["kommune", "inkluder", "antall"],
        )
        .expect("the empty name is ignored");
        assert_eq!(p.list("inkluder"), ["alle"]);
        assert!(!p.has(""));
        assert_eq!(p.int("antall").unwrap(), Some(1000));
        for q in ["=", "=True&=False", "&&=x&"] {
            assert!(Params::parse(Some(q), &[]).is_ok(), "{q}");
        }
        let e = Params::parse(Some("=True&vegvdeling=1"), &["kommune"]).unwrap_err();
        assert_eq!(e.code, 4013);
        assert!(e.message.contains("vegvdeling"), "{}", e.message);
    }
}
