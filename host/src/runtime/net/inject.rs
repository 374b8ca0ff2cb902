//! The secrets' headers for one outbound request: every `inject` rule of the
//! plugin whose host is the request's host and port (by the name the request
//! was made to, after the grant and address checks) sets its header, replacing
//! whatever the guest set under that name. A secret that cannot be read fails
//! the request and marks the call `missing_secret`.

use super::super::secrets::CallSecrets;
use super::policy::Target;
use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};
use wasmtime_wasi_http::Error as HttpError;

/// Sets the headers of the secrets declared for `target` in `headers`.
pub(super) async fn inject(
    target: &Target,
    headers: &mut HeaderMap,
    secrets: &CallSecrets,
) -> Result<(), HttpError> {
    let default_port = if target.tls { 443 } else { 80 };
    for injection in secrets
        .needs()
        .injections(&target.host, target.port, default_port)
    {
        let denied = || HttpError::InternalError(Some(format!("the secret {} is missing", injection.name)));
        let Some(secret) = secrets.get(&injection.name).await else {
            return Err(denied());
        };
        let Ok(mut value) = HeaderValue::from_str(&injection.rule.value(secret.expose())) else {
            secrets.missing(
                &injection.name,
                "its value has characters a header cannot carry".into(),
            );
            return Err(denied());
        };
        value.set_sensitive(true);
        let name = HeaderName::from_bytes(injection.rule.header.as_bytes())
            .expect("the manifest checked the header name");
        // `insert` drops every value the guest set under that name.
        headers.insert(name, value);
    }
    Ok(())
}
