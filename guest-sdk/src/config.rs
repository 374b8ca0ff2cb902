//! Typed access to the plugin's configuration: the keys its manifest declares
//! (`[config.NAME]`, with a type and a default) with the values the operator set
//! (`[plugin.NAME] config` in the hub's TOML), read through `wasi:config/store`.
//! The hub gives a plugin only its own keys, as text; [`get_as`] parses one.
//!
//! Secrets are not configuration: a secret declared with `inject` is added by the
//! hub to requests to its declared host, and the plugin never holds it; the rare one
//! declared `reveal = true` is read with [`crate::secret::reveal`].
//!
//! Like [`crate::host`], these only work inside a component run by the hub; in a
//! native build they say so with an error.

use std::str::FromStr;

use crate::Error;

/// The value of configuration key `key`; `None` when it has neither a value nor a
/// default.
pub fn get(key: &str) -> Result<Option<String>, Error> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::wasi::config::store::get(key)
            .map_err(|e| Error::failed(format!("configuration {key}: {e:?}")))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Err(native(key))
    }
}

/// The value of `key` parsed as a `T` (`u32`, `f64`, `bool`, ...); the error names
/// the key and the text that does not parse.
pub fn get_as<T: FromStr>(key: &str) -> Result<Option<T>, Error> {
    match get(key)? {
        None => Ok(None),
        Some(text) => parse(key, &text).map(Some),
    }
}

/// Every configuration key with its value.
pub fn get_all() -> Result<Vec<(String, String)>, Error> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::wasi::config::store::get_all()
            .map_err(|e| Error::failed(format!("configuration: {e:?}")))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Err(native("*"))
    }
}

/// `text` (the value of `key`) as a `T`.
pub fn parse<T: FromStr>(key: &str, text: &str) -> Result<T, Error> {
    text.parse().map_err(|_| {
        Error::failed(format!(
            "configuration {key} = {text:?} is not a {}",
            std::any::type_name::<T>()
        ))
    })
}

#[cfg(not(target_arch = "wasm32"))]
fn native(key: &str) -> Error {
    Error::failed(format!(
        "configuration {key}: only available inside a component the hub runs (wasi:config/store)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_to_their_type_or_name_the_key() {
        assert_eq!(parse::<u32>("retries", "3").unwrap(), 3);
        assert!(parse::<bool>("verbose", "true").unwrap());
        let err = format!("{:?}", parse::<u32>("retries", "three").unwrap_err());
        assert!(err.contains("retries") && err.contains("three"), "{err}");
        assert!(format!("{:?}", get("x").unwrap_err()).contains("only available inside"));
    }
}
