//! The plugin's own secrets that it must hold itself (to sign a request, say):
//! declared `reveal = true` in its manifest (`[secrets.NAME]`) and allowed by the
//! operator (`allow_reveal` in `[plugin.NAME]`), read through WIT 0.3.0's
//! `host.reveal-secret`.
//!
//! Most plugins never need this: a secret declared with `inject` is added by the
//! hub to requests to its declared host, and the plugin never holds it. The hub
//! scrubs a revealed value from everything the call returns or logs
//! (`[redacted:NAME]`) and refuses a request that carries it in its URL or headers.

use crate::Error;

/// The value of secret `name`. The error says why there is none: not declared with
/// `reveal = true`, not allowed by the operator, or unset (the call then fails with
/// `missing_secret` whatever the plugin does).
pub fn reveal(name: &str) -> Result<String, Error> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::wasmhub::plugin::host::reveal_secret(name)
            .map_err(|why| Error::failed(format!("secret {name}: {why}")))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Err(Error::failed(format!(
            "secret {name}: only available inside a component the hub runs (host.reveal-secret)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natively_the_error_names_the_secret_and_why() {
        let err = format!("{:?}", reveal("signing_key").unwrap_err());
        assert!(
            err.contains("signing_key") && err.contains("only available inside"),
            "{err}"
        );
    }
}
