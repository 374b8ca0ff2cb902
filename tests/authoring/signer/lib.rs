//! The authoring suite's signer (Rust): `sign` reads the secret it declares with
//! `reveal = true` through the SDK (`wasmhub_guest::secret::reveal`) and answers what
//! the suite checks: the value's length and last 4 characters (what a signature
//! would depend on), and the value itself, which the hub must scrub.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wasmhub_guest::Error;

/// No input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignInput {}

/// What the key looked like.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SignOutput {
    /// Characters in the key.
    pub length: usize,
    /// Its last 4 characters.
    pub last4: String,
    /// The key itself (the hub replaces it with `[redacted:SIGNING_KEY]`).
    pub echo: String,
}

pub fn sign(_: SignInput) -> Result<SignOutput, Error> {
    let key = wasmhub_guest::secret::reveal("SIGNING_KEY")?;
    let chars: Vec<char> = key.chars().collect();
    let last4 = chars[chars.len().saturating_sub(4)..].iter().collect();
    Ok(SignOutput { length: chars.len(), last4, echo: key })
}

wasmhub_guest::export_plugin! {
    /// Read the revealed signing key.
    #[hints(read_only)]
    sign => sign,
}
