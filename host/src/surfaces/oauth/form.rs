//! The OAuth endpoints' parameters: `application/x-www-form-urlencoded` bodies
//! and query strings (each parameter at most once, RFC 6749 §3.1), and
//! percent-encoding the parameters of a redirect back to a client.

use crate::surfaces::query;
use std::collections::BTreeMap;

/// Parameters by name.
#[derive(Debug, Default)]
pub(crate) struct Params(BTreeMap<String, String>);

/// Why the parameters cannot be read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ParamsError {
    /// A name or value is not valid percent-encoded UTF-8.
    Encoding,
    /// A parameter appears twice.
    Repeated(String),
}

impl std::fmt::Display for ParamsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamsError::Encoding => f.write_str("the parameters are not valid percent-encoded UTF-8"),
            ParamsError::Repeated(name) => write!(f, "the parameter {name} is repeated"),
        }
    }
}

impl std::error::Error for ParamsError {}

impl Params {
    /// The parameters of `text` (`a=1&b=2`); empty values count as absent.
    pub(crate) fn parse(text: &str) -> Result<Params, ParamsError> {
        let mut map = BTreeMap::new();
        for pair in text.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let k = query::decode(k).ok_or(ParamsError::Encoding)?;
            let v = query::decode(v).ok_or(ParamsError::Encoding)?;
            if v.is_empty() {
                continue;
            }
            if map.contains_key(&k) {
                return Err(ParamsError::Repeated(k));
            }
            map.insert(k, v);
        }
        Ok(Params(map))
    }

    /// The value of `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Every parameter, by name.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// `uri` with `params` appended to its query.
pub(crate) fn with_query(uri: &str, params: &[(&str, &str)]) -> String {
    let mut out = uri.to_string();
    let mut sep = if uri.contains('?') { '&' } else { '?' };
    for (k, v) in params {
        out.push(sep);
        out.push_str(k);
        out.push('=');
        out.push_str(&crate::percent::encode(v));
        sep = '&';
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_decoded_once_each() {
        let p = Params::parse("a=1&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&scope=hub%3Atools+chat&e=")
            .unwrap();
        assert_eq!(p.get("redirect_uri"), Some("http://127.0.0.1:9/cb"));
        assert_eq!(p.get("scope"), Some("hub:tools chat"));
        assert_eq!(p.get("e"), None);
        assert_eq!(
            Params::parse("a=1&a=2").unwrap_err(),
            ParamsError::Repeated("a".into())
        );
        assert_eq!(Params::parse("a=%zz").unwrap_err(), ParamsError::Encoding);
    }

    #[test]
    fn redirects_carry_encoded_parameters() {
        assert_eq!(
            with_query(
                "http://127.0.0.1:9/cb",
                &[("code", "wh_ac_x-y"), ("state", "a b&c")]
            ),
            "http://127.0.0.1:9/cb?code=wh_ac_x-y&state=a%20b%26c"
        );
        assert_eq!(
            with_query("https://a.example/cb?x=1", &[("iss", "https://h")]),
            "https://a.example/cb?x=1&iss=https%3A%2F%2Fh"
        );
    }
}
